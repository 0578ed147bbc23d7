"""Registering the App from app.yml: the page that posts the manifest, and the return that keeps the credentials."""

import hashlib
import html
import json
import logging
import re
import stat

import pytest
from flask import Flask

from bot.door_limits import DoorLimits
from bot.github import registration
from bot.github.settings import GitHubSettings
from service.api import problems

BASE = "https://copydesk.example.org"


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data"


def make_client(github, redis_client, data_dir, **options):
    app = Flask(__name__)
    problems.register(app)
    doors = DoorLimits(redis_client, per_minute=1000)
    app.register_blueprint(
        registration.create_blueprint(
            redis_client, doors, base_url=BASE, data_dir=data_dir, web_url=github.url, api_url=github.url, **options
        )
    )
    return app.test_client()


@pytest.fixture
def client(github, redis_client, data_dir):
    return make_client(github, redis_client, data_dir)


def form(page: str) -> tuple[str, dict]:
    """The GitHub form's action and the manifest it posts."""
    action = re.search(r'<form method="post" action="([^"]+)"', page).group(1)
    manifest = re.search(r'name="manifest" value="([^"]+)"', page).group(1)
    return html.unescape(action), json.loads(html.unescape(manifest))


def start(client, redis_client, token: str | None = None) -> str:
    """Open the registration page (with a new operator token unless given) and return GitHub's state."""
    token = token or registration.issue_registration_token(redis_client)
    action, _ = form(client.get(f"/github/register?token={token}").get_data(as_text=True))
    return action.split("state=", 1)[1]


def states(redis_client) -> list:
    return list(redis_client.scan_iter("cd:gh:register:state:*"))


def test_the_page_posts_the_rendered_manifest_to_github(client, github, redis_client):
    token = registration.issue_registration_token(redis_client)
    response = client.get(f"/github/register?token={token}")
    assert response.status_code == 200 and response.mimetype == "text/html"
    action, manifest = form(response.get_data(as_text=True))
    assert re.fullmatch(re.escape(f"{github.url}/settings/apps/new?state=") + r"[\w-]{20,}", action)
    assert manifest["hook_attributes"]["url"] == f"{BASE}/github/webhooks"
    assert manifest["redirect_url"] == f"{BASE}/github/register/done"
    assert manifest["setup_url"] == f"{BASE}/github/setup"
    assert manifest["public"] is False
    state = action.split("state=", 1)[1]
    assert 0 < redis_client.ttl(f"cd:gh:register:state:{state}") <= registration.STATE_TTL_SECONDS


def test_an_organization_gets_its_own_form_target(client, github, redis_client):
    token = registration.issue_registration_token(redis_client)
    page = client.get(f"/github/register?token={token}").get_data(as_text=True)
    # The owner form reloads this page, so it must carry the token along.
    assert f'<input type="hidden" name="token" value="{token}">' in page
    action, _ = form(client.get(f"/github/register?token={token}&organization=acme-docs").get_data(as_text=True))
    assert action.startswith(f"{github.url}/organizations/acme-docs/settings/apps/new?state=")
    assert client.get(f"/github/register?token={token}&organization=../evil").status_code == 400


def test_the_page_needs_an_operator_token_and_keeps_only_its_digest(client, redis_client):
    for query in ("", "?token=", "?token=made-up", "?organization=acme-docs"):
        response = client.get(f"/github/register{query}")
        assert response.status_code == 403, query
        page = response.get_data(as_text=True)
        assert "copydesk github register-link" in page and 'name="manifest"' not in page
    assert states(redis_client) == []

    token = registration.issue_registration_token(redis_client)
    assert len(token) >= 40
    [key] = [k.decode() for k in redis_client.scan_iter("cd:gh:register-token:*")]
    assert key == f"cd:gh:register-token:{hashlib.sha256(token.encode()).hexdigest()}"
    assert 0 < redis_client.ttl(key) <= registration.TOKEN_TTL_SECONDS
    assert not any(token.encode() in (redis_client.get(k) or b"") + k for k in redis_client.scan_iter("*"))
    assert client.get(f"/github/register?token={token}").status_code == 200


def test_a_token_registers_once(client, github, redis_client, data_dir):
    token = registration.issue_registration_token(redis_client)
    state = start(client, redis_client, token)
    assert client.get(f"/github/register/done?code={github.add_manifest_code()}&state={state}").status_code == 200
    (data_dir / "github-app.env").unlink()
    reused = client.get(f"/github/register?token={token}")
    assert reused.status_code == 403 and "copydesk github register-link" in reused.get_data(as_text=True)
    assert states(redis_client) == []


def test_states_of_a_used_token_are_dead(client, github, redis_client, data_dir):
    token = registration.issue_registration_token(redis_client)
    first, second = start(client, redis_client, token), start(client, redis_client, token)
    assert client.get(f"/github/register/done?code={github.add_manifest_code()}&state={first}").status_code == 200
    (data_dir / "github-app.env").unlink()
    late = client.get(f"/github/register/done?code={github.add_manifest_code()}&state={second}")
    assert late.status_code == 400 and "copydesk github register-link" in late.get_data(as_text=True)
    assert not (data_dir / "github-app.env").exists()
    assert len([r for r in github.requests if r.operation == "apps/create-from-manifest"]) == 1


