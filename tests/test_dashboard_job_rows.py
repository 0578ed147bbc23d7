"""The dashboard's jobs list reads its rows in a fixed number of Redis round trips, whatever the page's length."""

import pytest
import redis

from bot.dashboard.jobrows import EXCERPT, job_rows
from bot.github.pulls import pull_state, record_pull_state
from service.codehost.local import LocalCodeHost
from service.ids import UlidGenerator
from service.models import Project, Role
from service.store.jobs import JobStore
from service.workspace.git import Git


class CountingConnection(redis.Connection):
    """A connection that counts what it sends: one send is one round trip (a pipeline sends once)."""

    sent = 0

    def send_packed_command(self, command, check_health=True):
        CountingConnection.sent += 1
        return super().send_packed_command(command, check_health)


@pytest.fixture
def counting(redis_url):
    client = redis.Redis(connection_pool=redis.ConnectionPool.from_url(redis_url, connection_class=CountingConnection))
    client.ping()  # the connection's own handshake is not the page's
    yield client
    client.close()


def _project(host: str) -> Project:
    return Project(id=f"prj_{host}", account="acme", host=host, repository="acme/docs", web_url="", ref="main")


def _jobs(store: JobStore, project: Project, count: int) -> list:
    prompts = [f"Prompt {n} " + "word " * (n * 4) for n in range(count)]
    return [store.create(project, prompt=p, model="scripted:demo", ref="main", as_draft=False)[0] for p in prompts]


def _round_trips(client, rows) -> int:
    before = CountingConnection.sent
    rows()
    return CountingConnection.sent - before


@pytest.mark.parametrize("host", ["github", "local"])
def test_a_page_of_rows_costs_the_same_round_trips_for_one_job_as_for_twenty(counting, host):
    store, local, project = (
        JobStore(counting, UlidGenerator()),
        LocalCodeHost(counting, Git(), "http://x"),
        _project(host),
    )
    jobs = _jobs(store, project, 20)
    for n, job in enumerate(jobs[:6]):  # some with pull requests, some of those ended
        if host == "github":
            job.pr_number = n + 1
            if n % 2:
                record_pull_state(counting, job.id, "merged")
        else:
            job.pr_number = local.open_or_update_pull(
                project, job_id=job.id, branch=f"copydesk/{job.id}", base="main", title="t", body="b", draft=False
            ).number
            if n % 2:
                local.close(project, job.pr_number)

    one = _round_trips(counting, lambda: job_rows(store, counting, local, project, jobs[:1]))
    twenty = _round_trips(counting, lambda: job_rows(store, counting, local, project, jobs))
    assert one == twenty <= 3

    rows = job_rows(store, counting, local, project, jobs)
    for row, job in zip(rows, jobs, strict=True):  # the same as reading each job on its own
        first = next(m.content for m in store.conversation(job.id) if m.role is Role.USER)
        assert row.excerpt == (first if len(first) <= EXCERPT else first[: EXCERPT - 1] + "…")
        own = (
            pull_state(counting, job)
            if host == "github"
            else (local.pull(project.id, job.pr_number).state if job.pr_number else None)
        )
        assert row.pr_state == own and row.tokens == 0
    assert len(rows[-1].excerpt) == EXCERPT and rows[0].excerpt == "Prompt 0 "
    assert [row.pr_state for row in rows[:3]] == (
        ["open", "merged", "open"] if host == "github" else ["open", "closed", "open"]
    )


def test_no_jobs_costs_no_round_trip(counting):
    store = JobStore(counting, UlidGenerator())
    assert (
        _round_trips(
            counting,
            lambda: job_rows(store, counting, LocalCodeHost(counting, Git(), "http://x"), _project("local"), []),
        )
        == 0
    )
