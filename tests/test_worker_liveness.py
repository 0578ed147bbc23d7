"""Worker heartbeats: `copydesk doctor` lists real worker processes with their current job, and the liveness
probe tells a running worker from a frozen or stopped one, with or without Redis."""

import json
import os
import signal
import subprocess
import threading
import time

import pytest
import redis
import rq

from bot import context
from bot.heartbeat import WorkerHeartbeat, probe
from service.settings import Settings
from service.store.workers import WorkerRegistry
from tests.conftest import free_port
from tests.harness import wait_until
from tests.model_standin import Hang, ModelStandIn, Reply, ToolUse
from tests.redis_servers import NO_PERSISTENCE, running_redis
from tests.web_process import COPYDESK
from tests.worker_processes import WorkerProcess

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running


def doctor(env: dict) -> dict:
    proc = subprocess.run([COPYDESK, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=60)
    return json.loads(proc.stdout)


def listed(env: dict, name: str, *, cli: bool = False) -> dict | None:
    """Worker `name` as `copydesk doctor --json` lists it (`cli`), or as its registry reads (quicker to poll)."""
    if cli:
        workers = doctor(env)["workers"] or []
    else:
        client = redis.Redis.from_url(env["COPYDESK_REDIS_URL"])
        workers = [w.to_json() for w in WorkerRegistry(client).all()]
        client.close()
    return next((w for w in workers if w["name"] == name), None)


def alive(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [COPYDESK, "doctor", "--worker-alive", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_doctor_lists_a_worker_its_job_and_heartbeat_and_the_probe_follows_it(stack_factory, tmp_path):
    with ModelStandIn() as standin:
        stack = stack_factory(
            model="openai:gpt-test", openai_api_key="sk-test", openai_base_url=standin.openai_base_url
        )
        env = {**os.environ, **stack.env(), "COPYDESK_WORKER_HEARTBEAT": "1"}
        with WorkerProcess(env, tmp_path / "worker.log", "--name", "w1") as worker:
            idle = wait_until(
                lambda: (w := listed(env, "w1")) and w["state"] == "idle" and w,
                30,
                "an idle worker's heartbeat",
                interval=0.1,
            )
            assert idle["job"] is None and idle["pid"] == worker.pid
            assert idle["stale"] is False and idle["secondsSinceHeartbeat"] < 5
            assert alive(env, "w1").returncode == 0

            # The model call hangs until the test has seen the busy worker, however long that takes.
            answer = threading.Event()
            standin.script(
                Hang(120, until=answer),
                Reply(tool_calls=[ToolUse("write_file", {"path": "docs/a.md", "content": "# A\n"})]),
                Reply(tool_calls=[ToolUse("finish", {"title": "A", "summary": "Added A."})]),
            )
            job = stack.create().json()
            busy = wait_until(
                lambda: (w := listed(env, "w1")) and w["job"] == job["id"] and w,
                30,
                "the worker to report its job",
                interval=0.1,
            )
            assert busy["state"] == "busy" and busy["task"] == "process_job"
            wait_until(lambda: standin.requests, 30, "the run's model call")
            assert listed(env, "w1", cli=True)["job"] == job["id"]
            answer.set()
            wait_until(lambda: stack.job(job["id"])["status"] == "completed", 30, "the job to complete", interval=0.1)
            wait_until(
                lambda: (w := listed(env, "w1")) and w["job"] is None, 30, "the worker to be idle again", interval=0.1
            )

            # Frozen (as a stuck host or a SIGSTOP would): the probe fails once the heartbeat is old, and the
            # doctor calls the worker stale after three heartbeat intervals (3 s here).
            worker.signal(signal.SIGSTOP)
            try:
                wait_until(
                    lambda: not probe(stack.ctx.settings, "w1", max_age=2)[0], 20, "the probe to fail", interval=0.1
                )
                stale = wait_until(
                    lambda: (w := listed(env, "w1")) and w["stale"] and w,
                    30,
                    "the doctor to see it stale",
                    interval=0.1,
                )
                assert stale["secondsSinceHeartbeat"] >= 3
                proc = alive(env, "w1", "--max-age", "2")
                assert proc.returncode == 1 and "w1's last heartbeat was" in proc.stderr
                assert (
                    "STALE"
                    in subprocess.run([COPYDESK, "doctor"], env=env, capture_output=True, text=True, timeout=60).stdout
                )
            finally:
                worker.signal(signal.SIGCONT)
            wait_until(
                lambda: probe(stack.ctx.settings, "w1", max_age=2)[0], 30, "the probe to pass again", interval=0.1
            )

            assert worker.stop(timeout=30) == 0
        # A worker that stopped cleanly is gone from the list and from the probe.
        assert listed(env, "w1", cli=True) is None
        gone = alive(env, "w1")
        assert gone.returncode == 1 and "no heartbeat file for worker w1" in gone.stderr


def test_heartbeats_go_on_in_the_file_while_redis_is_down_and_reach_it_again(tmp_path):
    port = free_port()
    with running_redis(tmp_path / "redis", *NO_PERSISTENCE, port=port) as url:
        ctx = context.build(Settings(redis_url=url + "/0", data_dir=tmp_path / "data", worker_heartbeat_seconds=1))
        worker = rq.Worker([rq.Queue("q", connection=ctx.services.redis)], connection=ctx.services.redis)
        heartbeat = WorkerHeartbeat(ctx, name="w2")
        heartbeat.watch(worker)
        first = heartbeat.beat()
        assert [w.name for w in WorkerRegistry(ctx.services.redis).all()] == ["w2"]
    # Redis is down: the beat is still written to the file, and nothing is raised.
    time.sleep(0.05)
    down = heartbeat.beat()
    assert down.beat_at > first.beat_at
    assert probe(ctx.settings, "w2", max_age=5)[0] is True
    with pytest.raises(redis.ConnectionError):
        WorkerRegistry(ctx.services.redis).all()
    with running_redis(tmp_path / "redis", *NO_PERSISTENCE, port=port):
        again = heartbeat.beat()
        assert [(w.name, w.beat_at) for w in WorkerRegistry(ctx.services.redis).all()] == [("w2", again.beat_at)]


def test_the_probe_without_a_name_needs_a_fresh_worker_of_this_host(redis_url, tmp_path):
    ctx = context.build(Settings(redis_url=redis_url, data_dir=tmp_path / "data"))
    assert probe(ctx.settings, None) == (
        False,
        f"no heartbeat file of a worker on {os.uname().nodename} in {tmp_path / 'data' / 'workers'}",
    )
    worker = rq.Worker([rq.Queue("q", connection=ctx.services.redis)], connection=ctx.services.redis)
    with WorkerHeartbeat(ctx, name="w3") as heartbeat:
        heartbeat.watch(worker)
        ok, why = probe(ctx.settings, None)
        assert ok and why.startswith("worker w3 beat")
        # The thread beats every 5 s by default: its beat gets older than 1 s (one beating more often never would).
        wait_until(
            lambda: not probe(ctx.settings, None, max_age=1)[0], 30, "the beat to be more than 1 s old", interval=0.1
        )
        assert probe(ctx.settings, None)[0] is True  # within three of its intervals
    assert not (tmp_path / "data" / "workers" / "w3.json").exists()
    assert WorkerRegistry(ctx.services.redis).all() == []
