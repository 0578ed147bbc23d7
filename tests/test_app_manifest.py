"""app.yml: the events it subscribes to are exactly the routed ones, its URLs are Copydesk's routes."""

from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
import yaml
from flask import Flask

from bot.door_limits import DoorLimits
from bot.github import events, inbound, registration
from bot.github import manifest as manifests


@pytest.fixture(scope="module")
def manifest():
    return manifests.load_manifest()


@pytest.fixture
def url_map(tmp_path, redis_url):
    app = Flask(__name__)
    client = redis.Redis.from_url(redis_url)
    app.register_blueprint(inbound.create_blueprint(secret="s", redis_client=client, queue_name="q"))
    app.register_blueprint(
        registration.create_blueprint(
            client,
            DoorLimits(client, per_minute=1),
            base_url="http://x",
            data_dir=tmp_path,
            web_url="http://gh",
            api_url="http://gh/api",
        )
    )
    return {rule.rule: rule.methods for rule in app.url_map.iter_rules()}


def test_every_subscribed_event_is_routed_and_every_routed_event_is_subscribed(manifest):
    assert manifests.subscribed_events(manifest) == events.HANDLED_EVENTS


def test_events_github_always_sends_are_not_listed(manifest):
    assert not manifests.ALWAYS_DELIVERED & set(manifest["default_events"])


def test_the_hook_path_is_the_webhook_route(manifest, url_map):
    path = manifests.hook_path(manifest)
    assert path == inbound.HOOK_PATH
    assert "POST" in url_map[path]


def test_redirect_and_setup_urls_are_registration_routes(manifest, url_map):
    for name in ("redirect_url", "setup_url"):
        assert "GET" in url_map[urlsplit(manifest[name]).path], name


def test_each_event_and_permission_says_why():
    raw = manifests.DEFAULT_PATH.read_text("utf-8")
    listed = yaml.safe_load(raw)
    lines = raw.splitlines()
    for event in listed["default_events"]:
        line = next(line for line in lines if line.strip().startswith(f"- {event} "))
        assert len(line.split("#", 1)[1].strip()) > 10, event
    for permission in listed["default_permissions"]:
        line = next(line for line in lines if line.strip().startswith(f"{permission}:"))
        assert len(line.split("#", 1)[1].strip()) > 10, permission


def test_the_app_is_private_and_asks_for_no_admin_rights(manifest):
    assert manifest["public"] is False
    assert "administration" not in manifest["default_permissions"]
    assert set(manifest["default_permissions"].values()) <= {"read", "write"}


def test_rendering_moves_every_url_onto_the_base(manifest):
    rendered = manifests.render_manifest(manifest, "https://docs.example.org/")
    assert rendered["url"] == "https://docs.example.org"
    assert rendered["hook_attributes"]["url"] == "https://docs.example.org/github/webhooks"
    assert rendered["redirect_url"] == "https://docs.example.org/github/register/done"
    assert rendered["setup_url"] == "https://docs.example.org/github/setup"
    assert rendered["callback_urls"] == ["https://docs.example.org/dashboard/login/github/callback"]
    assert rendered["default_events"] == manifest["default_events"]


def test_a_missing_manifest_is_a_clear_error(tmp_path):
    with pytest.raises(manifests.ManifestError, match="cannot read"):
        manifests.load_manifest(tmp_path / "app.yml")


def test_the_top_level_app_yml_is_the_packaged_one():
    """One manifest: the installed package reads `bot/github/app.yml`, and the documented top-level file links to it."""
    top = Path(__file__).resolve().parent.parent / "app.yml"
    assert top.is_symlink() and top.resolve() == manifests.DEFAULT_PATH


def test_the_code_change_trigger_has_what_it_needs(manifest):
    """A merge in a source repository arrives (`pull_request`); its diff and the source itself are read, the docs
    pull request asks the source PR's author for review (a collaborator check first) and may comment on it."""
    assert "pull_request" in manifest["default_events"]
    permissions = manifest["default_permissions"]
    assert permissions["contents"] in ("read", "write")
    assert permissions["pull_requests"] == "write"  # review requests
    assert permissions["issues"] == "write"  # a comment on the source pull request
    assert permissions["metadata"] == "read"  # GET /repos/{owner}/{repo}/collaborators/{username}
