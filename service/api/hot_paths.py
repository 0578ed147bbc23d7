"""The API's two busiest requests answered without Flask's request machinery: `GET /v2/agent/{projectId}/job/{jobId}`
(callers poll a job until it ends) and `POST /v2/agent/{projectId}/job` (create).

Flask's routing, request context and response objects cost them more than a bare app's whole request: GET job did
0.76× the requests a second of a bare Flask app reading one Redis hash, create 0.38× (bench/api.py). The rules
are the Flask routes' own code: `access.grant` checks the key and reads project and job in one round trip,
`create.accept` takes a create through the intake, the JSON provider writes the bodies, and every failure is
answered by the app's own error handlers in a request context made for it. Everything else goes to Flask: other
methods and paths, paths that are not plain ASCII, and creates while writes wait for Redis replicas
(COPYDESK_REDIS_MIN_REPLICAS), whose after-request hook (service/api/durable_writes.py) confirms them.
"""

import re
from collections.abc import Callable, Iterable
from typing import cast

from flask import Flask

from service.api import create
from service.api.access import grant
from service.api.json_provider import FastJSONProvider
from service.services import Services

# The Flask routes' `<project_id>` and `<job_id>`: one non-empty path segment each (werkzeug's default converter).
_JOB_PATH = re.compile(r"/v2/agent/([^/]+)/job/([^/]+)")
_CREATE_PATH = re.compile(r"/v2/agent/([^/]+)/job")

Answer = tuple[str, object, dict[str, str]]  # status line, the body's value, headers besides type and length


class HotPaths:
    """WSGI middleware in front of the Flask app's own WSGI callable: answers GET job and create, passes the rest
    on."""

    def __init__(self, app: Flask, services: Services) -> None:
        self._app = app
        self._next = app.wsgi_app
        self._services = services
        self._json = cast(FastJSONProvider, app.json)
        self._creates = services.durability.min_replicas <= 0

    def __call__(self, environ: dict, start_response) -> Iterable[bytes]:
        handler, ids = self._route(environ)
        if handler is None:
            return self._next(environ, start_response)
        try:
            status, value, headers = handler(environ, *ids)
        except Exception as exc:  # noqa: BLE001 - each is answered by the app's handlers, as in Flask
            return self._failure(environ, start_response, exc)
        body = self._json.body(value)
        start_response(
            status, [("Content-Type", self._json.mimetype), ("Content-Length", str(len(body))), *headers.items()]
        )
        return [body]

    def _route(self, environ: dict) -> tuple[Callable[..., Answer] | None, tuple[str, ...]]:
        path, method = environ.get("PATH_INFO", ""), environ["REQUEST_METHOD"]
        if method == "GET" and path.isascii() and (found := _JOB_PATH.fullmatch(path)):
            return self._get_job, found.groups()
        if method == "POST" and self._creates and path.isascii() and (found := _CREATE_PATH.fullmatch(path)):
            return self._create, found.groups()
        return None, ()

    def _get_job(self, environ: dict, project_id: str, job_id: str) -> Answer:
        granted = grant(self._services, environ.get("HTTP_AUTHORIZATION"), "GET", project_id, job_id)
        assert granted.job is not None  # grant() was given a job id
        return "200 OK", granted.job.to_api(), {}

    def _create(self, environ: dict, project_id: str) -> Answer:
        request = self._app.request_class(environ)
        request.max_content_length = self._app.config["MAX_CONTENT_LENGTH"]  # Flask's would read it from the app
        accepted = create.accept(self._services, request, project_id)
        return "201 CREATED", accepted.job.to_api(), create.created_headers(accepted)

    def _failure(self, environ: dict, start_response, exc: Exception) -> Iterable[bytes]:
        """The response the Flask route gives when `exc` is raised in it: the same handlers, in a request
        context of their own (they read the request's Accept header and id)."""
        with self._app.request_context(environ):
            response = self._app.finalize_request(self._app.handle_user_exception(exc), from_error_handler=True)
            return response(environ, start_response)


def install(app: Flask, services: Services) -> None:
    """Put HotPaths in front of `app`'s WSGI callable; middleware installed later wraps it too."""
    app.wsgi_app = HotPaths(app, services)  # type: ignore[method-assign]
