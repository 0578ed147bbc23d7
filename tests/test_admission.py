"""A create's checks and writes as one script: a refusal writes nothing, a replay uses no quota, and the event
goes to the webhook outbox only for a project with endpoints."""

import pytest

from service.ids import UlidGenerator
from service.intake import gate
from service.store.admission import Verdict
from service.store.job_events import OUTBOX, endpoints_key
from service.store.jobs import IdempotencyClaim, JobStore
from service.store.projects import ProjectStore
from service.store.ratelimit import RateLimiter
from service.store.usage import cap_keys, month_of


@pytest.fixture
def stores(redis_client):
    ids = UlidGenerator()
    project = ProjectStore(redis_client, ids).add(
        account="acme", host="local", repository="/r.git", web_url="http://x/r", ref="main"
    )
    return JobStore(redis_client, ids), project, RateLimiter(redis_client, limit=2)


def admit(jobs, project, limiter, claim=None):
    return jobs.admit(
        project, prompt="p", model="m", ref="main", as_draft=False, idempotency=claim, gate=gate(project, limiter)
    )


def test_the_quota_refuses_past_its_limit_and_a_refusal_writes_nothing(stores, redis_client):
    jobs, project, limiter = stores
    assert [admit(jobs, project, limiter)[1].verdict for _ in range(2)] == [Verdict.CREATED] * 2
    job, admission = admit(jobs, project, limiter)
    assert job is None and admission.verdict is Verdict.LIMITED and admission.used == 2
    assert len(jobs.page(project.id, status=None, limit=10, cursor=None)[0]) == 2
    assert limiter.consume(project.id).allowed is False  # the refused create did not count


def test_a_capped_account_is_refused_before_anything_else(stores, redis_client):
    jobs, project, limiter = stores
    keys = cap_keys(project.host, project.account, month_of())
    redis_client.set(keys["cap_key"], 100)
    redis_client.hset(keys["usage_key"], mapping={"inputTokens": 90, "outputTokens": 20})
    job, admission = admit(jobs, project, limiter)
    assert job is None and admission.verdict is Verdict.CAPPED and (admission.used, admission.cap) == (110, 100)
    assert jobs.page(project.id, status=None, limit=10, cursor=None)[0] == []
    assert limiter.consume(project.id).remaining == 1  # no quota used by the refusal


def test_a_replay_returns_the_first_job_and_uses_no_quota(stores):
    jobs, project, limiter = stores
    claim = IdempotencyClaim(scope="s", body_hash="h")
    first, created = admit(jobs, project, limiter, claim)
    again, replay = admit(jobs, project, limiter, claim)
    assert created.verdict is Verdict.CREATED and replay.verdict is Verdict.REPLAY
    assert again is not None and first is not None and again.id == first.id
    assert limiter.consume(project.id).remaining == 0  # one create and this check: the replay took none


def test_the_created_event_reaches_the_webhook_outbox_only_with_endpoints(stores, redis_client):
    jobs, project, limiter = stores
    admit(jobs, project, limiter)
    assert redis_client.xlen(OUTBOX) == 0
    redis_client.sadd(endpoints_key(project.id), "wh_1")
    job, _ = admit(jobs, project, limiter)
    entries = redis_client.xrange(OUTBOX)
    assert len(entries) == 1 and entries[0][1][b"job"] == job.id.encode()
    assert entries[0][1][b"type"] == b"job.created"
