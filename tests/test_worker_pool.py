"""`copydesk worker --processes N`: N runs at once on one host, the upkeep once, children restarted, SIGTERM's
grace kept."""

import os
import signal
import threading
from pathlib import Path

import pytest
import requests

from service.job_events import EventType
from service.settings import Settings
from tests.conftest import free_port
from tests.harness import wait_until
from tests.metrics_text import parse, value
from tests.model_fixtures import PROVIDERS
from tests.model_standin import Hang, Reply
from tests.redis_servers import NO_PERSISTENCE, running_redis
from tests.worker_processes import WorkerProcess

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running

UPKEEP = "sweep, mirror upkeep, webhook fan-out and delivery lanes running in process"


@pytest.fixture
def pool(tmp_path):
    """Starts `copydesk worker --processes N` for a stack; on teardown nothing of it is left running."""
    started: list[WorkerProcess] = []

    def start(stack, processes: int = 2, **env) -> WorkerProcess:
        worker = WorkerProcess(
            {**stack.env(), **env},
            tmp_path / f"pool{len(started)}.log",
            "--processes",
            str(processes),
            "--name",
            "pool",
        )
        started.append(worker)
        return worker

    yield start
    for worker in started:
        grandchildren = [g for c in children(worker.pid) for g in children(c)]
        if worker.alive():
            worker.kill()
        for pid in grandchildren:  # horses of children killed above, if any
            _kill(pid)


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def worker_children(pool_pid: int) -> list[int]:
    """The supervised worker processes of the pool (not the commands it may run, such as `git version`)."""
    found = []
    for pid in children(pool_pid):
        try:
            if b"--supervised" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def event_ms(stack, job_id: str, kind: EventType) -> int:
    """When the job's first event of `kind` was appended (its stream id's milliseconds)."""
    events = [e for e in stack.ctx.services.events.after(job_id, "0") if e.type is kind]
    assert events, f"job {job_id} has no {kind.value} event"
    return int(events[0].id.split("-")[0])


def test_two_processes_run_two_jobs_at_once_and_sweep_once(stack_factory, standin, pool, tmp_path):
    stack = stack_factory(**PROVIDERS["openai"](standin))
    # Each run's one model call is answered only once both calls are in: one after the other, the two runs
    # would never both reach it (and the test would time out).
    both_asked = threading.Event()
    standin.script(
        Hang(120, until=both_asked),
        Reply(text="First answer."),
        Hang(120, until=both_asked),
        Reply(text="Second answer."),
    )
    port = free_port()
    worker = pool(
        stack,
        2,
        COPYDESK_METRICS_TOKEN="pool-token",
        COPYDESK_WORKER_METRICS_PORT=str(port),
        COPYDESK_METRICS_DIR=str(tmp_path / "metrics"),
    )
    wait_until(lambda: len(worker_children(worker.pid)) == 2, 30, "two worker processes")
    jobs = [stack.create(f"Question {n}").json()["id"] for n in (1, 2)]
    wait_until(lambda: len(standin.requests) == 2, 60, "both runs' model calls", interval=0.1)
    both_asked.set()
    for job_id in jobs:
        wait_until(
            lambda j=job_id: stack.job(j)["status"] == "completed", 60, f"job {job_id} to complete", interval=0.2
        )
    started = [event_ms(stack, j, EventType.RUN_STARTED) for j in jobs]
    finished = [event_ms(stack, j, EventType.RUN_FINISHED) for j in jobs]
    assert max(started) < min(finished), f"the runs did not overlap: started {started}, finished {finished}"
    log = worker.log_path.read_text()
    assert log.count(UPKEEP) == 1, log  # the supervisor's; its children neither sweep nor fan out
    assert log.count("worker pool: started worker pool-") == 2, log
    # This host's metrics, from both children's horses, on the pool's own port (no web server on this host).
    url = f"http://127.0.0.1:{port}/metrics"
    assert requests.get(url, timeout=10).status_code == 401
    scraped = requests.get(url, headers={"Authorization": "Bearer pool-token"}, timeout=10)
    assert scraped.status_code == 200
    assert value(parse(scraped.text), "copydesk_runs_total", outcome="completed") == 2

    # A child that dies is restarted; the pool goes on.
    victim = worker_children(worker.pid)[0]
    os.kill(victim, signal.SIGKILL)
    wait_until(
        lambda: len(worker_children(worker.pid)) == 2 and victim not in worker_children(worker.pid),
        30,
        "the killed worker process to be replaced",
    )
    # The supervisor says so; read the log until it has (its children write to the same file meanwhile).
    wait_until(lambda: "restarting it" in worker.log_path.read_text(), 30, "the supervisor to log the restart")

    # SIGTERM: a run in flight finishes within the grace, then every process exits.
    asked_third = threading.Event()  # answered only after the SIGTERM, so the run is surely in flight
    standin.script(Hang(120, until=asked_third), Reply(text="Third answer."))
    third = stack.create("Question 3").json()["id"]
    wait_until(lambda: standin.requests[2:], 30, "the third run's model call")
    worker.signal(signal.SIGTERM)
    wait_until(lambda: "passing it on to" in worker.log_path.read_text(), 30, "the pool to pass the SIGTERM on")
    asked_third.set()
    assert worker.proc.wait(timeout=60) == 0, worker.log()
    assert stack.job(third)["status"] == "completed"
    assert worker.log_path.read_text().count(UPKEEP) == 1


def test_a_pool_whose_workers_refuse_an_evicting_redis_stops_with_2(tmp_path):
    port = free_port()
    env = Settings(redis_url=f"redis://127.0.0.1:{port}/0", data_dir=tmp_path / "data").to_env()
    # Redis is down at start: the start-up checks cannot look at its policy; each worker checks at first contact.
    with WorkerProcess(env, tmp_path / "pool.log", "--processes", "2", "--name", "pool") as worker:
        wait_until(lambda: len(worker_children(worker.pid)) == 2, 30, "two worker processes")
        with running_redis(tmp_path / "redis", "--maxmemory-policy", "allkeys-lru", *NO_PERSISTENCE, port=port):
            assert worker.proc.wait(timeout=60) == 2, worker.log()
    log = worker.log_path.read_text()
    assert "refused to start; stopping the pool" in log and "maxmemory-policy is allkeys-lru" in log


@pytest.mark.parametrize(
    "args, says",
    [
        (["--processes", "0"], "--processes: must be at least 1, not 0"),
        (["--processes", "two"], "--processes: must be a whole number, not 'two'"),
        (["--processes", "2", "--burst"], "--burst runs one worker process; leave out --processes"),
    ],
)
def test_bad_process_counts_get_a_clear_error(args, says, capsys, monkeypatch, tmp_path):
    import logging

    from bot.cli import main

    monkeypatch.setenv("COPYDESK_DATA_DIR", str(tmp_path / "data"))
    root = logging.getLogger()  # main() sets up logging for its process; this one's is restored afterwards
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", root.level)
    try:
        code = main(["worker", *args])
    except SystemExit as exit_:  # argparse's own refusals
        code = exit_.code
    assert code == 2 and says in capsys.readouterr().err
