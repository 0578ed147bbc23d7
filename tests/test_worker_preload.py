"""A worker imports the model SDKs and builds its context once, before it forks: its work horses import neither
SDK, and share its Redis pool safely (redis-py reconnects in the child)."""

import os
import re
import signal
import threading
import time

import redis

from bot.rqworker import hold_pool_across_fork
from tests.harness import wait_until
from tests.model_standin import ModelStandIn, Reply, ToolUse
from tests.worker_processes import WorkerProcess

HORSE_IMPORTS = re.compile(r"work horse: job (\S+) imported (\d+) new modules \(([^)]*)\)")


def test_work_horses_import_no_model_sdk_and_share_the_workers_context(stack_factory, tmp_path):
    with ModelStandIn() as standin:
        stack = stack_factory(
            model="openai:gpt-test",
            models=("openai:gpt-test", "anthropic:claude-test"),
            openai_api_key="sk-test",
            openai_base_url=standin.openai_base_url,
            anthropic_api_key="sk-ant-test",
            anthropic_base_url=standin.anthropic_base_url,
        )
        env = {**os.environ, **stack.env()}
        with WorkerProcess(env, tmp_path / "worker.log", "--name", "w1") as worker:
            jobs = []
            for model in ("openai:gpt-test", "anthropic:claude-test", "openai:gpt-test"):
                standin.script(
                    Reply(tool_calls=[ToolUse("write_file", {"path": "docs/a.md", "content": "# A\n"})]),
                    Reply(tool_calls=[ToolUse("finish", {"title": "A", "summary": "Added A."})]),
                )
                jobs.append(stack.create(model=model).json()["id"])
                wait_until(
                    lambda job_id=jobs[-1]: stack.job(job_id)["status"] != "active",
                    60,
                    f"the {model} run",
                    interval=0.05,
                )
                assert stack.job(jobs[-1])["status"] == "completed", worker.log()
            log = worker.log_path.read_text(errors="replace")
    assert "model providers imported before forking: anthropic, openai" in log
    horses = {job_id: (int(count), names.split(", ")) for job_id, count, names in HORSE_IMPORTS.findall(log)}
    assert set(jobs) <= set(horses), log
    for job_id in jobs:
        count, names = horses[job_id]
        assert (count, names) == (0, ["none"]), log  # a run that imported an SDK shows hundreds


def test_tasks_use_the_workers_context_inside_it_and_build_their_own_outside(stack):
    from bot import tasks

    with tasks.in_worker(stack.ctx):
        assert tasks._context() is stack.ctx
    outside = tasks._context()
    assert outside is not stack.ctx and outside.settings == stack.ctx.settings


def test_a_fork_waits_for_the_pool_lock_so_the_forked_child_can_use_the_parents_redis_client(redis_url):
    """redis-py resets an inherited pool under its lock: a child forked while another thread held it would wait
    for ever, unless the fork waits for the lock (hold_pool_across_fork)."""
    client = redis.Redis.from_url(redis_url)
    client.ping()
    pool = client.connection_pool
    hold_pool_across_fork(pool)
    held, release = threading.Event(), threading.Event()

    def hold():
        with pool._lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    threading.Timer(0.2, release.set).start()  # the fork below waits for this
    pid = os.fork()
    if pid == 0:
        try:
            client.set("cd:test:child", str(os.getpid()))
        finally:
            os._exit(0 if client.get("cd:test:child") == str(os.getpid()).encode() else 1)
    holder.join(10)
    deadline = time.monotonic() + 10
    while (status := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    if status[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError("the forked child never got a Redis connection")
    assert os.waitstatus_to_exitcode(status[1]) == 0
    assert client.ping() and client.get("cd:test:child")  # the parent's connections still work
