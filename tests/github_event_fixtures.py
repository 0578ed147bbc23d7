"""A pytest plugin: a GitHub App bot with an installation (`bot`, `installed`, `pull`) and delivering events to it."""

import pytest
import requests

from bot.github import events
from bot.github.apps import GitHubApp
from bot.github.bot import GitHubBot
from bot.github.codehost import GitHubCodeHost
from bot.github.settings import GitHubSettings
from service.services import build_services
from service.settings import Settings
from service.store.jobs import RunOutcome
from tests.github_schemas import validate_webhook

REPO = "acme/docs"


@pytest.fixture
def bot(github, redis_client, tmp_path):
    settings = Settings(redis_url="unused", data_dir=tmp_path / "data", rate_limit_per_hour=5)
    gh = GitHubSettings(
        app_id=str(github.app.id),
        private_key=github.app.private_key_pem,
        webhook_secret=github.app.webhook_secret,
        api_url=github.url,
        web_url=github.url,
    )
    app = GitHubApp(gh, redis_client, requests.Session(), sleep=lambda _seconds: None, retries=1)
    host = GitHubCodeHost(app)
    services = build_services(settings, redis_client, task="bot.tasks.process_job", code_hosts={host.name: host})
    return GitHubBot(services=services, app=app, host=host)


def deliver(bot, event: str, payload: dict, delivery: str = "delivery", *, example: bool = False) -> None:
    """Run the handlers of one delivery; the emulator's payloads are checked against GitHub's schema first
    (the octokit examples predate some of its required fields)."""
    if not example:
        validate_webhook(event, payload.get("action"), payload)
    events.handle(bot, event, delivery, payload)


@pytest.fixture
def installed(github, bot):
    """acme/docs installed; returns (project, installation id)."""
    github.add_repo(REPO, FILES, default_branch="trunk")
    payload = github.install("acme", [REPO])
    deliver(bot, "installation", payload)
    return bot.services.projects.find_by_repository("github", REPO), payload["installation"]["id"]


@pytest.fixture
def pull(github, bot, installed):
    """A completed job whose pull request Copydesk opened; returns (job, pull request number)."""
    project, _ = installed
    return pull_of_a_completed_job(github, bot, project, "docs/install.md", "# Install\n\nRun `widgets`.\n")


def pull_of_a_completed_job(github, bot, project, path: str, content: str):
    """A job that ran, changed `path` on its branch and opened its pull request, as Copydesk leaves it;
    returns (job, pull request number)."""
    job, _ = bot.services.jobs.create(
        project, prompt=f"Fix {path}", model="scripted:demo", ref=project.ref, as_draft=False
    )
    branch = f"copydesk/{job.id}"
    github.push(REPO, {path: content}, branch=branch)
    opened = bot.host.open_or_update_pull(
        project,
        job_id=job.id,
        branch=branch,
        base=project.ref,
        title=f"Docs: {path}",
        body="Opened by Copydesk",
        draft=False,
    )
    _, message = bot.services.jobs.start_next(job.id)
    bot.services.jobs.finish_message(
        job.id,
        message.id,
        RunOutcome(
            reply="Done.",
            branch=branch,
            commit=github.branch_sha(REPO, branch),
            pr_link=opened.url,
            pr_number=opened.number,
        ),
    )
    return bot.services.jobs.get(job.id), opened.number


FILES = {"README.md": "# Docs\n", "docs/install.md": "# Install\n\nRun it.\n"}
