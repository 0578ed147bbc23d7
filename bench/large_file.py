"""Measures `read_file` on a 200 MB file: a line range near its end, streamed, against loading the blob whole.

Run by hand: `.venv/bin/python bench/large_file.py [--megabytes 200]`. Each measurement runs in a fresh
process and reports its peak memory (ru_maxrss) over the interpreter's own baseline.
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.workspace.git import Git  # noqa: E402

LINE = b"%09d a line of a large generated reference page that nobody should load whole\n"


def build(bare: Path, megabytes: int) -> tuple[str, int]:
    """A repository whose `main` holds `big.md` of about `megabytes` MB, streamed into git; (commit, lines)."""
    git = Git()
    git.run("init", "--bare", "-q", str(bare))
    lines = megabytes * 1024 * 1024 // len(LINE % 0)
    with tempfile.NamedTemporaryFile(dir=bare) as data:
        for start in range(0, lines, 100_000):
            data.write(b"".join(LINE % n for n in range(start + 1, min(start + 100_000, lines) + 1)))
        data.flush()
        blob = git.out("hash-object", "-w", data.name, git_dir=bare)
    tree = git.out("mktree", git_dir=bare, input=f"100644 blob {blob}\tbig.md\n".encode())
    who = {
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    commit = git.out("commit-tree", tree, "-m", "Big", git_dir=bare, env=who)
    return commit, lines


def child(bare: str, commit: str, mode: str, start: int) -> None:
    from service.agent.model import ToolCall
    from service.agent.tools import ToolExecutor
    from service.workspace.overlay import Workspace

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    with Workspace(Git(), bare, commit, max_file_bytes=1 << 40) as workspace:
        if mode == "stream":
            result = ToolExecutor(workspace, max_bytes_written=0).execute(
                ToolCall("c", "read_file", {"path": "big.md", "start_line": start, "end_line": start + 20})
            )
            header = result.content.splitlines()[0]
        else:  # what read_file did before: the whole blob in memory, then split into lines
            header = f"{len(workspace.read('big.md').decode('utf-8', 'replace').splitlines())} lines"
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
    print(json.dumps({"seconds": seconds, "peak_mb": peak / 1024, "header": header}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        bare, commit, mode, start = args.child
        child(bare, commit, mode, int(start))
        return
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-large-") as tmp:
        bare = Path(tmp) / "big.git"
        commit, lines = build(bare, args.megabytes)
        print(f"big.md: {args.megabytes} MB, {lines:,} lines; reading 20 lines near its end")
        for mode in ("stream", "whole"):
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(bare), commit, mode, str(lines - 20)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            figures = json.loads(out)
            print(f"  {mode:<7} {figures['seconds']:6.2f} s  peak +{figures['peak_mb']:7.1f} MB  ({figures['header']})")


if __name__ == "__main__":
    main()
