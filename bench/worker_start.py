"""Measures a run's start-up in a real `copydesk worker`: from queueing a job to the model's first request.

Run by hand: `.venv/bin/python bench/worker_start.py [--runs 6]`. One worker process serves jobs one at a time,
idle (blocked on its queue) when each is queued, so the time is dequeue to first model request plus a queue
hop. Each job's model answers at once and the run ends. Figures per provider (OpenAI, Anthropic): the median
and the range over the runs, and the modules the work horse imported during each run (from the worker's log).
"""

import argparse
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot import context  # noqa: E402
from service.models import JobStatus  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from tests.conftest import commit_files  # noqa: E402
from tests.harness import wait_until  # noqa: E402
from tests.model_standin import ModelStandIn, Reply  # noqa: E402
from tests.redis_servers import NO_PERSISTENCE, running_redis  # noqa: E402
from tests.worker_processes import WorkerProcess  # noqa: E402

MODELS = {"openai": "openai:gpt-bench", "anthropic": "anthropic:claude-bench"}
IMPORTED = re.compile(r"imported (\d+) new modules \(([^)]*)\)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6, help="measured runs per provider (after one warm-up)")
    args = parser.parse_args()
    arrivals: dict[str, float] = {}
    lock = threading.Lock()

    def answer(body: dict):
        text = str(body["messages"])
        found = re.search(r"bench run ([a-z]+-\d+)", text)
        if found:
            with lock:
                arrivals.setdefault(found.group(1), time.monotonic())
        return 0, Reply(text="Nothing to change.")

    with tempfile.TemporaryDirectory(prefix="copydesk-bench-start-") as tmp_s, ModelStandIn() as standin:
        tmp = Path(tmp_s)
        standin.respond(answer)
        with running_redis(tmp / "redis", *NO_PERSISTENCE) as base:
            settings = Settings(
                redis_url=f"{base}/0", data_dir=tmp / "data", model=MODELS["openai"], models=tuple(MODELS.values())
            )
            git = Git()
            bare = tmp / "docs.git"
            git.run("init", "--bare", "-q", str(bare))
            commit_files(git, bare, {"README.md": "# Docs\n", "docs/index.md": "# Home\n"})
            ctx = context.build(settings, environ={})
            project = ctx.local.register(ctx.services.projects, path=bare, ref="main")
            env = {
                "COPYDESK_REDIS_URL": settings.redis_url,
                "COPYDESK_DATA_DIR": str(settings.data_dir),
                "COPYDESK_MODEL": settings.model,
                "COPYDESK_MODELS": ",".join(settings.models),
                "OPENAI_API_KEY": "sk-bench",
                "OPENAI_BASE_URL": standin.openai_base_url,
                "ANTHROPIC_API_KEY": "sk-ant-bench",
                "ANTHROPIC_BASE_URL": standin.anthropic_base_url,
            }
            with WorkerProcess(env, tmp / "worker.log", "--name", "bench") as worker:
                results = {}
                for provider, model in MODELS.items():
                    times = []
                    for i in range(args.runs + 1):
                        tag = f"{provider}-{i}"
                        started = time.monotonic()
                        job, _ = ctx.services.jobs.create(
                            project, prompt=f"bench run {tag}", model=model, ref="main", as_draft=False
                        )
                        ctx.services.dispatcher.kick(job.id)
                        wait_until(
                            lambda job_id=job.id: ctx.services.jobs.get(job_id).status is not JobStatus.ACTIVE,
                            60,
                            f"the run of {tag}",
                            interval=0.01,
                        )
                        assert ctx.services.jobs.get(job.id).status is JobStatus.COMPLETED, worker.log()
                        if i:  # the first run of each provider only warms the worker up
                            times.append(arrivals[tag] - started)
                    results[provider] = times
                imported = IMPORTED.findall(worker.log_path.read_text(errors="replace"))
    print(f"queue to first model request, {args.runs} runs each (load {os.getloadavg()[0]:.2f}):")
    for provider, times in results.items():
        print(
            f"  {provider:>10}: median {statistics.median(times) * 1000:6.0f} ms "
            f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})"
        )
    if imported:
        print(f"  modules imported per run in the work horse: {[int(n) for n, _ in imported]}")
        print(f"  top-level packages of the last run's: {imported[-1][1]}")


if __name__ == "__main__":
    main()
