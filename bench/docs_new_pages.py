"""False reports on new pages written in a real site's own style: each new page is a copy of an existing page,
saved beside it under a new name, so it links exactly as its neighbours do (root-relative where they are).

Run by hand: `.venv/bin/python bench/docs_new_pages.py /work/.mirror/owner+name/repo [more bare repos ...]
[--pages 60] [--docs-root docs]`. Bring the repositories with the `fetch` tool; nothing here writes to them.
Per repository it prints the framework detected, how many new pages were tried, the link and anchor problems
reported on them (each one a false report unless the page it was copied from has the same real break: the
examples are printed to tell), and the notes the check gave about links it could not judge. "Not in the
navigation" findings are counted apart: a new page is not listed anywhere yet.
"""

import argparse
import posixpath
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.agent.docs_check import check_docs  # noqa: E402
from service.agent.docsite.detect import detect_site  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from service.workspace.overlay import Workspace  # noqa: E402

NEW_NAME = "copydesk-bench-new"
NAV_FINDING = "new page is not in the navigation"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="+", help="bare git repositories (e.g. /work/.mirror/owner+name/repo)")
    parser.add_argument("--pages", type=int, default=60, help="new pages per repository, spread over the site")
    parser.add_argument("--docs-root", default="", help="the docs root to detect the site in")
    parser.add_argument("--show", type=int, default=5, help="reports to print per repository")
    args = parser.parse_args()
    print("| repository | framework | new pages | link/anchor reports | not-in-navigation | seconds per page |")
    print("|---|---|---|---|---|---|")
    details = [run_repository(Path(repo), args) for repo in args.repos]
    for lines in details:
        for line in lines:
            print(line)


def run_repository(bare: Path, args) -> list[str]:
    git = Git()
    name = bare.parent.name if bare.name == "repo" else bare.name
    with Workspace(git, bare, git.out("rev-parse", "HEAD", git_dir=bare)) as workspace:
        site = detect_site(workspace, args.docs_root)
        pages = sorted(p for p in workspace.list_files() if site.is_page(p) and not site.is_versioned(p))
        chosen = pages[:: max(1, len(pages) // max(1, args.pages))][: args.pages]
        reports, unlisted, notes = [], 0, set()
        started = time.perf_counter()
        for page in chosen:
            folder, base = posixpath.split(page)
            new = posixpath.join(folder, NEW_NAME + posixpath.splitext(base)[1])
            workspace.write(new, workspace.read(page))
            report = check_docs(workspace, site)
            workspace.delete(new)
            unlisted += sum(NAV_FINDING in p.message for p in report.problems)
            reports += [(page, p.message) for p in report.problems if NAV_FINDING not in p.message]
            notes |= set(report.notes)
        per_page = (time.perf_counter() - started) / max(1, len(chosen))
    print(f"| {name} | {site.framework} | {len(chosen)} | {len(reports)} | {unlisted} | {per_page:.3f} |")
    lines = [f"{name}: copied from {page}: {message}" for page, message in reports[: args.show]]
    return lines + [f"{name}: note: {note}" for note in sorted(notes)]


if __name__ == "__main__":
    main()
