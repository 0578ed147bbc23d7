"""Times a truly cold docs check of a one-word edit on real documentation repositories: each check in a fresh
process (as a run is), on a copy of the repository with nothing kept beside it (no stored page parses, listings
or tree caches) and nothing in memory, the way a new worker meets a repository.

Run by hand: `.venv/bin/python bench/docs_cold.py [owner/name or bare repo ...] [--edits 5] [--pages 1000]`
(none: the default set in bench/docs_repos.py). Bring the repositories with the `fetch` tool; the mirrors are only
read (the checks run on a local copy made with `git clone --bare`). Per repository: the pages edited (spread over
the site's pages in path order), and per check the seconds (wall and CPU of the checking process) and the pages
it parsed. `--pages N` grows a smaller site to about N real pages first: copies of its docs folder (without its
config) inside it, `copy-1/`, `copy-2/`..., so a large site of the same pages, toctrees and labels.
"""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import docs_repos  # noqa: E402
from bench.docs_real import one_word_edit  # noqa: E402
from service.agent.docs_check import check_docs  # noqa: E402
from service.agent.docsite.detect import detect_site  # noqa: E402
from service.agent.docsite.tree import PAGE_CACHE  # noqa: E402
from service.agent.tree_cache import CACHE_FOLDER  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from service.workspace.overlay import Workspace  # noqa: E402


def grow(bare: Path, pages: int) -> None:
    """Commit, as HEAD of `bare`, its docs folder with copies of itself inside up to about `pages` pages. Each
    copied page ends with a comment naming its copy, so no two pages share content (a parse is kept by content)."""
    git = Git()
    with Workspace(git, bare, git.out("rev-parse", "HEAD", git_dir=bare)) as workspace:
        site = detect_site(workspace)
        count = sum(1 for p in workspace.list_files() if site.is_page(p))
        prefix = f"{site.docs_root}/" if site.docs_root else ""
        listed = git.out("ls-tree", "-r", "HEAD", "--", prefix or ".", git_dir=bare).splitlines()
        files = [(line.split()[0], line.split()[2], line.split("\t", 1)[1]) for line in listed]
        texts = {path: workspace.read(path) for _, _, path in files if site.is_page(path)}
    commands = [b"commit refs/heads/bench-grown\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 5\nGrown"]
    commands.append(b"from " + git.out("rev-parse", "HEAD", git_dir=bare).strip().encode())
    for copy in range(1, -(-pages // count)):
        for mode, blob, path in files:
            if path == site.config_path or mode == "160000":
                continue
            target = f"{prefix}copy-{copy}/{path[len(prefix) :]}".encode()
            if path in texts:
                data = texts[path] + f"\n\n.. copy {copy}\n".encode()
                commands.append(b"M %s inline %s\ndata %d\n%s" % (mode.encode(), target, len(data), data))
            else:
                commands.append(b"M %s %s %s" % (mode.encode(), blob.encode(), target))
    subprocess.run(
        ["git", "--git-dir", str(bare), "fast-import", "--quiet"], input=b"\n".join(commands) + b"\ndone\n", check=True
    )
    git.run("update-ref", "HEAD", git.out("rev-parse", "refs/heads/bench-grown", git_dir=bare).strip(), git_dir=bare)


def pages_to_edit(bare: Path, edits: int) -> tuple[str, int, list[str]]:
    """The site's framework, its page count and `edits` pages spread over its pages in path order."""
    git = Git()
    with Workspace(git, bare, git.out("rev-parse", "HEAD", git_dir=bare)) as workspace:
        site = detect_site(workspace)
        pages = sorted(p for p in workspace.list_files() if site.is_page(p))
    step = max(1, len(pages) // max(1, edits))
    return site.framework, len(pages), pages[step // 2 :: step][:edits]


def cold_check(bare: Path, page: str) -> dict:
    """One check of a one-word edit of `page`, in a fresh process, with nothing kept beside the repository."""
    shutil.rmtree(bare / CACHE_FOLDER, ignore_errors=True)
    child = subprocess.run(
        [sys.executable, __file__, "--cold-run", str(bare), page], capture_output=True, text=True, check=True
    )
    return json.loads(child.stdout.strip().splitlines()[-1])


def cold_run(bare_s: str, page: str) -> None:
    """The child of `cold_check`: the check timed from detection on, its figures printed as JSON."""
    bare = Path(bare_s)
    git = Git()
    with Workspace(git, bare, git.out("rev-parse", "HEAD", git_dir=bare)) as workspace:
        started, cpu = time.perf_counter(), time.process_time()
        site = detect_site(workspace)
        workspace.write(page, one_word_edit(workspace.read(page).decode("utf-8", "replace")).encode())
        report = check_docs(workspace, site)
        figures = {
            "seconds": time.perf_counter() - started,
            "cpu": time.process_time() - cpu,
            "parsed": PAGE_CACHE.misses,
            "problems": len(report.problems) + (report.failure is not None),
        }
    print(json.dumps(figures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    docs_repos.add_arguments(parser)
    parser.add_argument("--edits", type=int, default=5, help="pages edited (one cold check each) per repository")
    parser.add_argument("--pages", type=int, default=0, help="grow each site to about this many pages (0: as is)")
    parser.add_argument("--cold-run", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_run:
        cold_run(*args.cold_run)
        return
    print("| repository | framework | pages | page edited | cold s | CPU s | pages parsed | problems |")
    print("|---|---|---|---|---|---|---|---|")
    for mirror in docs_repos.resolve(args.repos, args.mirrors):
        name = mirror.parent.name if mirror.name == "repo" else mirror.name
        with tempfile.TemporaryDirectory(prefix="copydesk-cold-") as tmp:
            bare = Path(tmp) / "repo.git"
            subprocess.run(["git", "clone", "-q", "--bare", str(mirror), str(bare)], check=True)
            if args.pages:
                grow(bare, args.pages)
            framework, count, pages = pages_to_edit(bare, args.edits)
            runs = []
            for page in pages:
                found = cold_check(bare, page)
                runs.append(found)
                print(
                    f"| {name} | {framework} | {count} | {page} | {found['seconds']:.2f} | {found['cpu']:.2f} | "
                    f"{found['parsed']} | {found['problems']} |"
                )
            if runs:
                print(
                    f"| {name} | median | | | {statistics.median(r['seconds'] for r in runs):.2f} | "
                    f"{statistics.median(r['cpu'] for r in runs):.2f} | "
                    f"{statistics.median(r['parsed'] for r in runs)} | |"
                )


if __name__ == "__main__":
    main()
