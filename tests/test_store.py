"""Store transactions under the interleavings that concurrent requests and workers produce."""

from datetime import timedelta

import pytest
import redis

from service.apikeys import ApiKeys
from service.clock import now
from service.ids import UlidGenerator
from service.models import JobStatus, MessageStatus
from service.store.apikeys import ApiKeyStore
from service.store.jobs import JobStore, RunOutcome
from service.store.projects import ProjectStore


@pytest.fixture
def stores(redis_client):
    ids = UlidGenerator()
    projects = ProjectStore(redis_client, ids)
    project = projects.add(account="local", host="local", repository="/r.git", web_url="http://x/r", ref="main")
    return JobStore(redis_client, ids), project


def test_a_revocation_holds_at_once_and_a_refused_key_counts_no_use(redis_client):
    store = ApiKeyStore(redis_client)
    keys = ApiKeys(store)
    key, plaintext = keys.create(account="local")
    assert keys.authenticate(f"Bearer {plaintext}").use_count == 1
    keys.revoke(key.id)
    # The check and the use count are one script, so no request can count a use (or write) after the revocation.
    with pytest.raises(Exception, match="revoked"):
        keys.authenticate(f"Bearer {plaintext}")
    assert store.find(key.id).revoked_at is not None
    assert store.find(key.id).use_count == 1


def test_a_message_left_running_on_an_archived_job_is_cancelled_not_run(stores):
    jobs, project = stores
    job, _ = jobs.create(project, prompt="p", model="m", ref="main", as_draft=False)
    jobs.add_message(job.id, prompt="q")
    _job, first = jobs.start_next(job.id)  # its worker dies here
    jobs.archive(job.id)
    assert jobs.start_next(job.id) is None
    assert [m.status for m in jobs.conversation(job.id)] == [MessageStatus.CANCELLED, MessageStatus.CANCELLED]
    assert jobs.pending_jobs() == [] and not jobs.has_pending(job.id)


def test_archive_aborts_if_a_worker_starts_a_message_meanwhile(stores, redis_client):
    jobs, project = stores
    job, _ = jobs.create(project, prompt="p", model="m", ref="main", as_draft=False)
    real_mget = redis.client.Pipeline.mget
    raced = []

    def mget_then_race(pipe, keys, *args):
        values = real_mget(pipe, keys, *args)
        if not raced:  # the first time archive reads the waiting messages, a worker starts one
            raced.append(jobs.start_next(job.id))
        return values

    redis.client.Pipeline.mget = mget_then_race
    try:
        jobs.archive(job.id)
    finally:
        redis.client.Pipeline.mget = real_mget
    running = jobs.message(raced[0][1].id)
    assert running.status is MessageStatus.RUNNING  # not cancelled under the worker's feet
    after = jobs.finish_message(job.id, running.id, RunOutcome(reply="done", pr_link="http://x/pr/1"))
    assert after.status is JobStatus.ARCHIVED and after.pr_link == "http://x/pr/1"


def test_inactivity_archive_spares_a_job_that_just_got_a_message(stores):
    jobs, project = stores
    job, _ = jobs.create(project, prompt="p", model="m", ref="main", as_draft=False)
    _job, message = jobs.start_next(job.id)
    jobs.finish_message(job.id, message.id, RunOutcome(reply="ok"))
    cutoff = now() + timedelta(seconds=1)
    assert jobs.finished_before(cutoff) == [job.id]
    jobs.add_message(job.id, prompt="one more")  # arrives between the scan and the archive
    assert jobs.archive(job.id, idle_since=cutoff).status is JobStatus.ACTIVE
    assert jobs.conversation(job.id)[-1].status is MessageStatus.QUEUED
    assert jobs.finished_before(cutoff) == []
