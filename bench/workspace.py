"""Measures Copydesk's per-run overhead (fetch, briefing, edits, commit, push) against a full clone and a plain
push, as the repository grows and as its branches pile up.

Run by hand: `.venv/bin/python bench/workspace.py [--sizes 500,5000,50000] [--branches 10,1000] [--repeat 3]`.
Prints medians, then the ratios of issue 20's goals: overhead ≤ 2× a plain push at 5,000 files, overhead at
50,000 files ≤ 1.5× that at 5,000, and at 1,000 existing branches ≤ 1.2× that at 10 (on the 5,000-file
repository, refs packed as the worker's upkeep leaves them). Each run briefs on a new tree (the base moves every
round), so the per-tree entries beside the mirror (listing, path policy, site and overview) are derived from the
last round's by a tree diff, as they are when a real base branch moves by a commit or two.
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

from service.agent import paths, tree_cache  # noqa: E402
from service.agent.briefing import brief  # noqa: E402
from service.agent.path_cache import allowed_files  # noqa: E402
from service.workspace import gitnames  # noqa: E402
from service.workspace.git import Git, Remote  # noqa: E402
from service.workspace.mirror import MirrorStore  # noqa: E402
from service.workspace.publish import Identity, PushRequest, build_commit, push_commit  # noqa: E402

BOT = Identity("Copydesk", "bot@copydesk.example")
PARAGRAPH = "Copydesk keeps documentation in step with the code. This paragraph is filler text. "


def page_path(i: int) -> str:
    return f"docs/s{i % 10}/t{i // 10 % 10}/u{i // 100 % 10}/page-{i}.md"


def plain_env(tmp: Path) -> dict[str, str]:
    """Environment for the baseline git commands: no user or system config, a fixed identity."""
    return {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": str(tmp),
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }


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


def forget_process_caches() -> None:
    """What a work horse forked for a run does not inherit: the per-name and per-tree memories of this process
    (the entries kept beside the mirror stay, as they do for real runs)."""
    tree_cache.forget()
    for cached_function in (paths._plain_name, gitnames.aliases, gitnames.canonical):
        cached_function.cache_clear()


def add_branches(bare: Path, count: int, env: dict[str, str]) -> None:
    """`count` more branches on main's head (as many jobs' branches would be), then refs packed as upkeep does."""
    head = subprocess.run(
        ["git", f"--git-dir={bare}", "rev-parse", "refs/heads/main"],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    ).stdout.strip()
    script = "".join(f"create refs/heads/copydesk/job_old_{i:05d} {head}\n" for i in range(count))
    subprocess.run(["git", f"--git-dir={bare}", "update-ref", "--stdin"], input=script, text=True, check=True, env=env)
    subprocess.run(["git", f"--git-dir={bare}", "pack-refs", "--all"], check=True, env=env)


def measure(files: int, repeat: int, branches: int = 0) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-") as tmp_s:
        tmp = Path(tmp_s)
        env = plain_env(tmp)

        def git_plain(*args: str) -> None:
            subprocess.run(["git", *args], check=True, env=env, capture_output=True)

        bare = tmp / "source.git"
        started = time.perf_counter()
        generate(bare, files, env)
        if branches:
            add_branches(bare, branches, env)
        print(
            f"  generated {files} files, {branches} branches in {time.perf_counter() - started:.1f} s", file=sys.stderr
        )

        clones = []
        for n in range(repeat):
            clones.append(timed(lambda n=n: git_plain("clone", "-q", "--no-local", str(bare), str(tmp / f"clone{n}"))))
        work = tmp / "clone0"

        remote = Remote(str(bare), trusted=True)  # as the local code host gives it
        mirror = MirrorStore(tmp / "mirrors", Git()).mirror(remote)
        with mirror.run_refs(remote, {"base": "refs/heads/main"}):
            pass  # first contact; not measured

        pushes, overheads = [], []
        steps: dict[str, list[float]] = {
            "fetch": [],
            "brief": [],
            "open+read+write": [],
            "build_commit": [],
            "push_commit": [],
        }
        for n in range(repeat):
            # Baseline: one small commit pushed from a clone. It also moves main, so the next fetch is incremental.
            page = work / page_path(n * 7 + 1)
            page.write_text(page.read_text() + f"\nEdited by a person, round {n}.\n")
            git_plain("-C", str(work), "commit", "-q", "-am", f"Person edit {n}")
            pushes.append(timed(lambda: git_plain("-C", str(work), "push", "-q", "origin", "main")))

            paths = [page_path((n * 1009 + k * 331) % files) for k in range(3)]
            forget_process_caches()  # each real run is a freshly forked work horse
            start = time.perf_counter()
            with mirror.run_refs(
                remote, {"base": "refs/heads/main", "branch": f"refs/heads/copydesk/bench_{n}"}
            ) as heads:
                t_fetch = time.perf_counter()
                base = heads["branch"] or heads["base"]
                with mirror.open(base) as ws:
                    brief(ws, "Edit three pages", base_commit=heads["base"])
                    allowed_files(ws)  # the agent's first list_files
                    t_brief = time.perf_counter()
                    for path in paths:
                        ws.write(path, ws.read(path) + f"\nCopydesk edit {n}.\n".encode())
                    changes = ws.changes()
                t_edit = time.perf_counter()
                commit = build_commit(mirror, base, changes, "Edit three pages", BOT, BOT)
                t_build = time.perf_counter()
                push_commit(
                    mirror,
                    remote,
                    PushRequest(
                        commit=commit,
                        branch=f"copydesk/bench_{n}",
                        start_commit=base,
                        changes=changes,
                        message="Edit three pages",
                        author=BOT,
                        committer=BOT,
                    ),
                )
                t_push = time.perf_counter()
            end = time.perf_counter()
            overheads.append(end - start)
            steps["fetch"].append(t_fetch - start)
            steps["brief"].append(t_brief - t_fetch)
            steps["open+read+write"].append(t_edit - t_brief)
            steps["build_commit"].append(t_build - t_edit)
            steps["push_commit"].append(t_push - t_build + (end - t_push))  # includes dropping the run refs

        result = {
            "clone": statistics.median(clones),
            "push": statistics.median(pushes),
            "overhead": statistics.median(overheads),
        }
        result.update({k: statistics.median(v) for k, v in steps.items()})
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,5000,50000", help="comma-separated file counts")
    parser.add_argument("--branches", default="10,1000", help="comma-separated branch counts (at 5,000 files)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (the median is reported)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    branch_counts = [int(b) for b in args.branches.split(",") if b]

    rows = []
    for files in sizes:
        print(f"measuring {files} files ...", file=sys.stderr)
        rows.append((f"{files}", files, 0, measure(files, args.repeat)))
    for branches in branch_counts:
        print(f"measuring 5000 files with {branches} branches ...", file=sys.stderr)
        rows.append((f"5000+{branches}b", 5000, branches, measure(5000, args.repeat, branches)))

    print(f"\nmedians of {args.repeat} runs, seconds (load average {os.getloadavg()[0]:.1f})")
    print(
        f"{'case':>10} {'clone':>7} {'push':>7} {'overhead':>9} {'ovh/clone':>10} {'ovh/push':>9}   "
        f"{'fetch':>6} {'brief':>6} {'edit':>6} {'build':>6} {'push':>6}"
    )
    for name, _files, _branches, r in rows:
        print(
            f"{name:>10} {r['clone']:>7.3f} {r['push']:>7.3f} {r['overhead']:>9.3f} "
            f"{r['overhead'] / r['clone']:>10.3f} {r['overhead'] / r['push']:>9.2f}   "
            f"{r['fetch']:>6.3f} {r['brief']:>6.3f} {r['open+read+write']:>6.3f} {r['build_commit']:>6.3f} "
            f"{r['push_commit']:>6.3f}"
        )
    print(
        "overhead = incremental fetch into the mirror + open + brief + list_files + read 3 + write 3 + build_commit"
        " + push_commit"
    )
    by_name = {name: r for name, _f, _b, r in rows}
    if "5000" in by_name:
        print(
            f"goal: overhead / plain push at 5,000 files = {by_name['5000']['overhead'] / by_name['5000']['push']:.2f}"
            " (≤ 2)"
        )
    if "5000" in by_name and "50000" in by_name:
        print(
            f"goal: overhead at 50,000 / at 5,000 files = "
            f"{by_name['50000']['overhead'] / by_name['5000']['overhead']:.2f} (≤ 1.5)"
        )
    if len(branch_counts) >= 2:
        few, many = f"5000+{branch_counts[0]}b", f"5000+{branch_counts[-1]}b"
        print(
            f"goal: overhead at {branch_counts[-1]} / at {branch_counts[0]} branches = "
            f"{by_name[many]['overhead'] / by_name[few]['overhead']:.2f} (≤ 1.2)"
        )


if __name__ == "__main__":
    main()
