"""The same refused follow-up through each door (the API, the dashboard, a GitHub comment) gets the same code and
the same words, and nothing is stored."""

import html
import re

import pytest
import requests

from bot.github import comments, events
from service.projectstate import DisabledReason

REPO = "acme/docs"
SECONDS = re.compile(r"try again in \d+ s")


@pytest.fixture
def doors(dash):
    """A job of acme/docs with its pull request open; alice (an admin, with write access) at every door."""
    project = dash.projects[REPO]
    services = dash.ctx.services
    job, _ = services.jobs.create(
        project, prompt="Fix the install page", model="scripted:demo", ref="main", as_draft=False
    )
    dash.github.push(REPO, {"docs/install.md": "# Install\n"}, branch=f"copydesk/{job.id}")
    number = dash.github.open_pull(REPO, f"copydesk/{job.id}")
    dash.github.set_permission(REPO, "alice", "write")
    _record, key = services.keys.create(account="acme", host="github")
    return Doors(dash, project, job, number, key, dash.signed_in("alice"))


class Doors:
    def __init__(self, dash, project, job, number, key, browser) -> None:
        self.dash, self.project, self.job, self.number, self.key, self.browser = (
            dash,
            project,
            job,
            number,
            key,
            browser,
        )
        self.bot = dash.ctx.github_bot()

    def api(self, prompt: str) -> tuple[str, str]:
        answer = requests.post(
            f"{self.dash.url}/v2/agent/{self.project.id}/job/{self.job.id}/message",
            json={"prompt": prompt},
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=10,
        )
        assert answer.status_code >= 400, answer.text
        return answer.json()["code"], answer.json()["detail"]

    def dashboard(self, prompt: str) -> str:
        path = f"/dashboard/projects/{self.project.id}/jobs/{self.job.id}"
        page = self.browser.form(f"{path}/message", {"prompt": prompt}, page=path)
        assert page.status_code >= 400
        return html.unescape(page.text)

    def github(self, words: str) -> str | None:
        """The App's reply to alice's comment, None when it gave none."""
        before = len(self.dash.github.comments(REPO, self.number))
        payload = self.dash.github.comment(REPO, self.number, "alice", f"@{self.bot.app.slug()} {words}")
        events.handle(self.bot, "issue_comment", f"d-{payload['comment']['id']}", payload)
        replies = self.dash.github.comments(REPO, self.number)[before + 1 :]
        assert len(replies) <= 1
        return replies[0]["body"] if replies else None

    def messages(self) -> int:
        return self.dash.ctx.services.jobs.get(self.job.id).messages


def refused_alike(doors: Doors, prompt: str, expected_code: str) -> str:
    """Send the same refused follow-up through the three doors; the words they all showed."""
    before = doors.messages()
    code, detail = doors.api(prompt)
    assert code == expected_code
    shown = doors.dashboard(prompt)
    reply = doors.github(prompt)
    assert SECONDS.sub("", detail) in SECONDS.sub("", shown)
    assert reply is not None
    assert SECONDS.sub("", reply) == SECONDS.sub("", comments.REFUSED.format(login="alice", code=code, detail=detail))
    assert doors.messages() == before
    return detail


def test_an_archived_job(doors):
    doors.dash.ctx.services.jobs.archive(doors.job.id)
    detail = refused_alike(doors, "one more thing", "job_archived")
    assert detail == f"job {doors.job.id} is archived and takes no more messages"


def test_the_hourly_quota(doors):
    limiter = doors.dash.ctx.services.limiter
    while limiter.consume(doors.project.id).allowed:
        pass
    detail = refused_alike(doors, "one more thing", "rate_limited")
    assert detail.startswith(f"project {doors.project.id} may create {limiter.limit} jobs or messages per hour")


def test_the_monthly_cap(doors):
    usage = doors.dash.ctx.services.usage
    usage.set_cap("github", "acme", 100)
    usage.add("github", "acme", None, {"inputTokens": 90, "outputTokens": 10})
    detail = refused_alike(doors, "one more thing", "monthly_budget_exceeded")
    assert "its monthly cap is 100" in detail
    assert (
        doors.dash.ctx.services.limiter.consume(doors.project.id).remaining
        == doors.dash.ctx.settings.rate_limit_per_hour - 1
    )


def test_a_prompt_too_long(doors):
    limit = doors.dash.ctx.settings.max_prompt_chars
    detail = refused_alike(doors, "x" * (limit + 1), "invalid_request")
    assert detail == f"`prompt` is longer than {limit} characters"


def test_a_disabled_project(doors):
    doors.dash.ctx.services.projects.disable(doors.project.id, DisabledReason.ADMIN)
    before = doors.messages()
    code, detail = doors.api("one more thing")
    assert (code, detail) == (
        "project_disabled",
        f"project {doors.project.id} is disabled: its repository is no longer reachable",
    )
    assert detail in doors.dashboard("one more thing")
    assert doors.github("one more thing") == comments.REFUSED.format(login="alice", code=code, detail=detail)
    assert doors.github("stop") == comments.REFUSED.format(login="alice", code=code, detail=detail)
    assert doors.messages() == before


def test_a_project_its_code_host_disabled_gets_no_reply(doors):
    """The App lost the repository (or its installation is suspended): it has no token to answer with."""
    doors.dash.ctx.services.projects.disable(doors.project.id, DisabledReason.INSTALLATION_SUSPENDED)
    before = doors.messages()
    assert doors.github("one more thing") is None
    assert doors.messages() == before
