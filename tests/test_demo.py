"""`copydesk demo` on a shared Redis: its own queue and account, nothing of it left behind unless `--keep`."""

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from rq import Queue, Worker

from service.automations.store import INDEXED_KEY
from tests.harness import lines_until, wait_until
from tests.process_guard import live_children
from tests.web_process import COPYDESK

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running


@pytest.fixture
def demo_env(redis_url, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COPYDESK_", "OPENAI_", "ANTHROPIC_"))}
    env.update(COPYDESK_REDIS_URL=redis_url, COPYDESK_DATA_DIR=str(tmp_path / "data"))
    return env


def demo(env, *args) -> str:
    proc = subprocess.run([COPYDESK, "demo", *args], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def keys(redis_client) -> set[str]:
    return {k.decode() for k in redis_client.scan_iter(count=1000)}


def test_the_demo_keeps_off_a_real_worker_and_leaves_nothing_behind(demo_env, redis_client, tmp_path):
    # An operator's worker on the shared Redis, serving the default queues.
    real = subprocess.Popen(
        [COPYDESK, "worker", "--name", "operators"], env=demo_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(lambda: Worker.all(queue=Queue("copydesk", connection=redis_client)), 60, "the operator's worker")
        before = keys(redis_client)
        out = demo(demo_env)
        (worker,) = Worker.all(queue=Queue("copydesk", connection=redis_client))
        assert worker.successful_job_count == 0 and worker.failed_job_count == 0  # it never saw the demo's job
    finally:
        real.terminate()
        real.wait(timeout=60)

    account = re.search(r"\(account (demo-[0-9a-f]+)\)", out).group(1)
    project = re.search(r"Project\s+(prj_\w+)", out).group(1)
    assert '"status": "completed"' in out and "Removed the demo's project, key and records" in out
    left = keys(redis_client) - before
    # What may stay expires by itself: RQ's record of the demo's stopped worker; or is any Copydesk's: the workers'
    # shared sweep turn, the mark of a first automation tick. (-1: a key that never expires; -2: one that expired
    # since it was listed.)
    kept = {"rq:clean_groups", INDEXED_KEY}
    assert all(redis_client.ttl(k) != -1 for k in left - kept), {k: redis_client.ttl(k) for k in left}
    assert not [k for k in keys(redis_client) if project in k or account in k or f"copydesk-{account}" in k]
    assert not redis_client.zrange("cd:projects", 0, -1) and not redis_client.zrange("cd:apikeys", 0, -1)
    assert not list(tmp_path.glob("copydesk-demo-*"))


def test_the_scripted_demo_says_the_scripted_model_made_its_change_and_keep_keeps_it(demo_env, redis_client):
    out = demo(demo_env, "--keep")
    assert "The scripted model made this change: it replayed the bundled demo script's tool calls" in out
    assert "changed docs/index.md, docs/install.md, docs/troubleshooting.md, mkdocs.yml." in out
    assert "Agent's summary" not in out  # the script's canned words are not an account of this run
    project = re.search(r"Project\s+(prj_\w+)", out).group(1)
    folder = re.search(r"Kept the demo's files in (\S+),", out).group(1)
    try:
        assert redis_client.exists(f"cd:project:{project}") and redis_client.zrange("cd:apikeys", 0, -1)
        assert os.path.isdir(os.path.join(folder, "acme-widgets.git"))
    finally:
        subprocess.run(["rm", "-rf", folder], check=True)


@pytest.mark.parametrize(
    ("stop", "after"),
    [("kill", "Ctrl-C"), ("ctrl-c", "Ctrl-C"), ("ctrl-c", "POST /v2/agent/")],
    ids=["kill", "ctrl-c", "ctrl-c-while-the-job-runs"],
)
def test_a_stopped_demo_stops_its_web_server_and_worker_and_leaves_nothing_behind(stop, after, demo_env, redis_client):
    # `kill` (SIGTERM) reaches only the demo's own process: the demo must stop its web server and worker itself.
    # Ctrl-C in a terminal reaches the whole process group, so the worker is told to stop twice. Sent `after` the
    # demo printed that line: when it serves the dashboard, or while its job runs.
    before = keys(redis_client)
    proc = subprocess.Popen(
        [COPYDESK, "demo", "--serve"],
        env=demo_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        process_group=0,
    )
    lines: list[str] = []
    children: list[int] = []
    try:
        lines = lines_until(proc.stdout, after, 180)
        children = list(live_children(proc.pid))
        assert len(children) == 2, children  # the web server and the worker
        if stop == "kill":
            proc.send_signal(signal.SIGTERM)
        else:
            os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait(timeout=10)
        left = [pid for pid in children if Path(f"/proc/{pid}").exists()]
        for pid in left:  # what a demo that did not stop them left running
            os.kill(pid, signal.SIGKILL)
    out = "".join(lines) + rest
    assert "Removed the demo's project, key and records" in out and "Traceback" not in out, out
    # Stopped while serving the dashboard: it ran its course (0); before: as a shell reports a Ctrl-C (130).
    assert (proc.returncode, "Stopping the demo." in out) in ((0, True), (130, False)), out
    assert after != "Ctrl-C" or proc.returncode == 0, out
    assert not left, out
    # What any Copydesk on this Redis keeps: the schema stamp, the event outbox (none of the demo's events), the
    # workers' shared sweep turn, the mark that every automation is in the trigger indexes (set by a worker's
    # first automation tick, which a demo on a slow machine lives to see). Anything else of the demo's must
    # expire by itself.
    kept = {"cd:schema", "cd:events:outbox", "rq:clean_groups", INDEXED_KEY}
    left_keys = keys(redis_client) - before - kept
    assert all(redis_client.ttl(k) != -1 for k in left_keys), {k: redis_client.ttl(k) for k in left_keys}
    project = re.search(r"Project\s+(prj_\w+)", out).group(1)
    assert not [k for k in left_keys if project in k]
    assert project.encode() not in b"".join(v for _, e in redis_client.xrange("cd:events:outbox") for v in e.values())
    assert not redis_client.smembers("rq:workers")
