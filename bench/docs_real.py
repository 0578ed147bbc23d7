"""Runs the docs check over real documentation repositories (bare git mirrors) the way runs use it.

Run by hand: `.venv/bin/python bench/docs_real.py [owner/name or bare repo ...]` (none: the default set in
bench/docs_repos.py).
Bring the repositories with the `fetch` tool; nothing here writes to them or commits anything. Per repository:

- false reports on a one-word edit of every page (goal 0): every problem reported after the edit is false;
- a move of the most-linked page: links the check reports broken, against an independent count made here with a
  deliberately different, permissive method (regular expressions over the raw text, every plausible base folder
  and suffix tried) (goal >= 95 %);
- a new page flagged as missing from the navigation, then clean once it is listed;
- a deleted navigation page flagged;
- timings: detection, the check cold (empty parse cache) and warm, per edit.
"""

import argparse
import posixpath
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import docs_repos  # noqa: E402
from bench.first_request import request_chars  # noqa: E402
from service.agent.briefing import brief  # noqa: E402
from service.agent.docs_check import check_docs  # noqa: E402
from service.agent.docsite import page_store  # noqa: E402
from service.agent.docsite.detect import detect_site, read_navigation  # noqa: E402
from service.agent.docsite.tree import PAGE_CACHE, Tree  # noqa: E402
from service.agent.loop import build_messages  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from service.workspace.overlay import Workspace  # noqa: E402

# The independent count's link finder: Markdown inline targets, href/src/to attributes, Sphinx roles.
_LINKS = re.compile(
    r"""\]\(\s*<?([^)\s>]+)>?|\b(?:href|src|to)\s*=\s*\{?\s*["']([^"']+)["']"""
    r"""|(?:\{doc\}|:doc:)`(?:[^`<]*<)?([^`>]+)>?`|^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)"""
)
_REPORTED = re.compile(
    r"^(?:link to |broken document reference: )(.+?)"
    r"(?:, which this run| no longer resolves|: this run| \()"
)
_PROSE = re.compile(r"^[A-Za-z][^|<>{}\[\]`*#:\\]*(?:\s+\S+){3,}[A-Za-z.!?]$")
NEW_NAME = "copydesk-bench-new"


@dataclass
class Row:
    repo: str
    framework: str = ""
    pages: int = 0
    edited: int = 0
    false_reports: int = 0
    false_examples: list[str] = field(default_factory=list)
    moved: str = ""
    independent: int = 0
    reported: int = 0
    extra: int = 0
    new_flagged: str = "n/a"
    new_clean: str = "n/a"
    delete_flagged: str = "n/a"
    first_request: int = 0
    detect_s: float = 0.0
    cold_s: float = 0.0
    warm_s: list[float] = field(default_factory=list)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    docs_repos.add_arguments(parser)
    parser.add_argument("--max-pages", type=int, default=0, help="edit at most this many pages (0: all)")
    parser.add_argument("--show", type=int, default=3, help="false reports to print per repository")
    args = parser.parse_args()
    rows = [run_repository(repo, args.max_pages) for repo in docs_repos.resolve(args.repos, args.mirrors)]
    print_table(rows, args.show)


def run_repository(bare: Path, max_pages: int) -> Row:
    git = Git()
    name = bare.parent.name if bare.name == "repo" else bare.name
    row = Row(name)
    commit = git.out("rev-parse", "HEAD", git_dir=bare)
    with Workspace(git, bare, commit) as workspace:
        started = time.perf_counter()
        site = detect_site(workspace)
        row.detect_s = time.perf_counter() - started
        row.framework = site.framework
        task = brief(workspace, "Document the new --dry-run flag.", base_commit=workspace.start_commit)
        row.first_request = request_chars(build_messages(task))
        pages = [p for p in workspace.list_files() if site.is_page(p)]
        row.pages = len(pages)
        print(f"{name}: {site.framework}, {len(pages)} pages", file=sys.stderr)
        one_word_edits(workspace, site, pages[:max_pages] if max_pages else pages, row)
        move_most_linked(workspace, site, pages, row)
        new_page(workspace, site, row)
        delete_listed(workspace, site, row)
    return row


