"""A worker imports the model SDKs and builds its context once, before it forks: its work horses import neither
SDK, and share its Redis pool safely (redis-py reconnects in the child)."""

import os
import re

from tests.harness import wait_until
from tests.model_standin import ModelStandIn, Reply, ToolUse
from tests.worker_processes import WorkerProcess

HORSE_IMPORTS = re.compile(r"work horse: job (\S+) imported (\d+) new modules \(([^)]*)\)")


def test_work_horses_import_no_model_sdk_and_share_the_workers_context(stack_factory, tmp_path):
    with ModelStandIn() as standin:
        stack = stack_factory(model="openai:gpt-test", models=("openai:gpt-test", "anthropic:claude-test"),
                              openai_api_key="sk-test", openai_base_url=standin.openai_base_url,
                              anthropic_api_key="sk-ant-test", anthropic_base_url=standin.anthropic_base_url)
        env = {**os.environ, **stack.env()}
        with WorkerProcess(env, tmp_path / "worker.log", "--name", "w1") as worker:
            jobs = []
            for model in ("openai:gpt-test", "anthropic:claude-test", "openai:gpt-test"):
                standin.script(Reply(tool_calls=[ToolUse("write_file", {"path": "docs/a.md", "content": "# A\n"})]),
                               Reply(tool_calls=[ToolUse("finish", {"title": "A", "summary": "Added A."})]))
                jobs.append(stack.create(model=model).json()["id"])
                wait_until(lambda job_id=jobs[-1]: stack.job(job_id)["status"] != "active", 60,
                           f"the {model} run", interval=0.05)
                assert stack.job(jobs[-1])["status"] == "completed", worker.log()
            log = worker.log_path.read_text(errors="replace")
    assert "model providers imported before forking: anthropic, openai" in log
    horses = {job_id: (int(count), names.split(", ")) for job_id, count, names in HORSE_IMPORTS.findall(log)}
    assert set(jobs) <= set(horses), log
    for job_id in jobs:
        count, names = horses[job_id]
        assert not {"openai", "anthropic", "httpx2", "pydantic"} & set(names), log
        assert count < 20, log  # a run that imported an SDK shows hundreds


def test_tasks_use_the_workers_context_inside_it_and_build_their_own_outside(stack):
    from bot import tasks

    with tasks.in_worker(stack.ctx):
        assert tasks._context() is stack.ctx
    outside = tasks._context()
    assert outside is not stack.ctx and outside.settings == stack.ctx.settings
