"""The OAuth web flow of the App's client (authorize, token exchange) and what a user-to-server token may ask:
`GET /user`, `GET /user/installations` and the user's org membership."""

import secrets
from datetime import timedelta
from urllib.parse import urlencode

from flask import Blueprint, g, jsonify, redirect, render_template_string, request

from tests.github_emulator.auth import AuthError
from tests.github_emulator.calls import emulator, not_found, paginated
from tests.github_emulator.state import OAuthCode, UserToken, now

blueprint = Blueprint("oauth", __name__)
CODE_TTL = timedelta(minutes=10)  # GitHub's authorization codes expire after ten minutes
TOKEN_TTL = timedelta(hours=8)  # user-to-server tokens of Apps with expiring tokens
DOCS = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors"

_AUTHORIZE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorize {{ app }}</title></head>
<body><h1>Authorize {{ app }}</h1><p>Signed in as <strong>{{ login }}</strong>.</p>
<form method="post"><input type="hidden" name="client_id" value="{{ client_id }}">
<input type="hidden" name="redirect_uri" value="{{ redirect_uri }}"><input type="hidden" name="state" value="{{ state }}">
<button name="decision" value="authorize" id="authorize">Authorize {{ app }}</button>
<button name="decision" value="cancel" id="cancel">Cancel</button></form></body></html>"""


def _page(text: str, status: int):
    return f"<!doctype html><html lang=en><title>GitHub</title><body><p>{text}</p></body></html>", status


@blueprint.route("/login/oauth/authorize", methods=["GET", "POST"])
def authorize():
    emu = emulator()
    args = request.values
    client_id, redirect_uri, state = args.get("client_id", ""), args.get("redirect_uri", ""), args.get("state", "")
    if client_id != emu.app.client_id:
        return _page("The client_id is not that of a GitHub App.", 404)
    if emu.oauth_callback and redirect_uri and not redirect_uri.startswith(emu.oauth_callback):
        return _page("The redirect_uri is not associated with this application.", 400)
    redirect_uri = redirect_uri or emu.oauth_callback
    login = emu.state.browser_user
    if login is None:
        return _page("Sign in to GitHub to continue.", 401)
    if request.method == "GET":
        return render_template_string(
            _AUTHORIZE, app=emu.app.name, login=login, client_id=client_id, redirect_uri=redirect_uri, state=state
        )
    if args.get("decision") != "authorize":
        query = {
            "error": "access_denied",
            "error_description": "The user has denied your application access.",
            "error_uri": DOCS,
            "state": state,
        }
        return redirect(f"{redirect_uri}?{urlencode(query)}", 302)
    code = secrets.token_hex(10)
    with emu.state.lock:
        emu.state.oauth_codes[code] = OAuthCode(login, redirect_uri, now() + CODE_TTL)
    return redirect(f"{redirect_uri}?{urlencode({'code': code, 'state': state})}", 302)


@blueprint.post("/login/oauth/access_token")
def access_token():
    emu = emulator()
    data = request.form if request.form else (request.get_json(silent=True) or {})
    if data.get("client_id") != emu.app.client_id or data.get("client_secret") != emu.app.client_secret:
        return _oauth_error("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
    with emu.state.lock:
        code = emu.state.oauth_codes.pop(data.get("code", ""), None)  # a code works once
    if code is None or code.expires_at <= now():
        return _oauth_error("bad_verification_code", "The code passed is incorrect or expired.")
    if data.get("redirect_uri") and data["redirect_uri"] != code.redirect_uri:
        return _oauth_error("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL.")
    token = UserToken("ghu_" + secrets.token_hex(18), code.login, now() + TOKEN_TTL)
    with emu.state.lock:
        emu.state.user_tokens[token.value] = token
    shape = {
        "access_token": token.value,
        "expires_in": int(TOKEN_TTL.total_seconds()),
        "refresh_token": "ghr_" + secrets.token_hex(30),
        "refresh_token_expires_in": 15897600,
        "scope": "",
        "token_type": "bearer",
    }
    if "json" in request.headers.get("Accept", ""):
        return jsonify(shape)
    return urlencode(shape), 200, {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}


def _oauth_error(error: str, description: str):
    # GitHub answers a failed exchange with 200 and an `error` field.
    shape = {"error": error, "error_description": description, "error_uri": DOCS}
    if "json" in request.headers.get("Accept", ""):
        return jsonify(shape)
    return urlencode(shape), 200, {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}


def require_user() -> str:
    """The login behind a live user-to-server token, or 401 Bad credentials."""
    if g.auth is None:
        raise AuthError(401, "Requires authentication")
    token = emulator().state.user_tokens.get(g.secret)
    if g.auth != "token" or token is None or token.expires_at <= now():
        raise AuthError(401, "Bad credentials")
    return token.login


@blueprint.get("/user", endpoint="users/get-authenticated")
def authenticated_user():
    return jsonify(emulator().render.authenticated_user(require_user()))


@blueprint.get("/user/installations", endpoint="apps/list-installations-for-authenticated-user")
def user_installations():
    emu = emulator()
    found = [emu.render.installation(i) for i in emu.state.user_installations(require_user())]
    return paginated(found, wrap=lambda page: {"total_count": len(found), "installations": page})


@blueprint.get("/user/memberships/orgs/<org>", endpoint="orgs/get-membership-for-authenticated-user")
def membership(org: str):
    emu = emulator()
    login = require_user()
    role = emu.state.memberships.get((org.lower(), login.lower()))
    if role is None:
        raise not_found()
    return jsonify(emu.render.membership(org, emu.state.user(login).login, role))
