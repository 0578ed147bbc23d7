"""Real worker processes under faults: a horse stuck past its deadline, SIGTERM with its grace, a second
signal, a killed horse. The worker records the right outcome, counts attempts only for crashes, and lives on."""

import os
import signal
import time

import pytest

from tests.harness import wait_until
from tests.model_fixtures import PROVIDERS, write_then_finish
from tests.model_standin import Hang, Reply, ToolUse
from tests.worker_processes import WorkerProcess

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running

SEARCH = Reply(tool_calls=[ToolUse("search", {"pattern": "Widgets"})])
# A model call that never comes back (the stand-in answers a Hang with the item after it, after the wait).
HANG = (Hang(300), Reply(text="too late"))


def _busy_in_a_model_call(stack, standin, workers) -> tuple[WorkerProcess, str]:
    """A worker process whose run waits on a model call that never answers; returns it and the job id."""
    standin.script(*HANG)
    worker = workers(stack)
    job_id = stack.create().json()["id"]
    worker.wait_for_horse()
    wait_until(lambda: standin.requests, 30, "the model call")
    return worker, job_id


def _first_message(stack, job_id):
    return stack.ctx.services.jobs.conversation(job_id)[0]


def _ends(stack, job_id, timeout=60):
    return wait_until(
        lambda: stack.job(job_id)["status"] in ("completed", "failed") and stack.job(job_id),
        timeout,
        f"job {job_id} to end",
        interval=0.25,
    )


@pytest.mark.parametrize("fault", ["regex_in_tool", "stopped_horse"])
def test_a_run_stuck_past_its_deadline_fails_with_time_limit_exceeded_and_the_worker_serves_the_next(
    fault, stack_factory, standin, workers
):
    stack = stack_factory(
        **PROVIDERS["openai"](standin),
        run_timeout_seconds=5,
        lease_ttl_seconds=3,
        test_faults=frozenset({"regex_in_tool"}) if fault == "regex_in_tool" else frozenset(),
    )
    standin.script(*((SEARCH,) if fault == "regex_in_tool" else HANG))
    worker = workers(stack)
    job_id = stack.create().json()["id"]
    if fault == "stopped_horse":
        # A horse that runs no code at all, as one stuck in C code that never looks at signals.
        horse = worker.wait_for_horse()
        wait_until(lambda: standin.requests, 30, "the model call")
        os.kill(horse, signal.SIGSTOP)
    started = time.monotonic()
    failed = _ends(stack, job_id)
    assert failed["status"] == "failed" and failed["error"]["code"] == "time_limit_exceeded", failed
    assert time.monotonic() - started < 30
    assert _first_message(stack, job_id).attempts == 1

    standin.script(Reply(text="Nothing needs changing."))  # a short run, well within the time limit
    next_job = stack.create("Is anything missing?").json()["id"]
    assert _ends(stack, next_job)["status"] == "completed", stack.job(next_job)["error"]
    assert worker.alive(), worker.log()


def test_sigterm_lets_the_run_go_on_for_its_grace_then_hands_it_back_without_counting_an_attempt(
    stack_factory, standin, workers
):
    stack = stack_factory(**PROVIDERS["openai"](standin), stop_grace_seconds=2)
    worker, job_id = _busy_in_a_model_call(stack, standin, workers)
    signalled = time.monotonic()
    worker.signal(signal.SIGTERM)
    wait_until(lambda: "stopping; the current run has" in worker.log(), 10, "the worker to take the signal")
    assert _first_message(stack, job_id).status.value == "running"  # within its grace, the run goes on
    assert worker.proc.wait(timeout=30) == 0, worker.log()
    assert time.monotonic() - signalled < 15
    handed_back = _first_message(stack, job_id)
    assert handed_back.status.value == "queued" and handed_back.attempts == 0
    assert stack.job(job_id)["status"] == "active"

    standin.script(*write_then_finish())
    workers(stack)
    done = _ends(stack, job_id)
    assert done["status"] == "completed" and done["prLink"], done
    assert _first_message(stack, job_id).attempts == 1


def test_a_second_signal_hands_the_run_back_at_once(stack_factory, standin, workers):
    stack = stack_factory(**PROVIDERS["openai"](standin), stop_grace_seconds=600)
    worker, job_id = _busy_in_a_model_call(stack, standin, workers)
    signalled = time.monotonic()
    worker.signal(signal.SIGTERM)
    wait_until(lambda: "stopping; the current run has" in worker.log(), 10, "the worker to take the first signal")
    worker.signal(signal.SIGTERM)
    assert worker.proc.wait(timeout=30) == 0, worker.log()
    assert time.monotonic() - signalled < 10
    assert _first_message(stack, job_id).status.value == "queued"
    assert _first_message(stack, job_id).attempts == 0


def test_a_killed_horse_is_resumed_at_once_and_counts_one_attempt(stack_factory, standin, workers):
    stack = stack_factory(**PROVIDERS["openai"](standin), lease_ttl_seconds=30, sweep_interval_seconds=60)
    worker, job_id = _busy_in_a_model_call(stack, standin, workers)
    horse = worker.horse_pid()
    standin.script(*write_then_finish())
    killed = time.monotonic()
    os.kill(horse, signal.SIGKILL)
    done = _ends(stack, job_id)
    # Neither the 30 s lease nor the 60 s sweep was waited for: the worker requeued the run itself.
    assert time.monotonic() - killed < 20
    assert done["status"] == "completed" and done["prLink"], done
    assert _first_message(stack, job_id).attempts == 2
    assert worker.alive(), worker.log()
