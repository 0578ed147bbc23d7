"""What a worker forks ends with it: RQ's scheduler after the worker is killed, and a worker that is process 1 (as in
a container without an init) still runs its jobs, its horses not mistaking it for init."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bot.rqworker import STACKS_SIGNAL
from tests.flow_scripts import FAQ, finish
from tests.harness import wait_until
from tests.model_fixtures import PROVIDERS
from tests.model_standin import Hang, Reply


def _forks(pid: int) -> list[int]:
    """The children of `pid` that are forks of it (same command line), not commands it runs."""
    own = Path(f"/proc/{pid}/cmdline").read_bytes()
    found = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            if Path(f"/proc/{child}/cmdline").read_bytes() == own:
                found.append(int(child))
        except OSError:
            continue
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_rqs_scheduler_ends_with_its_killed_worker(stack, workers):
    worker = workers(stack)
    (scheduler,) = wait_until(lambda: _forks(worker.pid), 60, "RQ's scheduler process")
    os.kill(worker.pid, signal.SIGKILL)  # as the OOM killer or a lost host would: no warm shutdown
    worker.proc.wait(timeout=30)
    # Before, it lived on, orphaned, heartbeating into Redis and holding the scheduler's lock.
    wait_until(lambda: not _running(scheduler), 30, "the orphaned scheduler to end")


def test_a_horse_ends_with_its_killed_worker(stack_factory, standin, workers):
    stack = stack_factory(**PROVIDERS["openai"](standin))
    standin.script(Hang(300), Reply(text="too late"))
    worker = workers(stack)
    stack.create()
    horse = worker.wait_for_horse()
    wait_until(lambda: standin.requests, 30, "the run's model call")
    os.kill(worker.pid, signal.SIGKILL)
    worker.proc.wait(timeout=30)
    # SIGTERM on its worker's death: the horse hands its run back instead of running on unwatched.
    try:
        wait_until(lambda: not _running(horse), 30, "the horse to end after its worker")
    except AssertionError as exc:  # seen in full-suite runs only: what the horse was doing, for the next time
        os.kill(horse, STACKS_SIGNAL)
        wait_until(lambda: "most recent call first" in worker.log(), 10, "the horse's stacks in the log")
        raise AssertionError(f"{exc}\nhorse: {_status(horse)}\nworker log:\n{worker.log()[-12000:]}") from None


def _status(pid: int) -> str:
    """The lines of /proc/PID/status that say what a process is waiting for (state, signals)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError as exc:
        return str(exc)
    return "; ".join(line for line in lines if line.startswith(("State", "SigPnd", "ShdPnd", "SigBlk", "SigCgt")))


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux's unshare")
def test_a_worker_that_is_process_1_runs_its_jobs(stack):
    probe = subprocess.run(["unshare", "-pf", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no new PID namespace here: {probe.stderr.decode(errors='replace').strip()}")
    stack.script([FAQ, finish()])
    job_id = stack.create().json()["id"]
    # A burst worker as process 1 of its own PID namespace (`--mount-proc`: its /proc shows that namespace).
    worker = subprocess.run(
        ["unshare", "-pf", "--mount-proc", sys.executable, "-m", "bot.cli", "worker", "--burst"],
        env={**os.environ, **stack.env()},
        capture_output=True,
        timeout=120,
    )
    assert worker.returncode == 0, worker.stderr.decode(errors="replace")[-3000:]
    job = stack.job(job_id)
    assert job["status"] == "completed", job


def test_a_worker_given_the_stacks_signal_writes_its_threads_stacks_to_its_log(stack, workers):
    worker = workers(stack)
    wait_until(lambda: "Listening on" in worker.log(), 60, "the worker to listen")
    os.kill(worker.pid, STACKS_SIGNAL)
    wait_until(lambda: "most recent call first" in worker.log(), 30, "the worker's stacks in its log")
    assert worker.proc.poll() is None  # and it goes on working