def one_word_edits(workspace, site, pages: list[str], row: Row) -> None:
    PAGE_CACHE._entries.clear()
    page_store.forget_all(workspace.git_dir)  # cold: no parse kept in memory or on disk
    first = True
    for page in pages:
        original = workspace.read(page)
        edited = one_word_edit(original.decode("utf-8", "replace"))
        workspace.write(page, edited.encode())
        started = time.perf_counter()
        report = check_docs(workspace, site)
        elapsed = time.perf_counter() - started
        if first:
            row.cold_s, first = elapsed, False
        else:
            row.warm_s.append(elapsed)
        row.edited += 1
        row.false_reports += len(report.problems) + (report.failure is not None)
        row.false_examples += [f"{p.path}:{p.line} {p.message}" for p in report.problems]
        if report.failure:
            row.false_examples.append(f"{page}: {report.failure}")
        workspace.write(page, original)
    assert not workspace.changes()


def one_word_edit(text: str) -> str:
    """The text with one word added to its first plain prose line outside front matter and code, else to its
    front matter title, else as a paragraph of its own at the end."""
    lines = text.split("\n")
    fence, start = None, 0
    if lines and lines[0].strip() == "---":
        start = next((i + 1 for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), len(lines))
    for index in range(start, len(lines)):
        stripped = lines[index].strip()
        if stripped.startswith(("```", "~~~")):
            fence = None if fence else stripped[:3]
            continue
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if fence is None and _PROSE.match(stripped) and not re.fullmatch(r"[=\-~^*#+]{3,}", following):
            line = lines[index].rstrip()
            lines[index] = line[:-1] + " indeed" + line[-1] if line[-1] in ".!?" else line + " indeed"
            return "\n".join(lines)
    for index in range(1, start - 1):
        if re.match(r"^title:\s*[A-Za-z]", lines[index]) and not lines[index].rstrip().endswith(("'", '"')):
            lines[index] = lines[index].rstrip() + " indeed"
            return "\n".join(lines)
    return text.rstrip("\n") + "\n\nIndeed.\n"  # a one-word paragraph at the end


def move_most_linked(workspace, site, pages: list[str], row: Row) -> None:
    texts = {}
    for path in workspace.list_files():
        if path.lower().endswith((".md", ".mdx", ".rst")) and "/." not in "/" + path:
            try:
                texts[path] = workspace.read(path).decode("utf-8", "replace")
            except Exception:  # symlinks and submodules are not pages
                continue
    # A page with a `slug` keeps its route wherever its file goes, so moving it breaks no link: not chosen.
    # A translated page is not chosen either: its links fall back to the default language's page (Starlight).
    movable = [
        p for p in pages if p in texts and not re.search(r"^slug:", texts[p], re.M) and site.language_of(p) is None
    ]
    if not movable:
        return
    joined = "\n".join(texts.values())
    rough = {}
    for path in movable:
        base = posixpath.basename(posixpath.splitext(path)[0])
        rough[path] = sum(
            joined.count(form)
            for form in ("/" + base + ")", "/" + base + "#", "/" + base + '"', base + ".md", "(" + base, "`" + base)
        )
    candidates = sorted(movable, key=lambda p: -rough[p])[:10]
    counts = {page: independent_links(texts, site, page) for page in candidates}
    page = max(sorted(counts), key=lambda p: len(counts[p]))
    row.moved, row.independent = page, len(counts[page])
    folder, name = posixpath.split(page)
    workspace.move(page, posixpath.join(folder, "moved-by-bench", name))
    report = check_docs(workspace, site)
    reported = set()
    for problem in report.problems:
        match = _REPORTED.match(problem.message)
        if match and problem.path != posixpath.join(folder, "moved-by-bench", name):
            reported.add((problem.path, match.group(1)))
    row.reported = len(reported & counts[page])
    row.extra = len(reported - counts[page])
    missed = sorted(counts[page] - reported)
    if missed:
        print(f"  move of {page}: not reported (independent count): {missed[:8]}", file=sys.stderr)
    if reported - counts[page]:
        print(
            f"  move of {page}: reported, not in the independent count: {sorted(reported - counts[page])[:8]}",
            file=sys.stderr,
        )
    workspace.move(posixpath.join(folder, "moved-by-bench", name), page)
    assert not workspace.changes()


