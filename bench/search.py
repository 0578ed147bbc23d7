"""Measures `Workspace.search` (RE2 over blobs streamed from git) against `git grep -P` on the same commit.

Run by hand: `.venv/bin/python bench/search.py [--files 20000]`. The repository is `bench/first_request.py`'s
(nested docs pages and code). `git grep` is the former engine: C, multi-threaded, but PCRE backtracks.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.first_request import generate, repository_files  # noqa: E402
from bench.workspace import plain_env  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from service.workspace.overlay import Workspace  # noqa: E402

# (pattern, globs as the tool takes them, the same as git pathspecs)
CASES = [
    ("toctree", None, []),
    (r"^title:\s*\S", ["*.md"], [":(glob)**/*.md"]),
    ("next page", ["docs/**"], [":(glob)docs/**"]),
    (r"handler_1\d\d\b", None, []),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    args = parser.parse_args()
    git = Git()
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-search-") as tmp:
        bare = Path(tmp) / "source.git"
        generate(bare, repository_files(args.files), plain_env(Path(tmp)))
        commit = git.out("rev-parse", "refs/heads/main", git_dir=bare)
        print(f"{args.files:,} files")
        print(f"{'pattern':<22} {'RE2 s':>7} {'git grep -P s':>14} {'matches':>8}")
        with Workspace(git, bare, commit) as workspace:
            for pattern, globs, specs in CASES:
                started = time.perf_counter()
                found = workspace.search(pattern, globs=globs, max_matches=1_000_000)
                ours = time.perf_counter() - started
                started = time.perf_counter()
                out = git.run(
                    "grep", "-I", "-n", "-z", "-P", "-e", pattern, commit, "--", *specs, git_dir=bare, check=False
                ).stdout
                theirs = time.perf_counter() - started
                lines = out.count(b"\n")
                print(f"{pattern:<22} {ours:>7.2f} {theirs:>14.2f} {len(found):>8} (git: {lines})")


if __name__ == "__main__":
    main()
