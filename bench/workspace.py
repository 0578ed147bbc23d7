"""Measures Copydesk's per-run git overhead against a full clone and a plain push, as the repository grows.

Run by hand: `.venv/bin/python bench/workspace.py [--sizes 500,5000,50000] [--repeat 3]`. Prints medians.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.workspace.git import Git, Remote  # noqa: E402
from service.workspace.mirror import MirrorStore  # noqa: E402
from service.workspace.publish import Identity, PushRequest, build_commit, push_commit  # noqa: E402

BOT = Identity("Copydesk", "bot@copydesk.example")
PARAGRAPH = "Copydesk keeps documentation in step with the code. This paragraph is filler text. "


def page_path(i: int) -> str:
    return f"docs/s{i % 10}/t{i // 10 % 10}/u{i // 100 % 10}/page-{i}.md"


def plain_env(tmp: Path) -> dict[str, str]:
    """Environment for the baseline git commands: no user or system config, a fixed identity."""
    return {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "HOME": str(tmp),
            "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}


def generate(bare: Path, files: int, env: dict[str, str]) -> None:
    """A bare repository whose `main` holds `files` markdown pages in nested folders, made with fast-import."""
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", str(bare)], check=True, env=env)
    proc = subprocess.Popen(["git", f"--git-dir={bare}", "fast-import", "--quiet"], stdin=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    out = proc.stdin
    out.write(b"commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 9\nInitial\n\n")
    for i in range(files):
        body = f"---\ntitle: Page {i}\n---\n\n# Page {i}\n\n" + (PARAGRAPH * (5 + i % 20)) + f"\nSee page {i + 1}.\n"
        data = body.encode()
        out.write(b"M 100644 inline %s\ndata %d\n%s\n" % (page_path(i).encode(), len(data), data))
    out.write(b"done\n")
    out.close()
    if proc.wait() != 0:
        raise SystemExit("fast-import failed")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(files: int, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-") as tmp_s:
        tmp = Path(tmp_s)
        env = plain_env(tmp)

        def git_plain(*args: str) -> None:
            subprocess.run(["git", *args], check=True, env=env, capture_output=True)

        bare = tmp / "source.git"
        started = time.perf_counter()
        generate(bare, files, env)
        print(f"  generated {files} files in {time.perf_counter() - started:.1f} s", file=sys.stderr)

        clones = []
        for n in range(repeat):
            clones.append(timed(lambda n=n: git_plain("clone", "-q", "--no-local", str(bare), str(tmp / f"clone{n}"))))
        work = tmp / "clone0"

        remote = Remote(str(bare))
        mirror = MirrorStore(tmp / "mirrors", Git()).mirror(remote)
        with mirror.run_refs(remote, {"base": "refs/heads/main"}):
            pass  # first contact; not measured

        pushes, overheads = [], []
        steps: dict[str, list[float]] = {"fetch": [], "open+read+write": [], "build_commit": [], "push_commit": []}
        for n in range(repeat):
            # Baseline: one small commit pushed from a clone. It also moves main, so the next fetch is incremental.
            page = work / page_path(n * 7 + 1)
            page.write_text(page.read_text() + f"\nEdited by a person, round {n}.\n")
            git_plain("-C", str(work), "commit", "-q", "-am", f"Person edit {n}")
            pushes.append(timed(lambda: git_plain("-C", str(work), "push", "-q", "origin", "main")))

            paths = [page_path((n * 1009 + k * 331) % files) for k in range(3)]
            start = time.perf_counter()
            with mirror.run_refs(remote, {"base": "refs/heads/main",
                                          "branch": f"refs/heads/copydesk/bench_{n}"}) as heads:
                t_fetch = time.perf_counter()
                base = heads["branch"] or heads["base"]
                with mirror.open(base) as ws:
                    for path in paths:
                        ws.write(path, ws.read(path) + f"\nCopydesk edit {n}.\n".encode())
                    changes = ws.changes()
                t_edit = time.perf_counter()
                commit = build_commit(mirror, base, changes, "Edit three pages", BOT, BOT)
                t_build = time.perf_counter()
                push_commit(mirror, remote, PushRequest(commit=commit, branch=f"copydesk/bench_{n}",
                                                        start_commit=base, changes=changes, message="Edit three pages",
                                                        author=BOT, committer=BOT))
                t_push = time.perf_counter()
            end = time.perf_counter()
            overheads.append(end - start)
            steps["fetch"].append(t_fetch - start)
            steps["open+read+write"].append(t_edit - t_fetch)
            steps["build_commit"].append(t_build - t_edit)
            steps["push_commit"].append(t_push - t_build + (end - t_push))  # includes dropping the run refs

        result = {"clone": statistics.median(clones), "push": statistics.median(pushes),
                  "overhead": statistics.median(overheads)}
        result.update({k: statistics.median(v) for k, v in steps.items()})
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,5000,50000", help="comma-separated file counts")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (the median is reported)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    rows = []
    for files in sizes:
        print(f"measuring {files} files ...", file=sys.stderr)
        rows.append((files, measure(files, args.repeat)))

    print(f"\nmedians of {args.repeat} runs, seconds")
    print(f"{'files':>7} {'clone':>7} {'push':>7} {'overhead':>9} {'ovh/clone':>10} {'ovh/push':>9}   "
          f"{'fetch':>6} {'edit':>6} {'build':>6} {'push':>6}")
    for files, r in rows:
        print(f"{files:>7} {r['clone']:>7.3f} {r['push']:>7.3f} {r['overhead']:>9.3f} "
              f"{r['overhead'] / r['clone']:>10.3f} {r['overhead'] / r['push']:>9.2f}   "
              f"{r['fetch']:>6.3f} {r['open+read+write']:>6.3f} {r['build_commit']:>6.3f} {r['push_commit']:>6.3f}")
    print("overhead = incremental fetch into the mirror + open + read 3 + write 3 + build_commit + push_commit")


if __name__ == "__main__":
    main()
