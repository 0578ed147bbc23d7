"""Registering the GitHub App from `app.yml` with GitHub's manifest flow, and keeping what GitHub returns.

Only the operator may register: `copydesk github register-link` issues a one-time token (Redis keeps its
SHA-256 only), the registration page needs it, and the return from GitHub uses it up.
"""

import hashlib
import json
import logging
import os
import re
import secrets
from pathlib import Path

import redis
import requests
from flask import Blueprint, render_template_string, request
from gidgethub import BadRequest

from bot.door_limits import Door, DoorLimits
from bot.github.client import GitHubClient, GitHubUnavailable
from bot.github.manifest import DEFAULT_PATH, load_manifest, render_manifest
from service.clock import now_iso
from service.errors import RateLimited

log = logging.getLogger(__name__)

REGISTRATION_FILE = "github-app.env"
STATE_TTL_SECONDS = 3600  # GitHub's manifest code is valid for an hour too
TOKEN_TTL_SECONDS = 3600
REGISTER_LINK_COMMAND = "copydesk github register-link"
# The conversion's fields, under the variables GitHubSettings (and the dashboard's sign-in) read.
FIELDS = (
    ("GITHUB_APP_ID", "id"),
    ("GITHUB_APP_SLUG", "slug"),
    ("GITHUB_PRIVATE_KEY", "pem"),
    ("GITHUB_WEBHOOK_SECRET", "webhook_secret"),
    ("GITHUB_CLIENT_ID", "client_id"),
    ("GITHUB_CLIENT_SECRET", "client_secret"),
)
_ORGANIZATION = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_CODE = re.compile(r"^[A-Za-z0-9_-]{1,200}$")

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Copydesk · {{ title }}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:3rem auto;padding:0 1rem}
code{background:#f3f3f3;padding:0 .25rem}input,button{font:inherit;padding:.3rem .6rem}</style></head>
<body><h1>{{ title }}</h1>{% block body %}{% endblock %}</body></html>"""

_REGISTER = _PAGE.replace(
    "{% block body %}{% endblock %}",
    """
{% if registered %}
<p>A GitHub App is registered already{% if app_id %} (id <code>{{ app_id }}</code>){% endif %}.
To register another one, move <code>{{ path }}</code> away and unset the <code>GITHUB_APP_*</code> variables.</p>
{% else %}
<p>This creates a private GitHub App named <strong>{{ manifest.name }}</strong> from <code>app.yml</code>, with its
webhooks sent to <code>{{ manifest.hook_attributes.url }}</code>. GitHub asks you to confirm the name first.</p>
<form method="get" action="">
  <input type="hidden" name="token" value="{{ token }}">
  <label>Register it for an organization (leave empty for your own account):
  <input name="organization" value="{{ organization }}" placeholder="organization login"></label>
  <button>Use this owner</button>
</form>
<form method="post" action="{{ action }}">
  <input type="hidden" name="manifest" value="{{ manifest_json }}">
  <p><button>Register on GitHub for {{ organization or "my account" }}</button></p>
</form>
{% endif %}""",
)

_DONE = _PAGE.replace(
    "{% block body %}{% endblock %}",
    """
<p>GitHub App <strong>{{ app.slug }}</strong> (id <code>{{ app.id }}</code>) is registered.
Its private key, webhook secret and OAuth client credentials are in <code>{{ path }}</code>
(readable by this account only). They are not shown here: keep that file private.</p>
{% if earlier %}<p><strong>Note:</strong> <code>{{ earlier }}</code> already held a registration and was left
as it was; replace it with <code>{{ path }}</code> to use this App.</p>{% endif %}
<h2>Next</h2>
<ol>
  <li>Restart Copydesk's web and worker processes so they read <code>{{ path }}</code>
      (or copy its values into your secret store as environment variables).</li>
  <li><a href="{{ install_url }}">Install the App</a> on the repositories whose docs Copydesk should edit.</li>
  <li>Run <code>copydesk project list</code> to see the projects the installation created, with their ids.</li>
</ol>""",
)

_SETUP = _PAGE.replace(
    "{% block body %}{% endblock %}",
    """
<p>Copydesk is installed. Every repository you gave it is now a project; it takes jobs once the web and worker
processes run with the App's credentials.</p>
<ol>
  <li><code>copydesk project list</code> shows the projects and their ids.</li>
  <li><code>copydesk key create --account &lt;owner login&gt;</code> makes an API key for that account's projects.</li>
  <li>Create a job with <code>POST /v2/agent/&lt;project id&gt;/job</code>; comment on its pull request, mentioning
      the App, to ask for more changes.</li>
</ol>""",
)

_PROBLEM = _PAGE.replace("{% block body %}{% endblock %}", "<p>{{ detail }}</p>")


class RegistrationError(Exception):
    """GitHub's answer to the manifest conversion cannot be stored."""


def issue_registration_token(redis_client: redis.Redis) -> str:
    """A new one-time registration token, valid for `TOKEN_TTL_SECONDS`; only its SHA-256 is stored."""
    token = secrets.token_urlsafe(32)
    redis_client.set(_token_key(_digest(token)), "1", ex=TOKEN_TTL_SECONDS)
    return token


def registration_link(base_url: str, token: str) -> str:
    """The registration page's address carrying `token`."""
    return f"{base_url.rstrip('/')}/github/register?token={token}"


def _token_is_valid(redis_client: redis.Redis, token: str) -> bool:
    return bool(token) and bool(redis_client.exists(_token_key(_digest(token))))


def _consume_state(redis_client: redis.Redis, state: str) -> bool:
    """Use up `state` and the registration token it is bound to; False when either is gone.

    Each step is one atomic Redis command, so of several states bound to one token only the first to
    reach here succeeds; a state is used up even when its token was, since it can never work again.
    """
    digest = redis_client.getdel(_state_key(state))
    if digest is None:
        return False
    digest = digest.decode() if isinstance(digest, bytes) else digest
    return bool(redis_client.delete(_token_key(digest)))


def registration_path(data_dir: Path) -> Path:
    """Where the App's credentials are kept after registration."""
    return Path(data_dir) / REGISTRATION_FILE


def load_registration(data_dir: Path) -> dict[str, str]:
    """The variables a registration stored (empty when none did), to merge under the environment."""
    try:
        text = registration_path(data_dir).read_text("utf-8")
    except (FileNotFoundError, NotADirectoryError):  # no data folder there: nothing registered
        return {}
    values = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            values[name.strip()] = value
    return values


def save_registration(data_dir: Path, conversion: dict) -> tuple[Path, Path | None]:
    """Write the conversion's credentials, mode 0600, without replacing an earlier registration.

    Returns the file written and, when `github-app.env` was there already, that file (left unchanged).
    """
    lines = [
        f"# GitHub App {conversion.get('slug')} registered by Copydesk on {now_iso()}.",
        "# Credentials: keep this file private. Environment variables of the same name win over it.",
    ]
    for name, key in FIELDS:
        # One line per value, so the file also works as a Docker env file; GitHubSettings undoes the escape.
        value = str(conversion.get(key) or "").strip().replace("\n", "\\n")
        if not value or "\r" in value:
            raise RegistrationError(f"GitHub's answer has no usable `{key}`")
        lines.append(f"{name}={value}")
    directory = Path(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    target = registration_path(directory)
    earlier = None
    if target.exists():
        earlier, target = target, directory / f"github-app-{int(conversion['id'])}.env"
    _create_private(target, "\n".join(lines) + "\n")
    return target, earlier


def _create_private(target: Path, text: str) -> None:
    """Create `target` (mode 0600) with `text` all at once: readers never see a part, nothing is replaced."""
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.link(temporary, target)  # fails rather than replace a file that appeared meanwhile
    finally:
        temporary.unlink()


def create_blueprint(
    redis_client: redis.Redis,
    doors: DoorLimits,
    *,
    base_url: str,
    data_dir: Path,
    web_url: str,
    api_url: str,
    session: requests.Session | None = None,
    configured_app_id: str | None = None,
    manifest_path: Path = DEFAULT_PATH,
) -> Blueprint:
    """`GET /github/register`, its return `GET /github/register/done` and the post-install `GET /github/setup`.

    `configured_app_id` (from the environment) switches registration off, like an existing registration file;
    `doors` limits how often one client address may try the links.
    """
    bp = Blueprint("github_registration", __name__)
    bp.before_request(lambda: doors.admit(Door.REGISTRATION, request.remote_addr))

    @bp.errorhandler(RateLimited)
    def too_many(exc: RateLimited):
        body, status = _page(_PROBLEM, 429, "Too many requests", detail=exc.detail)
        return body, status, {"Retry-After": str(exc.retry_after)}

    session = session or requests.Session()
    web_url, data_dir = web_url.rstrip("/"), Path(data_dir)

    def registered() -> bool:
        return bool(configured_app_id) or registration_path(data_dir).exists()

    @bp.get("/github/register")
    def register():
        token = request.args.get("token", "")
        if not _token_is_valid(redis_client, token):
            return _page(
                _PROBLEM,
                403,
                "Registration needs a link from the server",
                detail=f"Only the operator can register the GitHub App. Run `{REGISTER_LINK_COMMAND}` "
                "on the server running Copydesk and open the link it prints (it works once, "
                "within an hour).",
            )
        if registered():
            app_id = configured_app_id or load_registration(data_dir).get("GITHUB_APP_ID")
            return _page(
                _REGISTER, 409, "Already registered", registered=True, app_id=app_id, path=registration_path(data_dir)
            )
        organization = request.args.get("organization", "").strip()
        if organization and not _ORGANIZATION.match(organization):
            return _page(
                _PROBLEM,
                400,
                "Not an organization login",
                detail="An organization login has letters, digits and hyphens only.",
            )
        manifest = render_manifest(load_manifest(manifest_path), base_url)
        state = secrets.token_urlsafe(24)
        # The state carries the token's digest: returning with it proves the operator started this.
        redis_client.set(_state_key(state), _digest(token), ex=STATE_TTL_SECONDS)
        owner = f"/organizations/{organization}" if organization else ""
        return _page(
            _REGISTER,
            200,
            "Register the GitHub App",
            registered=False,
            manifest=manifest,
            manifest_json=json.dumps(manifest),
            organization=organization,
            token=token,
            action=f"{web_url}{owner}/settings/apps/new?state={state}",
        )

    @bp.get("/github/register/done")
    def done():
        code, state = request.args.get("code", ""), request.args.get("state", "")
        # State and token are used up at once: a replayed or forged return finds nothing.
        if not state or not _CODE.match(code) or not _consume_state(redis_client, state):
            return _page(
                _PROBLEM,
                400,
                "Registration link not valid",
                detail=f"This link is expired, used already or not from this Copydesk. {_AGAIN}",
            )
        try:
            # No authentication: the one-time code is the credential. Never retried (retries=0): a retry
            # after a lost answer would spend the code again and fail, hiding the App GitHub created.
            client = GitHubClient(session, api_url=api_url, retries=0)
            conversion = client.post("/app-manifests/{code}/conversions", {"code": code}, data={})
            path, earlier = save_registration(data_dir, conversion)
        except BadRequest as exc:
            log.warning("GitHub refused the app-manifest code (HTTP %s)", exc.status_code)
            return _page(
                _PROBLEM,
                502,
                "GitHub refused the registration",
                detail=f"GitHub did not accept the code (it works once, within an hour). {_AGAIN}",
            )
        except (GitHubUnavailable, RegistrationError) as exc:
            log.warning("app registration failed: %s", exc)
            return _page(_PROBLEM, 502, "Registration not finished", detail=f"{exc}. {_AGAIN}")
        log.info(
            "GitHub App %s (id %s) registered; credentials written to %s", conversion["slug"], conversion["id"], path
        )
        app = {"id": conversion["id"], "slug": conversion["slug"]}
        return _page(
            _DONE,
            200,
            "GitHub App registered",
            app=app,
            path=path,
            earlier=earlier,
            install_url=f"{conversion['html_url']}/installations/new",
        )

    @bp.get("/github/setup")
    def setup():
        return _page(_SETUP, 200, "Copydesk is installed")

    return bp


_AGAIN = f"To start again, run `{REGISTER_LINK_COMMAND}` on the server and open the new link."


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _token_key(digest: str) -> str:
    return f"cd:gh:register-token:{digest}"


def _state_key(state: str) -> str:
    return f"cd:gh:register:state:{state}"


def _page(template: str, status: int, title: str, **context):
    return render_template_string(template, title=title, **context), status
