"""Nothing is lost when a process dies: stored messages are found and run, once."""

import json
import time
from datetime import timedelta

import rq

from bot.worker import sweep_once
from service.dispatch import Dispatcher
from service.faults import FREEZE_AFTER_DEQUEUE
from service.store.jobkeys import job_key, pending_key, rq_key
from tests.chaos import RECOVERY_WINDOW
from tests.flow_scripts import FAQ, branch_log, finish
from tests.harness import wait_until
from tests.worker_processes import WorkerProcess


def test_a_message_stored_but_never_queued_is_recovered(stack):
    services = stack.ctx.services
    stack.script([FAQ, finish()])
    # A door that stores a job and queues its run apart dies in between (the API's create queues the run in its
    # create script, with the job's writes or not at all): the message is stored, its run never queued.
    project = services.projects.get(stack.project_id)
    job, _ = services.jobs.create(project, prompt="Add an FAQ", model=stack.settings.model, ref="main", as_draft=False)
    stack.drain()
    assert stack.job(job.id)["status"] == "active"  # stored, not lost, not yet run

    assert sweep_once(stack.ctx) == [job.id]
    assert sweep_once(stack.ctx) == []  # already queued: not queued twice
    stack.drain()
    assert stack.job(job.id)["status"] == "completed"


def test_the_api_create_queues_its_run_with_the_job(stack):
    services = stack.ctx.services
    job_id = stack.create().json()["id"]
    queued = rq.Queue(stack.settings.queue_name, connection=services.redis).get_job_ids()
    assert len(queued) == 1
    assert services.redis.get(rq_key(job_id)).decode() == queued[0]
    assert sweep_once(stack.ctx) == []  # the run waits in the queue: nothing to recover


def test_a_run_popped_by_a_worker_that_died_before_starting_it_is_recovered(stack):
    stack.script([FAQ, finish()])
    job_id = stack.create().json()["id"]
    services = stack.ctx.services
    queue = rq.Queue(stack.settings.queue_name, connection=services.redis)
    # A worker's blocking pop took the run off the list and the worker died: RQ still calls the job queued.
    [popped] = queue.get_job_ids()
    services.redis.lpop(queue.key)
    assert rq.job.Job.fetch(popped, connection=services.redis).get_status() == rq.job.JobStatus.QUEUED
    assert sweep_once(stack.ctx) == [job_id]
    stack.drain()
    assert stack.job(job_id)["status"] == "completed"


def test_a_run_whose_worker_died_is_run_again(stack):
    stack.script([FAQ, finish()])
    job_id = stack.create().json()["id"]
    services = stack.ctx.services
    # A worker took the run off the queue, marked the message running, and died (no lock left behind).
    rq.Queue(stack.settings.queue_name, connection=services.redis).empty()
    services.redis.delete(f"cd:job:{job_id}:rq")
    services.jobs.start_next(job_id)

    assert sweep_once(stack.ctx) == [job_id]
    stack.drain()
    done = stack.job(job_id)
    assert done["status"] == "completed" and done["prLink"]
    assert services.jobs.conversation(job_id)[0].attempts == 2


def test_a_worker_that_died_after_pushing_does_not_commit_twice_or_open_a_second_pull(stack):
    stack.script([FAQ, finish()])
    job_id = stack.create().json()["id"]
    stack.drain()
    services = stack.ctx.services
    first = services.jobs.conversation(job_id)[0]
    # Put the store back as it was just after the push, before the outcome was recorded.
    first.status = "running"
    services.redis.set(f"cd:message:{first.id}", json.dumps(first.to_dict()))
    services.redis.rpush(pending_key(job_id), first.id)
    services.redis.sadd("cd:jobs:pending", job_id)
    record = json.loads(services.redis.get(job_key(job_id)))
    record.update(status="active", pr_link=None, pr_number=None)
    services.redis.set(job_key(job_id), json.dumps(record))

    sweep_once(stack.ctx)
    stack.drain()

    done = stack.job(job_id)
    assert done["status"] == "completed"
    assert done["prLink"] == f"{stack.url}/local/{stack.project_id}/pulls/1"
    assert branch_log(stack.repo, done["branch"]) == ["Initial docs", "Add an FAQ"]
    assert len(stack.ctx.local.pulls(stack.project_id)) == 1


