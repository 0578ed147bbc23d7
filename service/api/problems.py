"""The one place where exceptions become RFC 9457 problem details (`application/json` unless asked otherwise)."""

import logging
import random

import redis
from flask import Flask, Response, json, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from service import errors
from service.codes import ERRORS

log = logging.getLogger(__name__)

PROBLEM_TYPE = "urn:copydesk:problem:{code}"

# (HTTP status, title) of each error code the API can answer with (service.codes has them all).
PROBLEMS = {code: (known.status, known.title) for code, known in ERRORS.items() if known.api}

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large", 415: "unsupported_media_type"}


PROBLEM_JSON = "application/problem+json"


def problem(code: str, detail: str | None, **extra) -> Response:
    """A problem-details response for one of the codes in PROBLEMS.

    Served as `application/json`, as clients of the anchor service expect, unless the request's `Accept` prefers
    `application/problem+json`; the body is the same either way.
    """
    status, title = PROBLEMS[code]
    body = {
        "type": PROBLEM_TYPE.format(code=code),
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        "error": detail,
        **extra,
    }
    response = Response(json.dumps(body), status=status, mimetype=_problem_media_type())
    if code == "unauthorized":
        response.headers["WWW-Authenticate"] = 'Bearer realm="copydesk"'
    if code == "unavailable":
        response.headers["Retry-After"] = "5"
    return response


def _problem_media_type() -> str:
    if not request:
        return "application/json"
    # Only a named mention counts (`*/*` and `application/*` keep the anchor service's type), and only when it is
    # not ranked below plain JSON.
    named = {value.lower(): quality for value, quality in request.accept_mimetypes}
    if named.get(PROBLEM_JSON, 0) > 0 and named[PROBLEM_JSON] >= named.get("application/json", 0):
        return PROBLEM_JSON
    return "application/json"


# The WSGI environ entry that holds the request's id (bot.edge assigns it where the request enters the app).
REQUEST_ID_KEY = "copydesk.request_id"


def request_id() -> str:
    """The id of the current request: the caller's X-Request-Id if sane, else a fresh one."""
    return assign_request_id(request.environ)


def assign_request_id(environ: dict) -> str:
    """The id of the request `environ` describes, chosen once and kept in it (see request_id)."""
    known = environ.get(REQUEST_ID_KEY)
    if known is None:
        given = environ.get("HTTP_X_REQUEST_ID", "")
        # A correlation id, not a secret (the caller may choose it, every response shows it): 96 bits from the
        # process's seeded generator, reseeded in each forked worker, without secrets' system call per request.
        sane = 0 < len(given) <= 128 and given.isprintable()
        known = environ[REQUEST_ID_KEY] = given if sane else f"req_{random.getrandbits(96):024x}"
    return known


def is_outage(exc: redis.RedisError) -> bool:
    """Whether Redis failed (unreachable, loading, out of memory, read-only, ...) rather than refused a command
    Copydesk sent: a refused command (`ERR ...`, `WRONGTYPE ...`) is a bug here, a 500, never a 503 outage."""
    if isinstance(exc, redis.DataError):
        return False  # redis-py refused the arguments before sending them
    if type(exc) is not redis.ResponseError:
        return True  # connection errors, time-outs and the subclasses redis-py gives to each outage reply
    return getattr(exc, "status_code", None) != "ERR" and not str(exc).startswith("WRONGTYPE ")


def register(app: Flask) -> None:
    """Install the handlers that turn every failure into problem details."""

    @app.errorhandler(errors.ServiceError)
    def service_error(exc: errors.ServiceError):
        extra = {}
        if isinstance(exc, errors.InvalidRequest) and exc.field:
            extra["field"] = exc.field
        response = problem(exc.code, exc.detail, **extra)
        # MonthlyBudgetExceeded is a RateLimited; StreamsBusy ("unavailable") gets its Retry-After from problem().
        if isinstance(exc, errors.RateLimited):
            response.headers.update(exc.headers)
            response.headers["Retry-After"] = str(exc.retry_after)
        return response

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        code = _HTTP_CODES.get(exc.code) if exc.code is not None else None
        if code is None and (exc.code or 500) >= 500:
            rid = request_id()
            return problem("internal_error", f"an unexpected error occurred (request {rid})", requestId=rid)
        if code is None:
            return problem("invalid_request", exc.description)
        response = problem(code, exc.description)
        if isinstance(exc, MethodNotAllowed) and exc.valid_methods:
            response.headers["Allow"] = ", ".join(exc.valid_methods)
        return response

    @app.errorhandler(redis.RedisError)
    def store_down(exc: redis.RedisError):
        if not is_outage(exc):
            return unexpected(exc)
        log.error("store unavailable: %s", exc)
        return problem("unavailable", "the job store is unreachable; try again shortly")

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        rid = request_id()
        log.exception("unhandled error in request %s", rid)
        return problem("internal_error", f"an unexpected error occurred (request {rid})", requestId=rid)