def independent_links(texts: dict[str, str], site, page: str) -> set[tuple[str, str]]:
    """(page, target as written) of every link elsewhere that plausibly points at `page`, by regex and permissive
    bases: a link is a distinct target in a page, however often it is used."""
    stem = posixpath.splitext(page)[0]
    wanted = {page, stem}
    if posixpath.basename(stem).lower() in ("index", "readme"):
        wanted.add(posixpath.dirname(stem))
    root = site.docs_root
    relative_to_root = stem[len(root) + 1 :] if root else stem
    found = set()
    for other, text in texts.items():
        if other == page or posixpath.basename(stem) not in text:
            continue
        fence = None
        for line in text.split("\n"):
            opener = re.match(r"^\s*(`{3,}|~{3,})", line)
            if opener:
                fence = None if fence and opener.group(1).startswith(fence) else fence or opener.group(1)
                continue
            if fence:
                continue
            for match in _LINKS.finditer(line):
                target = next(g for g in match.groups() if g)
                if _plausibly(target, other, wanted, relative_to_root, root):
                    found.add((other, target))
    return found


def _plausibly(target: str, source: str, wanted: set[str], relative_to_root: str, root: str) -> bool:
    path = target.split("#", 1)[0].split("?", 1)[0].rstrip("/")
    if not path or "://" in path or path.startswith("mailto:"):
        return False
    path = re.sub(r"\.(mdx?|rst|html)$", "", path)
    bases = [posixpath.dirname(source), root, ""]
    if path.startswith("@site/"):
        path = path[len("@site/") :]
    if path.startswith("/"):
        trimmed = path.lstrip("/")
        if trimmed.split("/", 1)[0] == "docs" and root != "docs":
            trimmed = trimmed.split("/", 1)[1] if "/" in trimmed else ""
        return (
            trimmed == relative_to_root
            or posixpath.normpath(posixpath.join(root, trimmed)) in wanted
            or trimmed in wanted
            or posixpath.normpath(posixpath.join("docs", trimmed)) in wanted
        )
    for base in bases:
        candidate = posixpath.normpath(posixpath.join(base, path))
        if candidate in wanted or re.sub(r"(^|/)\d+[-_]", r"\1", candidate) in {
            re.sub(r"(^|/)\d+[-_]", r"\1", w) for w in wanted
        }:
            return True
    # URL-relative links (the page's route as its folder)
    candidate = posixpath.normpath(posixpath.join(posixpath.splitext(source)[0], path))
    return candidate in wanted


def new_page(workspace, site, row: Row) -> None:
    if not site.explicit_nav:
        return
    suffix = site.page_extensions[0] if site.page_extensions else site.page_suffixes[0]
    path = posixpath.join(site.docs_root, NEW_NAME + suffix)
    body = (
        "New page\n========\n\nA new page.\n"
        if suffix == ".rst"
        else "---\ntitle: New page\n---\n\n# New page\n\nA new page.\n"
    )
    workspace.write(path, body.encode())
    flagged = [p for p in check_docs(workspace, site).problems if p.path == path and "navigation" in p.message]
    row.new_flagged = "yes" if flagged else "NO"
    if list_in_navigation(workspace, site, path):
        after = check_docs(workspace, site).problems
        row.new_clean = "yes" if not after else f"NO ({after[0].path}:{after[0].line} {after[0].message[:60]})"
    else:
        row.new_clean = "not listed by bench"
    for changed in list(workspace.changes()):
        if changed == path:
            workspace.delete(path)
        else:
            workspace.write(changed, workspace.start_view().read(changed))


