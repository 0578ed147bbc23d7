"""Measures the memory one run takes, for sizing `copydesk worker --processes N`.

A real `copydesk worker` runs jobs on a generated repository (docs and code, `--sizes` files) with a model
stand-in that lists, reads, searches, writes a page, checks the docs and finishes. Every 20 ms the bench reads,
from /proc, the work horse and everything it started (git cat-file, git grep...): their summed proportional set
size (PSS: shared pages split between the processes that share them) and the horse's own peak RSS (VmHWM).
The worker process itself (it stays between runs) is measured too. The figures a host needs for N processes:
N x (worker + peak run).

Run by hand: `.venv/bin/python bench/worker_memory.py [--sizes 500,20000] [--runs 3]`.
"""

import argparse
import os
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.first_request import generate, repository_files  # noqa: E402
from bench.workspace import plain_env  # noqa: E402
from bot import context  # noqa: E402
from service.settings import Settings  # noqa: E402
from tests.model_standin import ModelStandIn, Reply, ToolUse  # noqa: E402
from tests.redis_servers import NO_PERSISTENCE, running_redis  # noqa: E402
from tests.worker_processes import WorkerProcess, wait_until  # noqa: E402

MIB = 1024 * 1024


def agent_turns(n: int) -> list[Reply]:
    """One run's model turns: look around, read, search, write a page, check the docs, finish."""
    return [
        Reply(tool_calls=[ToolUse("list_files", {"pattern": "docs/**/*.md"})]),
        Reply(tool_calls=[ToolUse("read_file", {"path": "docs/index.md"})]),
        Reply(tool_calls=[ToolUse("search", {"pattern": "Page [0-9]+"})]),
        Reply(
            tool_calls=[
                ToolUse("write_file", {"path": f"docs/bench-{n}.md", "content": f"# Bench {n}\n\n" + "Words. " * 2000})
            ]
        ),
        Reply(tool_calls=[ToolUse("check_docs", {})]),
        Reply(tool_calls=[ToolUse("finish", {"title": f"Bench {n}", "summary": "Added a page."})]),
    ]


def _kib(path: Path, field: str) -> int:
    """A `field:  N kB` line of a /proc status or smaps_rollup file, in bytes (0 when the process is gone)."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            todo += [int(c) for c in Path(f"/proc/{current}/task/{current}/children").read_text().split()]
        except OSError:
            continue
    return found


class Sampler:
    """Samples the worker's horse (with its children) until stopped; keeps the peaks."""

    def __init__(self, worker: WorkerProcess) -> None:
        self.worker = worker
        self.run_pss = self.horse_hwm = self.worker_rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(0.02):
            self.worker_rss = max(self.worker_rss, _kib(Path(f"/proc/{self.worker.pid}/status"), "VmRSS"))
            horse = self.worker.horse_pid()
            if horse is None:
                continue
            pss = sum(_kib(Path(f"/proc/{pid}/smaps_rollup"), "Pss") for pid in _descendants(horse))
            self.run_pss = max(self.run_pss, pss)
            self.horse_hwm = max(self.horse_hwm, _kib(Path(f"/proc/{horse}/status"), "VmHWM"))


def measure(size: int, runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-memory-") as tmp, ModelStandIn() as standin:
        root = Path(tmp)
        bare = root / "docs.git"
        generate(bare, repository_files(size), plain_env(root))
        with running_redis(root / "redis", *NO_PERSISTENCE) as base:
            settings = Settings(
                redis_url=f"{base}/0",
                data_dir=root / "data",
                model="openai:bench",
                openai_api_key="sk-bench",
                openai_base_url=standin.openai_base_url,
            )
            ctx = context.build(settings, environ={})
            project = ctx.local.register(ctx.services.projects, path=bare, ref="main")
            env = {
                "COPYDESK_REDIS_URL": settings.redis_url,
                "COPYDESK_DATA_DIR": str(settings.data_dir),
                "COPYDESK_MODEL": settings.model,
                "OPENAI_API_KEY": "sk-bench",
                "OPENAI_BASE_URL": standin.openai_base_url,
            }
            with WorkerProcess({**os.environ, **env}, root / "worker.log") as worker, Sampler(worker) as sampler:
                for n in range(runs):
                    standin.script(*agent_turns(n))
                    job, _ = ctx.services.jobs.create(
                        project, prompt=f"Add page {n}", model=settings.model, ref="main", as_draft=False
                    )
                    ctx.services.dispatcher.kick(job.id)
                    wait_until(
                        lambda j=job.id: ctx.services.jobs.get(j).status.value != "active",
                        300,
                        f"run {n}",
                        interval=0.1,
                    )
                    status = ctx.services.jobs.get(job.id)
                    if status.status.value != "completed":
                        raise SystemExit(f"run {n} ended {status.status.value}: {status.error}\n{worker.log()}")
                return {
                    "files": size,
                    "run_pss_mib": sampler.run_pss / MIB,
                    "horse_hwm_mib": sampler.horse_hwm / MIB,
                    "worker_rss_mib": sampler.worker_rss / MIB,
                }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,20000", help="repository sizes in files, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="runs per size (the first one also clones the mirror)")
    args = parser.parse_args()
    print(f"{'files':>7}  {'run peak PSS':>13}  {'horse peak RSS':>15}  {'worker RSS':>11}")
    for size in (int(s) for s in args.sizes.split(",")):
        found = measure(size, args.runs)
        print(
            f"{found['files']:>7}  {found['run_pss_mib']:>10.1f} MiB  {found['horse_hwm_mib']:>12.1f} MiB  "
            f"{found['worker_rss_mib']:>8.1f} MiB"
        )


if __name__ == "__main__":
    main()