def test_a_message_that_keeps_killing_its_worker_fails_after_the_attempt_limit(stack):
    job_id = stack.create().json()["id"]
    services = stack.ctx.services
    for _ in range(stack.settings.max_attempts):
        services.jobs.start_next(job_id)
    stack.drain()
    failed = stack.job(job_id)
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "run_interrupted"


def _queued_run(stack, job_id: str) -> rq.job.Job:
    """The RQ job of the job's last queued run."""
    services = stack.ctx.services
    return rq.job.Job.fetch(services.redis.get(f"cd:job:{job_id}:rq").decode(), connection=services.redis)


def test_a_run_popped_by_a_worker_that_died_before_starting_it_is_queued_again(stack):
    stack.script([FAQ, finish()])
    job_id = stack.create().json()["id"]
    services = stack.ctx.services
    queue = rq.Queue(stack.settings.queue_name, connection=services.redis)
    assert sweep_once(stack.ctx) == []  # really in the queue's list: waiting
    # RQ's intermediate list holds a job a worker popped and has not started: still waiting...
    services.redis.lmove(queue.key, queue.intermediate_queue_key)
    assert sweep_once(stack.ctx) == []
    # ...but a pop that nothing remembers (a multi-queue worker's BLPOP, then SIGKILL) leaves RQ saying `queued`.
    services.redis.delete(queue.intermediate_queue_key)
    assert _queued_run(stack, job_id).get_status() == "queued"
    assert sweep_once(stack.ctx) == [job_id]
    assert sweep_once(stack.ctx) == []  # queued again, once
    stack.drain()
    assert stack.job(job_id)["status"] == "completed"


def test_a_run_waiting_in_another_deployments_queue_is_left_to_it(stack):
    # The demo beside an operator's workers on one Redis: each sweeps every job with waiting messages, and must
    # see the other's runs waiting in the other's queue rather than queue them again in its own.
    job_id = stack.create().json()["id"]
    services = stack.ctx.services
    neighbour = Dispatcher(
        services.redis, services.jobs, queue_name="copydesk-neighbour", task="bot.tasks.process_job", job_timeout=60
    )
    assert neighbour.sweep() == []
    rq.Queue(stack.settings.queue_name, connection=services.redis).empty()  # its run is gone: now it is stranded
    assert neighbour.sweep() == [job_id]


def test_a_run_queued_longer_than_the_bound_is_queued_again(stack):
    job_id = stack.create().json()["id"]
    services = stack.ctx.services
    patient = Dispatcher(
        services.redis,
        services.jobs,
        queue_name=stack.settings.queue_name,
        task="bot.tasks.process_job",
        job_timeout=60,
        requeue_after=3600,
    )
    assert patient.sweep() == []
    rq_job = _queued_run(stack, job_id)
    rq_job.enqueued_at = rq_job.enqueued_at - timedelta(hours=2)
    rq_job.save()
    assert patient.sweep() == [job_id]
    assert patient.sweep() == []


def test_a_worker_killed_between_dequeue_and_the_runs_start_leaves_no_message_behind(stack, tmp_path):
    stack.script([FAQ, finish()])
    job_id = stack.create().json()["id"]
    first = WorkerProcess({**stack.env(), "COPYDESK_TEST_FAULTS": FREEZE_AFTER_DEQUEUE}, tmp_path / "w1.log")
    try:
        wait_until(lambda: first.stopped(), 30, "the worker to stop after popping the run")
        # What the crash leaves: RQ still says `queued`, the RQ job in no list; no run holds the job.
        rq_job = _queued_run(stack, job_id)
        queue = rq.Queue(stack.settings.queue_name, connection=stack.ctx.services.redis)
        assert rq_job.get_status() == "queued" and rq_job.id not in queue.job_ids
        first.kill()
        killed_at = time.monotonic()
        with WorkerProcess({**stack.env(), "COPYDESK_TEST_FAULTS": ""}, tmp_path / "w2.log") as second:
            done = wait_until(
                lambda: stack.job(job_id)["status"] != "active" and stack.job(job_id),
                RECOVERY_WINDOW,
                "the popped message to run",
                interval=0.2,
            )
            assert done["status"] == "completed" and done["prLink"], second.log()
        recovered = time.monotonic() - killed_at
        print(f"the popped message ran {recovered:.1f} s after its worker was killed")
        assert recovered < RECOVERY_WINDOW
        assert len(stack.ctx.local.pulls(stack.project_id)) == 1
        assert branch_log(stack.repo, done["branch"]) == ["Initial docs", "Add an FAQ"]
    finally:
        if first.alive():
            first.kill()
