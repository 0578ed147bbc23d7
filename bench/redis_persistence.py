"""Measures what Redis persistence costs an accepted job: the store's create (job + first message, one transaction)
against redis-servers without persistence, with AOF `appendfsync everysec` and with AOF `appendfsync always`.

Run by hand: `.venv/bin/python bench/redis_persistence.py [--jobs 500] [--dir /path/on/the/disk/to/measure]`.
Prints the median and p99 time per create, and the ratio to the run without persistence.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot import context  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from tests.conftest import commit_files  # noqa: E402
from tests.redis_servers import NO_PERSISTENCE, running_redis  # noqa: E402

MODES = {
    "no persistence": NO_PERSISTENCE,
    "AOF everysec": ("--save", "", "--appendonly", "yes", "--appendfsync", "everysec"),
    "AOF always": ("--save", "", "--appendonly", "yes", "--appendfsync", "always"),
}


def measure(workdir: Path, args: tuple[str, ...], jobs: int) -> list[float]:
    """Seconds per `JobStore.create` for `jobs` creates against a redis-server started with `args`."""
    git = Git()
    bare = workdir / "docs.git"
    git.run("init", "--bare", "-q", str(bare))
    commit_files(git, bare, {"README.md": "# Docs\n"})
    with running_redis(workdir / "redis", *args) as url:
        ctx = context.build(Settings(redis_url=url + "/0", data_dir=workdir / "data"))
        project = ctx.local.register(ctx.services.projects, path=bare, ref="main")
        times = []
        for n in range(jobs):
            started = time.perf_counter()
            ctx.services.jobs.create(
                project, prompt=f"Improve page {n}", model="scripted:demo", ref="main", as_draft=False
            )
            times.append(time.perf_counter() - started)
        ctx.services.redis.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--dir", type=Path, default=None, help="where Redis writes its files (default: a temp dir)")
    args = parser.parse_args()
    rows = []
    for mode, redis_args in MODES.items():
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            times = sorted(measure(Path(tmp), redis_args, args.jobs))
        rows.append((mode, statistics.median(times), times[int(len(times) * 0.99) - 1]))
    base = rows[0][1]
    print(f"{'mode':16} {'median ms':>10} {'p99 ms':>8} {'x baseline':>10}   ({args.jobs} creates each)")
    for mode, median, p99 in rows:
        print(f"{mode:16} {median * 1000:10.2f} {p99 * 1000:8.2f} {median / base:10.2f}")


if __name__ == "__main__":
    main()
