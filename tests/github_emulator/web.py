"""The emulator's Flask app: GitHub's request ids, rate-limit headers, error bodies and armed faults around
every request, a log of what was asked, and the REST and git blueprints."""

import json
import secrets
import time
from dataclasses import dataclass

from flask import Flask, Response, g, jsonify, request
from werkzeug.exceptions import HTTPException

from tests.github_emulator import (
    githttp,
    routes_app,
    routes_checks,
    routes_comments,
    routes_compare,
    routes_oauth,
    routes_pulls,
    routes_reviewers,
)
from tests.github_emulator.auth import AuthError, credentials, is_jwt
from tests.github_emulator.calls import EXTENSION, GitHubError

DOCS = "https://docs.github.com/rest"
RATE_LIMIT = 5000  # per hour, an installation's floor on GitHub
ANONYMOUS_RATE_LIMIT = 60


@dataclass
class LoggedRequest:
    """One request the emulator answered; `operation` is GitHub's operation id (None for git and unknown paths)."""

    method: str
    path: str
    query: dict
    json: object
    auth: str | None  # "jwt", "token", "basic" or None
    operation: str | None
    status: int
    headers: dict  # as sent, without Authorization


def create_app(emu) -> Flask:
    """The Flask app over a GitHubEmulator."""
    app = Flask(__name__)
    app.json.sort_keys = False
    app.extensions[EXTENSION] = emu
    for module in (
        routes_app,
        routes_pulls,
        routes_reviewers,
        routes_comments,
        routes_compare,
        routes_checks,
        routes_oauth,
        githttp,
    ):
        app.register_blueprint(module.blueprint)
    windows: dict[str, list] = {}  # credential -> [reset epoch, used]

    @app.before_request
    def identify():
        g.request_id = ":".join(secrets.token_hex(n).upper() for n in (2, 3, 4))
        kind, g.secret = credentials(request.headers.get("Authorization"))
        g.auth = "jwt" if kind == "bearer" and is_jwt(g.secret) else ("token" if kind in ("bearer", "token") else kind)
        if request.view_args is None or request.endpoint == githttp.ENDPOINT:
            return None
        token = emu.state.tokens.get(g.secret)
        answer = emu.faults.take(
            request.method, request.path, g.request_id, str(token.installation_id) if token else "unknown"
        )
        if answer is None:
            return None
        response = jsonify(answer.body)
        response.status_code = answer.status
        response.headers.update(answer.headers)
        return response

    @app.after_request
    def finish(response: Response) -> Response:
        is_git = request.endpoint == githttp.ENDPOINT
        if not is_git:
            count_rate(response)
        response.headers.setdefault("X-GitHub-Request-Id", g.get("request_id", ""))
        emu.requests.append(
            LoggedRequest(
                request.method,
                request.path,
                request.args.to_dict(),
                None if is_git else parsed_body(),
                g.get("auth"),
                operation_of(request.endpoint),
                response.status_code,
                {k: v for k, v in request.headers.items() if k.lower() != "authorization"},
            )
        )
        return response

    def count_rate(response: Response) -> None:
        key = g.get("secret") or request.remote_addr or "anonymous"
        limit = RATE_LIMIT if g.get("secret") else ANONYMOUS_RATE_LIMIT
        with emu.state.lock:
            window = windows.get(key)
            if window is None or window[0] <= time.time():
                window = windows[key] = [int(time.time()) + 3600, 0]
            window[1] += 1
            reset, used = window
        # setdefault: an armed primary rate limit has already set remaining 0 and its own reset.
        response.headers.setdefault("X-RateLimit-Limit", str(limit))
        response.headers.setdefault("X-RateLimit-Remaining", str(max(limit - used, 0)))
        response.headers.setdefault("X-RateLimit-Reset", str(reset))
        response.headers.setdefault("X-RateLimit-Used", str(used))
        response.headers.setdefault("X-RateLimit-Resource", "core")

    @app.errorhandler(GitHubError)
    def github_error(error: GitHubError):
        body = {"message": error.message, "documentation_url": DOCS, "status": str(error.status)}
        if error.errors is not None:
            body["errors"] = error.errors
        return jsonify(body), error.status

    @app.errorhandler(AuthError)
    def auth_error(error: AuthError):
        return github_error(GitHubError(error.status, error.message))

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException):
        return github_error(GitHubError(error.code or 500, "Not Found" if error.code == 404 else error.name))

    return app


def parsed_body():
    raw = request.get_data(cache=True)
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def operation_of(endpoint: str | None) -> str | None:
    """GitHub's operation id from a blueprint endpoint ("pulls.pulls/create" -> "pulls/create")."""
    name = (endpoint or "").partition(".")[2]
    return name if "/" in name else None
