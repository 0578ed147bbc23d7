"""What every REST view needs: the emulator, who is calling, GitHub's errors, request bodies and pagination."""

import json
import math
from urllib.parse import urlencode

from flask import current_app, g, jsonify, request

from tests.github_emulator.auth import AuthError, can_see, installation_token, verify_app_jwt
from tests.github_emulator.state import Pull, Repo, Token

EXTENSION = "github_emulator"


class GitHubError(Exception):
    """An error answer in GitHub's shape: `{"message", "documentation_url", "status"[, "errors"]}`."""

    def __init__(self, status: int, message: str, errors: list | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.errors = status, message, errors


def not_found() -> GitHubError:
    return GitHubError(404, "Not Found")


def invalid(resource: str, field: str, code: str = "invalid") -> GitHubError:
    return GitHubError(422, "Validation Failed", [{"resource": resource, "field": field, "code": code}])


def custom(resource: str, message: str) -> GitHubError:
    return GitHubError(422, "Validation Failed", [{"resource": resource, "code": "custom", "message": message}])


def emulator():
    """The GitHubEmulator this app serves."""
    return current_app.extensions[EXTENSION]


def require_app() -> None:
    if g.auth != "jwt":
        raise AuthError(401, "A JSON web token could not be decoded")
    verify_app_jwt(g.secret, emulator().app)


def require_token() -> Token:
    if g.auth is None:
        raise AuthError(401, "Requires authentication")
    if g.auth != "token":
        raise AuthError(401, "Bad credentials")
    return installation_token(emulator().state, g.secret)


def need(token: Token, *permissions: str) -> None:
    """GitHub's answer when the installation was granted write on none of `permissions`."""
    if not any(token.permissions.get(p) in ("write", "admin") for p in permissions):
        raise GitHubError(403, "Resource not accessible by integration")


def repository(owner: str, name: str) -> tuple[Token, Repo]:
    """The calling token and the repository, or 404 (GitHub never reveals a repository a token cannot see)."""
    token = require_token()
    state = emulator().state
    repo = state.repo(f"{owner}/{name}")
    if repo is None or not can_see(state, token, repo):
        raise not_found()
    return token, repo


def pull_of(repo: Repo, number: int) -> Pull:
    pull = emulator().state.pull(repo, number)
    if pull is None:
        raise not_found()
    return pull


def json_body() -> dict:
    raw = request.get_data(cache=True)
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise GitHubError(400, "Problems parsing JSON") from None
    if not isinstance(parsed, dict):
        raise GitHubError(400, "Problems parsing JSON")
    return parsed


def paginated(items: list, wrap=None):
    """One page of `items` (`per_page`, `page`) with GitHub's `Link` header; `wrap` shapes the page's body."""
    per_page = min(max(int(request.args.get("per_page", 30)), 1), 100)
    page = max(int(request.args.get("page", 1)), 1)
    last = max(1, math.ceil(len(items) / per_page))
    chunk = items[(page - 1) * per_page : page * per_page]
    response = jsonify(wrap(chunk) if wrap else chunk)
    rels = [("prev", page - 1)] if page > 1 else []
    rels += [("next", page + 1), ("last", last)] if page < last else []
    rels += [("first", 1)] if page > 1 else []
    if rels:

        def link(number: int) -> str:
            query = request.args.to_dict() | {"per_page": per_page, "page": number}
            return f"{request.base_url}?{urlencode(query)}"

        response.headers["Link"] = ", ".join(f'<{link(n)}>; rel="{rel}"' for rel, n in rels)
    return response


def created(shape: dict, location: str | None = None):
    response = jsonify(shape)
    response.status_code = 201
    if location:
        response.headers["Location"] = location
    return response
