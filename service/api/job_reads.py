"""`GET /v2/agent/{projectId}/job/{jobId}` answered without Flask's request machinery.

It is the request callers repeat most (they poll a job until it ends), and Flask's routing, request and response
objects cost it more than its own work does: served through Flask it did 0.76× the requests a second of a bare
Flask app reading one Redis hash; answered here, above the bare app (bench/api.py). The rules are the same
code as the Flask route's: `access.grant` checks the key and reads project and job in one round trip, the JSON
provider writes the body, and every failure is answered by the app's own error handlers. Everything else (HEAD,
other paths, paths that are not plain ASCII) goes to Flask.
"""

import re
from collections.abc import Iterable
from typing import cast

from flask import Flask

from service.api.access import grant
from service.api.json_provider import FastJSONProvider
from service.services import Services

# The Flask route's `<project_id>` and `<job_id>`: one non-empty path segment each (werkzeug's default converter).
_JOB_PATH = re.compile(r"/v2/agent/([^/]+)/job/([^/]+)")


class JobReads:
    """WSGI middleware in front of the Flask app's own WSGI callable: answers GET job, passes the rest on."""

    def __init__(self, app: Flask, services: Services) -> None:
        self._app = app
        self._next = app.wsgi_app
        self._services = services
        self._json = cast(FastJSONProvider, app.json)

    def __call__(self, environ: dict, start_response) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        found = _JOB_PATH.fullmatch(path) if environ["REQUEST_METHOD"] == "GET" and path.isascii() else None
        if found is None:
            return self._next(environ, start_response)
        try:
            granted = grant(self._services, environ.get("HTTP_AUTHORIZATION"), "GET", found[1], found[2])
        except Exception as exc:  # noqa: BLE001 - each is answered by the app's handlers, as in Flask
            return self._failure(environ, start_response, exc)
        assert granted.job is not None  # grant() was given a job id
        body = self._json.body(granted.job.to_api())
        start_response("200 OK", [("Content-Type", self._json.mimetype), ("Content-Length", str(len(body)))])
        return [body]

    def _failure(self, environ: dict, start_response, exc: Exception) -> Iterable[bytes]:
        """The response the Flask route gives when `exc` is raised in it: the same handlers, in a request
        context of their own (they read the request's Accept header and id)."""
        with self._app.request_context(environ):
            response = self._app.finalize_request(self._app.handle_user_exception(exc), from_error_handler=True)
            return response(environ, start_response)


def install(app: Flask, services: Services) -> None:
    """Put JobReads in front of `app`'s WSGI callable; middleware installed later wraps it too."""
    app.wsgi_app = JobReads(app, services)  # type: ignore[method-assign]