def test_a_state_whose_token_expired_is_refused(client, github, redis_client, data_dir):
    token = registration.issue_registration_token(redis_client)
    state = start(client, redis_client, token)
    redis_client.delete(f"cd:gh:register-token:{hashlib.sha256(token.encode()).hexdigest()}")
    response = client.get(f"/github/register/done?code={github.add_manifest_code()}&state={state}")
    assert response.status_code == 400
    assert not data_dir.exists() and github.requests == []


def test_the_return_exchanges_the_code_and_keeps_the_credentials_private(
    client, github, redis_client, data_dir, caplog
):
    caplog.set_level(logging.DEBUG)
    state = start(client, redis_client)
    response = client.get(f"/github/register/done?code={github.add_manifest_code()}&state={state}")
    page = response.get_data(as_text=True)
    assert response.status_code == 200, page

    path = data_dir / "github-app.env"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    stored = registration.load_registration(data_dir)
    assert stored["GITHUB_APP_ID"] == str(github.app.id)
    assert stored["GITHUB_APP_SLUG"] == github.app.slug
    assert stored["GITHUB_WEBHOOK_SECRET"] == github.app.webhook_secret
    assert stored["GITHUB_CLIENT_ID"] == github.app.client_id
    assert stored["GITHUB_CLIENT_SECRET"] == github.app.client_secret
    settings = GitHubSettings.from_env(stored)
    assert settings.configured and settings.private_key.strip() == github.app.private_key_pem.strip()

    assert str(github.app.id) in page and github.app.slug in page and str(path) in page
    assert f"{github.url}/apps/{github.app.slug}/installations/new" in page
    secrets = (github.app.webhook_secret, github.app.client_secret, "PRIVATE KEY")
    assert not any(secret in page for secret in secrets)
    assert not any(secret in caplog.text for secret in secrets)
    [conversion] = [r for r in github.requests if r.operation == "apps/create-from-manifest"]
    assert conversion.auth is None


def test_a_state_works_once_and_only_if_this_copydesk_issued_it(client, github, redis_client, data_dir):
    state = start(client, redis_client)
    assert client.get(f"/github/register/done?code={github.add_manifest_code()}&state={state}").status_code == 200
    (data_dir / "github-app.env").unlink()
    again = client.get(f"/github/register/done?code={github.add_manifest_code()}&state={state}")
    assert again.status_code == 400
    forged = client.get(f"/github/register/done?code={github.add_manifest_code()}&state=made-up")
    assert forged.status_code == 400
    assert not (data_dir / "github-app.env").exists()


def test_a_code_github_refuses_is_reported_and_nothing_is_written(client, github, redis_client, data_dir):
    response = client.get(f"/github/register/done?code=never-issued&state={start(client, redis_client)}")
    assert response.status_code == 502
    assert "did not accept the code" in response.get_data(as_text=True)
    assert not data_dir.exists() or not any(data_dir.iterdir())


def test_registration_is_off_once_an_app_is_configured(github, redis_client, data_dir):
    configured = make_client(github, redis_client, data_dir, configured_app_id="77")
    response = configured.get(f"/github/register?token={registration.issue_registration_token(redis_client)}")
    assert response.status_code == 409
    page = response.get_data(as_text=True)
    assert "already" in page and 'name="manifest"' not in page


def test_a_registration_file_switches_registration_off(client, github, redis_client):
    client.get(f"/github/register/done?code={github.add_manifest_code()}&state={start(client, redis_client)}")
    response = client.get(f"/github/register?token={registration.issue_registration_token(redis_client)}")
    assert response.status_code == 409
    assert str(github.app.id) in response.get_data(as_text=True)


def test_an_earlier_registration_is_never_overwritten(client, github, redis_client, data_dir):
    state = start(client, redis_client)
    data_dir.mkdir(parents=True)
    (data_dir / "github-app.env").write_text("GITHUB_APP_ID=1\n")
    response = client.get(f"/github/register/done?code={github.add_manifest_code()}&state={state}")
    assert response.status_code == 200
    assert (data_dir / "github-app.env").read_text() == "GITHUB_APP_ID=1\n"
    second = data_dir / f"github-app-{github.app.id}.env"
    assert stat.S_IMODE(second.stat().st_mode) == 0o600
    assert str(second) in response.get_data(as_text=True)
    assert [p.name for p in data_dir.iterdir() if p.name.startswith(".")] == []


def test_no_registration_file_means_no_values(data_dir):
    assert registration.load_registration(data_dir) == {}


def test_the_setup_page_says_what_comes_next(client):
    response = client.get("/github/setup?installation_id=5&setup_action=install")
    assert response.status_code == 200
    assert "copydesk project list" in response.get_data(as_text=True)


def test_the_code_exchange_is_never_retried(client, github, redis_client, data_dir):
    # The code works once: were a lost answer retried, GitHub would refuse the retry and hide the App it made.
    github.inject("server", 1, status=502, match="POST /app-manifests/")
    state = start(client, redis_client)
    response = client.get(f"/github/register/done?code={github.add_manifest_code()}&state={state}")
    assert response.status_code == 502
    assert "copydesk github register-link" in response.get_data(as_text=True)
    assert len([r for r in github.requests if r.operation == "apps/create-from-manifest"]) == 1
    assert not data_dir.exists()
