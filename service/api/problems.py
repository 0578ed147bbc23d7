"""The one place where exceptions become RFC 9457 problem details (`application/problem+json`)."""

import logging
import secrets

import redis
from flask import Flask, Response, g, json, request
from werkzeug.exceptions import HTTPException

from service import errors, logcontext

log = logging.getLogger(__name__)

PROBLEM_TYPE = "urn:copydesk:problem:{code}"

# (HTTP status, title) of each error code the API can answer with.
PROBLEMS = {
    "invalid_json": (400, "Invalid JSON"),
    "invalid_request": (400, "Invalid request"),
    "unauthorized": (401, "Unauthorized"),
    "project_not_found": (404, "Project not found"),
    "job_not_found": (404, "Job not found"),
    "not_found": (404, "Not found"),
    "method_not_allowed": (405, "Method not allowed"),
    "job_archived": (409, "Job archived"),
    "project_disabled": (409, "Project disabled"),
    "idempotency_conflict": (409, "Idempotency key reused"),
    "payload_too_large": (413, "Payload too large"),
    "unsupported_media_type": (415, "Unsupported media type"),
    "rate_limited": (429, "Too many requests"),
    "internal_error": (500, "Internal error"),
    "unavailable": (503, "Service unavailable"),
}

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large",
               415: "unsupported_media_type"}


def problem(code: str, detail: str, **extra) -> Response:
    """A problem+json response for one of the codes in PROBLEMS."""
    status, title = PROBLEMS[code]
    body = {"type": PROBLEM_TYPE.format(code=code), "title": title, "status": status, "detail": detail,
            "code": code, "error": detail, **extra}
    response = Response(json.dumps(body), status=status, mimetype="application/problem+json")
    if code == "unauthorized":
        response.headers["WWW-Authenticate"] = 'Bearer realm="copydesk"'
    if code == "unavailable":
        response.headers["Retry-After"] = "5"
    return response


def request_id() -> str:
    """The id of the current request: the caller's X-Request-Id if sane, else a fresh one."""
    if "request_id" not in g:
        given = request.headers.get("X-Request-Id", "")
        g.request_id = given if 0 < len(given) <= 128 and given.isprintable() else "req_" + secrets.token_hex(12)
    return g.request_id


def register(app: Flask) -> None:
    """Install the handlers that turn every failure into problem details."""

    @app.errorhandler(errors.ServiceError)
    def service_error(exc: errors.ServiceError):
        extra = {}
        if isinstance(exc, errors.InvalidRequest) and exc.field:
            extra["field"] = exc.field
        response = problem(exc.code, exc.detail, **extra)
        if isinstance(exc, errors.RateLimited):
            response.headers.update(exc.headers)
            response.headers["Retry-After"] = str(exc.retry_after)
        return response

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        code = _HTTP_CODES.get(exc.code)
        if code is None and (exc.code or 500) >= 500:
            rid = request_id()
            return problem("internal_error", f"an unexpected error occurred (request {rid})", requestId=rid)
        if code is None:
            return problem("invalid_request", exc.description)
        response = problem(code, exc.description)
        if exc.code == 405 and exc.valid_methods:
            response.headers["Allow"] = ", ".join(exc.valid_methods)
        return response

    @app.errorhandler(redis.RedisError)
    def store_down(exc: redis.RedisError):
        log.error("store unavailable: %s", exc)
        return problem("unavailable", "the job store is unreachable; try again shortly")

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        rid = request_id()
        log.exception("unhandled error in request %s", rid)
        return problem("internal_error", f"an unexpected error occurred (request {rid})", requestId=rid)

    @app.before_request
    def tag_logs() -> None:
        logcontext.set_request(request_id())

    @app.after_request
    def tag(response: Response) -> Response:
        response.headers["X-Request-Id"] = request_id()
        return response

    @app.teardown_request
    def untag_logs(_exc) -> None:
        logcontext.set_request(None)
