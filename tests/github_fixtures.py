"""Pytest fixtures for the GitHub emulator: `github_app` (the test App's keys and secrets), `github`, and
`gh_stack` (Copydesk configured for the emulated App), with the helpers their tests script runs with."""

import json
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from bot import context
from bot.app import create_app
from service.settings import Settings
from tests.conftest import DOCS
from tests.fsck_check import assert_copydesk_commits_pass_fsck
from tests.github_emulator import GitHubEmulator, TestApp
from tests.harness import CheckedSession, LiveServer, drain_queues


@pytest.fixture(scope="session")
def github_app() -> TestApp:
    """The test GitHub App; its RSA key is generated once per session (key generation is the slow part)."""
    return TestApp.generate()


@pytest.fixture
def github(tmp_path, github_app):
    """A running GitHub emulator with no repositories or installations yet; on teardown every commit Copydesk
    pushed to its repositories must pass `git fsck --strict`."""
    with GitHubEmulator(tmp_path / "github", github_app) as emulator:
        yield emulator
    for repo in sorted((tmp_path / "github").glob("**/*.git")):
        assert_copydesk_commits_pass_fsck(repo)


REPO = "acme/docs"


@dataclass
class GitHubStack:
    github: object  # the emulator
    ctx: context.Context
    url: str
    env: dict
    script_path: Path

    def script(self, *runs: list[dict]) -> None:
        self.script_path.write_text(json.dumps({"runs": [{"steps": steps} for steps in runs]}))

    def drain(self) -> None:
        """Let GitHub's in-flight deliveries land, then run a worker until the events and runs queues are empty."""
        self.github.flush_deliveries()
        drain_queues(self.ctx.services.redis, self.ctx.settings.queue_name)

    def api(self, account: str = "acme") -> CheckedSession:
        _key, plaintext = self.ctx.services.keys.create(account=account, name="tests")
        session = CheckedSession(self.url, None)
        session.headers["Authorization"] = f"Bearer {plaintext}"
        return session

    def project(self):
        return self.ctx.services.projects.find_by_repository("github", REPO)


@pytest.fixture
def gh_stack(github, redis_url, tmp_path, monkeypatch):
    """Factory: the emulated GitHub with acme/docs, and Copydesk configured for its App by environment."""
    with ExitStack() as running:

        def build(**env_overrides) -> GitHubStack:
            github.add_repo(REPO, files=DOCS)
            github.set_permission(REPO, "alice", "write")
            github.set_permission(REPO, "rita", "read")
            script_path = tmp_path / "script.json"
            script_path.write_text('{"runs": []}')
            server = running.enter_context(LiveServer())  # bound first: its URL goes into the settings
            env = {
                **Settings(
                    redis_url=redis_url,
                    data_dir=tmp_path / "data",
                    base_url=server.url,
                    model=f"scripted:{script_path}",
                ).to_env(),
                "GITHUB_APP_ID": str(github.app.id),
                "GITHUB_PRIVATE_KEY": github.app.private_key_pem,
                "GITHUB_WEBHOOK_SECRET": github.app.webhook_secret,
                "GITHUB_API_URL": github.url,
                "GITHUB_WEB_URL": github.url,
                **env_overrides,
            }
            for name, value in env.items():
                monkeypatch.setenv(name, value)  # the worker's task builds its context from the environment
            settings = Settings.from_env()
            ctx = context.build(settings)
            server.mount(create_app(settings, ctx))
            github.deliver_to(f"{server.url}/github/webhooks")
            return GitHubStack(github, ctx, server.url, env, script_path)

        yield build


def write(path, content):
    return {"tool": "write_file", "args": {"path": path, "content": content}}


def edit(path, old, new):
    return {"tool": "edit_file", "args": {"path": path, "old": old, "new": new}}


def finish(title, summary):
    return {"tool": "finish", "args": {"title": title, "summary": summary}}


def bot_comments(github, number):
    return [c for c in github.comments(REPO, number) if c["user"]["type"] == "Bot"]


def pem_of(key) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