def list_in_navigation(workspace, site, path: str) -> bool:
    """Add `path` to the navigation with a text edit, as the agent would."""
    nav = site.nav_files[0]
    text = workspace.read(nav).decode()
    relative = path[len(site.docs_root) + 1 :] if site.docs_root else path
    ref = posixpath.splitext(relative)[0]
    if site.framework == "mintlify":
        edited = re.sub(r'"pages"\s*:\s*\[', lambda m: m.group(0) + f'"{ref}", ', text, count=1)
    elif site.framework == "mkdocs" and nav.endswith((".yml", ".yaml")):
        edited = re.sub(r"^nav:\s*\n", lambda m: m.group(0) + f"  - Bench: {relative}\n", text, count=1, flags=re.M)
    elif site.framework == "mkdocs":
        edited = text.rstrip("\n") + f"\n- [Bench]({posixpath.relpath(path, posixpath.dirname(nav))})\n"
    elif site.framework == "docusaurus":
        edited = re.sub(r"\b\w+\s*:\s*\[", lambda m: m.group(0) + f"'{ref}', ", text, count=1)
    elif site.framework == "starlight":
        edited = re.sub(r'"?items"?\s*:\s*\[', lambda m: m.group(0) + f'"{ref.lower()}", ', text, count=1)
    elif site.framework == "sphinx":
        holder_dir = posixpath.dirname(nav)
        name = posixpath.relpath(posixpath.splitext(path)[0], holder_dir or ".")

        def entry(match: re.Match) -> str:
            rst = match.group(2).startswith("..")
            return match.group(0) + ("\n" if rst else "") + f"{match.group(1)}{'   ' if rst else ''}{name}\n"

        edited = re.sub(
            r"^(\s*)(\.\. toctree::|```\{toctree\}|:::\{toctree\})[^\n]*\n(?:\1[ \t]*:[^\n]*\n)*",
            entry,
            text,
            count=1,
            flags=re.M,
        )
    else:
        return False
    if edited == text:
        return False
    workspace.write(nav, edited.encode())
    return True


def delete_listed(workspace, site, row: Row) -> None:
    if not site.explicit_nav:
        return
    navigation = read_navigation(Tree(workspace), site)
    listed = [e for e in navigation.entries if e.found and e.targets and e.targets[0] not in site.nav_files]
    entry = next((e for e in reversed(listed) if next((t for t in e.targets if workspace.kind(t)), None)), None)
    if entry is None:
        return
    target = next(t for t in entry.targets if workspace.kind(t))
    workspace.delete(target)
    problems = check_docs(workspace, site).problems
    row.delete_flagged = (
        "yes" if any(p.message.startswith("navigation entry") and target in p.message for p in problems) else "NO"
    )
    workspace.write(target, workspace.start_view().read(target))


def print_table(rows: list[Row], show: int) -> None:
    print(
        "\n| repository | framework | pages | edited | false reports | moved page | broken links reported / "
        "independent | new page flagged | clean once listed | delete flagged | detect s | check cold s | "
        "check warm s (median) | first request chars |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        share = (
            f"{r.reported}/{r.independent} ({100 * r.reported / r.independent:.0f} %)"
            if r.independent
            else f"{r.reported}/0"
        )
        share += f", +{r.extra} more" if r.extra else ""
        warm = statistics.median(r.warm_s) if r.warm_s else 0.0
        print(
            f"| {r.repo} | {r.framework} | {r.pages} | {r.edited} | {r.false_reports} | {r.moved} | {share} | "
            f"{r.new_flagged} | {r.new_clean} | {r.delete_flagged} | {r.detect_s:.3f} | {r.cold_s:.3f} | "
            f"{warm:.3f} | {r.first_request:,} |"
        )
    for r in rows:
        for example in r.false_examples[:show]:
            print(f"  false report in {r.repo}: {example}")


if __name__ == "__main__":
    main()
