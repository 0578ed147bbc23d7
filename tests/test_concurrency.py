"""Concurrent requests against one job or one idempotency key stay consistent."""

from concurrent.futures import ThreadPoolExecutor

import requests

from service.store.jobs import RunOutcome
from tests.flow_scripts import FAQ, finish


def _post(url, key, body, headers=None):
    return requests.post(url, json=body, headers={"Authorization": f"Bearer {key}", **(headers or {})}, timeout=20)


def test_parallel_creates_with_one_idempotency_key_make_one_job(stack):
    url = f"{stack.url}/v2/agent/{stack.project_id}/job"
    with ThreadPoolExecutor(8) as pool:
        responses = list(
            pool.map(lambda _: _post(url, stack.key, {"prompt": "once"}, {"Idempotency-Key": "k1"}), range(8))
        )
    assert {r.status_code for r in responses} == {201}
    assert len({r.json()["id"] for r in responses}) == 1
    assert len(stack.api.get(f"/v2/agent/{stack.project_id}/jobs").json()["jobs"]) == 1


def test_parallel_follow_ups_are_all_kept_and_run_in_the_order_stored(stack):
    stack.script([FAQ, finish()])
    job_id = stack.create().json()["id"]
    url = f"{stack.url}/v2/agent/{stack.project_id}/job/{job_id}/message"
    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda i: _post(url, stack.key, {"prompt": f"m{i}"}), range(10)))
    assert {r.status_code for r in responses} == {200}
    stack.drain()
    users = [m for m in stack.ctx.services.jobs.conversation(job_id) if m.role.value == "user"]
    assert sorted(m.content for m in users[1:]) == sorted(f"m{i}" for i in range(10))
    assert [m.seq for m in users] == list(range(11))
    assert all(m.status.value == "processed" and m.attempts == 1 for m in users)
    assert stack.job(job_id)["status"] == "completed"


def test_archiving_during_a_run_keeps_the_job_archived(stack):
    jobs = stack.ctx.services.jobs
    job_id = stack.create().json()["id"]
    _job, running = jobs.start_next(job_id)
    archived = jobs.archive(job_id)
    assert archived.status.value == "archived"
    assert job_id in jobs.pending_jobs()  # the running message still has to report back
    after = jobs.finish_message(job_id, running.id, RunOutcome(reply="done", commit="abc"))
    assert after.status.value == "archived" and after.archived_at == archived.archived_at
    assert jobs.pending_jobs() == []
    assert jobs.message(running.id).status.value == "processed"
