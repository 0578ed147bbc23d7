"""Measures what a run pays to work out the docs site and overview of a start tree from scratch (the first run on
a repository, or a base branch that gained or lost files, so the last tree's entry cannot be reused), as the
repository grows, and what a run pays when its start tree gained and lost a few files since the last tree whose
entry is kept (`brief` as a run calls it, the listing already loaded). bench/workspace.py measures the usual run,
whose files only changed content, so its entry is derived from the last tree's.

Run by hand: `.venv/bin/python bench/briefing.py [--sizes 5000,50000] [--repeat 5]`. Prints the median and the
fastest, in milliseconds, of each.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from workspace import (  # noqa: E402  (bench/workspace.py: the same generated repository)
    forget_process_caches,
    generate,
    page_path,
    plain_env,
)

from service.agent.briefing import brief  # noqa: E402
from service.agent.briefing_facts import site_and_overview  # noqa: E402
from service.workspace.git import Git, Remote  # noqa: E402
from service.workspace.mirror import MirrorStore  # noqa: E402


def measure(files: int, repeat: int) -> tuple[list[float], list[float]]:
    """(from-scratch times, times of a briefing on a tree that gained and lost a few files since the last one)."""
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-") as tmp_s:
        tmp = Path(tmp_s)
        bare = tmp / "source.git"
        env = plain_env(tmp)
        generate(bare, files, env)
        remote = Remote(str(bare), trusted=True)
        mirror = MirrorStore(tmp / "mirrors", Git()).mirror(remote)
        with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads, mirror.open(heads["base"]) as ws:
            ws.list_files()  # the listing is loaded once per run anyway; not what is measured here
            scratch = []
            for _ in range(repeat):
                start = time.perf_counter()
                site_and_overview(ws, "")
                scratch.append(time.perf_counter() - start)
            brief(ws, "Edit", base_commit=None)  # the entry the next trees' are worked out from
        changed = []
        for n in range(repeat):
            _add_and_remove(bare, env, files, n)
            forget_process_caches()
            with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads, mirror.open(heads["base"]) as ws:
                ws.list_files()
                start = time.perf_counter()
                brief(ws, "Edit", base_commit=None)
                changed.append(time.perf_counter() - start)
        return scratch, changed


def _add_and_remove(bare: Path, env: dict[str, str], files: int, n: int) -> None:
    """Move main by a commit that adds three pages and removes two, as a base branch gains and loses pages."""
    lines = [f"commit refs/heads/main\ncommitter Bench <bench@example.com> {1700000100 + n} +0000\ndata 4\nmove\n"]
    lines.append("from refs/heads/main^0\n")
    for k in range(3):
        data = f"# Added {n}-{k}\n"
        lines.append(f"M 100644 inline docs/added/round-{n}-{k}.md\ndata {len(data)}\n{data}\n")
    for k in range(2):
        lines.append(f"D {page_path((n * 2 + k) * 97 % files)}\n")
    script = "".join(lines) + "done\n"
    subprocess.run(["git", f"--git-dir={bare}", "fast-import", "--quiet"], input=script.encode(), check=True, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,50000", help="comma-separated file counts")
    parser.add_argument("--repeat", type=int, default=5, help="measurements per size")
    args = parser.parse_args()
    print(f"{'files':>7} {'case':>22} {'median ms':>10} {'fastest ms':>11}")
    for files in (int(s) for s in args.sizes.split(",") if s):
        scratch, changed = measure(files, args.repeat)
        for case, times in (("from scratch", scratch), ("files added/removed", changed)):
            print(f"{files:>7} {case:>22} {statistics.median(times) * 1000:>10.1f} {min(times) * 1000:>11.1f}")


if __name__ == "__main__":
    main()
