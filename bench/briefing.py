"""Measures what a run pays to work out the docs site and overview of a start tree from scratch (the first run on
a repository, or a base branch that gained or lost files, so the last tree's entry cannot be reused), as the
repository grows. bench/workspace.py measures the usual run, whose entry is derived from the last tree's.

Run by hand: `.venv/bin/python bench/briefing.py [--sizes 5000,50000] [--repeat 5]`. Prints the median and the
fastest, in milliseconds.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from workspace import generate, plain_env  # noqa: E402  (bench/workspace.py: the same generated repository)

from service.agent.briefing import _site_and_overview  # noqa: E402
from service.workspace.git import Git, Remote  # noqa: E402
from service.workspace.mirror import MirrorStore  # noqa: E402


def measure(files: int, repeat: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-") as tmp_s:
        tmp = Path(tmp_s)
        bare = tmp / "source.git"
        generate(bare, files, plain_env(tmp))
        remote = Remote(str(bare), trusted=True)
        mirror = MirrorStore(tmp / "mirrors", Git()).mirror(remote)
        with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads, mirror.open(heads["base"]) as ws:
            ws.list_files()  # the listing is loaded once per run anyway; not what is measured here
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                _site_and_overview(ws, "")
                times.append(time.perf_counter() - start)
        return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,50000", help="comma-separated file counts")
    parser.add_argument("--repeat", type=int, default=5, help="measurements per size")
    args = parser.parse_args()
    print(f"{'files':>7} {'median ms':>10} {'fastest ms':>11}")
    for files in (int(s) for s in args.sizes.split(",") if s):
        times = measure(files, args.repeat)
        print(f"{files:>7} {statistics.median(times) * 1000:>10.1f} {min(times) * 1000:>11.1f}")


if __name__ == "__main__":
    main()
