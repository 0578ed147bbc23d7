"""A run's lease: one holder at a time, a growing fencing token, and fenced writes that a lapsed holder cannot make."""

import pytest

from service.ids import UlidGenerator
from service.lease import Lease, LeaseInfo, LeaseLost, is_leased, release_token, renew_for_worker
from service.store.jobs import JobStore, RunOutcome
from service.store.projects import ProjectStore
from tests.harness import wait_until


@pytest.fixture
def jobs(redis_client):
    ids = UlidGenerator()
    project = ProjectStore(redis_client, ids).add(
        account="local", host="local", repository="/r.git", web_url="http://x/r", ref="main"
    )
    store = JobStore(redis_client, ids)
    job, _ = store.create(project, prompt="p", model="scripted:x", ref="main", as_draft=False)
    return store, job.id


def test_one_holder_at_a_time_and_each_new_holder_gets_a_larger_token(redis_client):
    first = Lease(redis_client, "job_x", ttl_seconds=5)
    assert first.acquire(worker="w1", kill_at=123.5)
    first.note("message", "m1")  # the run records the message it took, for the worker process
    assert not Lease(redis_client, "job_x").acquire()
    info = LeaseInfo.read(redis_client, "job_x")
    assert (info.token, info.worker, info.message_id, info.kill_at) == (first.token, "w1", "m1", 123.5)
    first.release()
    assert not is_leased(redis_client, "job_x")
    second = Lease(redis_client, "job_x", ttl_seconds=5)
    assert second.acquire()
    assert int(second.token) > int(first.token)


def test_a_lease_that_lapsed_and_was_taken_over_is_lost_for_good(redis_client):
    mine = Lease(redis_client, "job_x", ttl_seconds=1)
    assert mine.acquire()
    mine.ensure_held()
    # A stall longer than the lease lives (waited for as the lapse itself)...
    wait_until(lambda: not is_leased(redis_client, "job_x"), 30, "the lease to lapse", interval=0.05)
    theirs = Lease(redis_client, "job_x", ttl_seconds=5)
    assert theirs.acquire()  # ...and another worker took it
    assert mine.renew() is False
    with pytest.raises(LeaseLost):
        mine.ensure_held()
    with pytest.raises(LeaseLost):
        mine.note("message", "m")
    mine.release()  # releasing a lost lease leaves the new holder's alone
    release_token(redis_client, "job_x", mine.token)
    theirs.ensure_held()


def test_the_worker_process_renews_only_the_lease_its_own_horse_holds(redis_client):
    lease = Lease(redis_client, "job_x", ttl_seconds=1)
    lease.acquire(worker="w1")
    assert renew_for_worker(redis_client, "job_x", "w2", 60) is False
    assert renew_for_worker(redis_client, "job_x", "w1", 60) is True
    assert redis_client.pttl("cd:job:job_x:lease") > 50_000


def test_a_lapsed_run_cannot_start_record_or_hand_back_its_message(jobs, redis_client):
    store, job_id = jobs
    stale = Lease(redis_client, job_id, ttl_seconds=5)
    assert stale.acquire()
    _, message = store.start_next(job_id, stale.fence)
    redis_client.delete(f"cd:job:{job_id}:lease")  # it lapsed...
    fresh = Lease(redis_client, job_id, ttl_seconds=5)
    assert fresh.acquire()  # ...and a new run holds the job
    with pytest.raises(LeaseLost):
        store.finish_message(job_id, message.id, RunOutcome(reply="stale"), fence=stale.fence)
    with pytest.raises(LeaseLost):
        store.hand_back(job_id, message.id, stale.fence)
    with pytest.raises(LeaseLost):
        store.start_next(job_id, stale.fence)
    assert store.message(message.id).status.value == "running" and store.message(message.id).attempts == 1
    assert store.conversation(job_id)[-1].role.value == "user"  # no reply was added

    store.finish_message(job_id, message.id, RunOutcome(reply="fresh"), fence=fresh.fence)
    assert store.message(message.id).status.value == "processed"


def test_a_hand_back_requeues_the_message_without_counting_the_attempt(jobs, redis_client):
    store, job_id = jobs
    lease = Lease(redis_client, job_id, ttl_seconds=5)
    lease.acquire()
    _, message = store.start_next(job_id, lease.fence)
    assert store.hand_back(job_id, message.id, lease.fence) is True
    requeued = store.message(message.id)
    assert requeued.status.value == "queued" and requeued.attempts == 0
    assert store.hand_back(job_id, message.id, lease.fence) is False  # not running any more: nothing to do
    assert store.has_pending(job_id)
    _, again = store.start_next(job_id, lease.fence)
    assert again.id == message.id and again.attempts == 1
