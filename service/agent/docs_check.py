"""The docs check the agent runs before finishing: what this run's changes broke in pages, links and navigation.

Only problems in pages and navigation the run changed (and in unchanged pages whose links it broke) are
reported, so a repository's older problems do not hold the agent up.
"""

import difflib
import posixpath
import re
from dataclasses import dataclass, field
from functools import cached_property

from service.agent.docsite.anchors import anchor_ids, includes_other_content
from service.agent.docsite.detect import detect_site, read_navigation, suggest_entry
from service.agent.docsite.frontmatter import FrontMatterError, parse_front_matter
from service.agent.docsite.links import extract_links, fragment, resolve
from service.agent.docsite.mdx import tag_problems
from service.agent.docsite.site import DocsSite, Navigation, NavEntry, read_text
from service.workspace.entries import EntryKind, WorkspaceError

PAGE_SUFFIXES = (".md", ".mdx")
INDEX_PAGES = ("index.md", "index.mdx", "README.md")
MAX_LOST_ANCHORS = 50  # anchors searched for per changed page; a rewritten page could lose hundreds


@dataclass(frozen=True)
class DocsProblem:
    path: str
    line: int  # 1-based
    message: str


@dataclass
class DocsReport:
    """What the docs check found; `pages_checked` counts the changed pages it read."""

    problems: list[DocsProblem] = field(default_factory=list)
    pages_checked: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_text(self) -> str:
        """The report as a Markdown list for the model and the pull request body, ending with a one-line verdict."""
        if self.ok:
            return f"docs check passed: {self.pages_checked} changed page(s), no problems found"
        lines = [f"- `{p.path}:{p.line}` {p.message}" for p in self.problems]
        lines.append(f"docs check failed: {len(self.problems)} problem(s) found, {self.pages_checked} changed "
                     "page(s) checked")
        return "\n".join(lines)


def check_docs(workspace, site: DocsSite | None = None) -> DocsReport:
    """Check what this run changed: links, anchors, front matter and JSX tags of changed pages, links and
    navigation entries its moves and deletes broke, and whether its new pages are in the navigation.

    `site` is the detected docs site (`detect_site`); it is detected here when not given.
    """
    changes = workspace.changes()
    if not changes:
        return DocsReport()
    with workspace.start_view() as start:
        run = _Run(workspace, start, site or detect_site(workspace), changes)
        problems = _changed_page_problems(run)
        problems += _links_to_removed_files(run)
        problems += _links_to_lost_anchors(run)
        problems += _navigation_problems(run)
    problems.sort(key=lambda p: (p.path, p.line))
    return DocsReport(problems, pages_checked=len(run.changed_pages))


@dataclass
class _Run:
    """The check's view of one run: the workspace now, its start tree, the site and the changes."""

    workspace: object
    start: object
    site: DocsSite
    changes: dict[str, bytes | None]
    _anchors: dict[str, set[str]] = field(default_factory=dict)

    @cached_property
    def files(self) -> set[str]:
        return set(self.workspace.list_files())

    @cached_property
    def removed(self) -> set[str]:
        return {p for p, data in self.changes.items() if data is None}

    @cached_property
    def added(self) -> set[str]:
        return {p for p, data in self.changes.items() if data is not None and self.start.kind(p) is None}

    @cached_property
    def changed_pages(self) -> list[str]:
        return sorted(p for p, data in self.changes.items()
                      if data is not None and (_is_page(p) or self.site.is_page(p)))

    def text(self, path: str) -> str:
        data = self.changes.get(path)
        return data.decode("utf-8", "replace") if data is not None else read_text(self.workspace, path) or ""

    def anchors(self, path: str) -> set[str]:
        if path not in self._anchors:
            self._anchors[path] = anchor_ids(self.text(path))
        return self._anchors[path]

    @property
    def checks_anchors(self) -> bool:
        # Sphinx (MyST) builds heading anchors only when configured to, and reST labels are not headings.
        return self.site.framework != "sphinx"


def _changed_page_problems(run: _Run) -> list[DocsProblem]:
    problems = []
    for page in run.changed_pages:
        if not _is_page(page):
            continue
        text = run.text(page)
        try:
            parse_front_matter(text)
        except FrontMatterError as exc:
            problems.append(DocsProblem(page, exc.line, exc.message))
        if page.lower().endswith(".mdx"):
            problems += [DocsProblem(page, p.line, p.message) for p in tag_problems(text)]
        problems += _link_problems(run, page, text)
    return problems


def _link_problems(run: _Run, page: str, text: str) -> list[DocsProblem]:
    problems = []
    for link in extract_links(text):
        if link.target.startswith("#"):
            problems += _anchor_problem(run, page, link.line, link.target, page)
            continue
        try:
            resolved = resolve(page, link.target)
        except ValueError:
            continue
        if resolved is None:
            problems.append(DocsProblem(page, link.line, f"link to {link.target} points outside the repository"))
        elif (reason := _why_broken(run.workspace, resolved)) is not None:
            problems.append(DocsProblem(page, link.line, f"broken link: {link.target} ({reason})"))
        elif (target := _landing_page(run.workspace, resolved)) is not None:
            problems += _anchor_problem(run, page, link.line, link.target, target)
    return problems


def _anchor_problem(run: _Run, page: str, line: int, target: str, target_page: str) -> list[DocsProblem]:
    anchor = fragment(target)
    if anchor is None or not run.checks_anchors or not _is_page(target_page):
        return []
    known = run.anchors(target_page)
    if anchor.lower() in known or includes_other_content(run.text(target_page)):
        return []
    where = "this page" if target_page == page else target_page
    close = difflib.get_close_matches(anchor.lower(), sorted(known), n=3)
    hint = f"; did you mean {', '.join('#' + c for c in close)}?" if close else \
        "; link to an existing heading or remove the anchor"
    return [DocsProblem(page, line, f"broken anchor: {target} ({where} has no heading or id `{anchor}`){hint}")]


def _links_to_removed_files(run: _Run) -> list[DocsProblem]:
    problems = []
    for page in _pages_mentioning(run.workspace, _search_terms(run.removed), exclude=set(run.changes)):
        text = read_text(run.workspace, page)
        for link in extract_links(text or ""):
            resolved = _resolve_quietly(page, link.target)
            if resolved and _targets(resolved) & run.removed and _why_broken(run.workspace, resolved):
                problems.append(DocsProblem(page, link.line, f"link to {link.target}, which this run moved or "
                                                             "deleted"))
    return problems


def _links_to_lost_anchors(run: _Run) -> list[DocsProblem]:
    # A renamed or deleted heading breaks `page.md#old-heading` links in pages the run did not touch.
    if not run.checks_anchors:
        return []
    problems = []
    for page in run.changed_pages:
        if not _is_page(page) or page in run.added:
            continue
        lost = sorted(anchor_ids(read_text(run.start, page) or "") - run.anchors(page))[:MAX_LOST_ANCHORS]
        if not lost:
            continue
        pattern = "#(" + "|".join(re.escape(anchor) for anchor in lost) + ")"
        for other in _pages_mentioning(run.workspace, [pattern], exclude=set(run.changes), escape=False):
            for link in extract_links(read_text(run.workspace, other) or ""):
                resolved = _resolve_quietly(other, link.target)
                anchor = fragment(link.target)
                if resolved and anchor and anchor.lower() in lost \
                        and _landing_page(run.workspace, resolved) == page:
                    problems.append(DocsProblem(other, link.line, f"link to {link.target}: this run removed that "
                                                                  f"anchor from {page} (a heading was renamed or "
                                                                  "deleted); point the link at the new heading"))
    return problems


def _navigation_problems(run: _Run) -> list[DocsProblem]:
    site = run.site
    watched = {site.config_path, *site.nav_files}
    if site.framework == "markdown" or not any(p in watched or site.is_page(p) for p in run.changes):
        return []
    navigation = read_navigation(run.workspace, site, run.files)
    problems = [DocsProblem(e.file, e.line, f"{e.message}; fix it so the site builds")
                for e in navigation.errors if e.file in run.changes]
    broken = [entry for entry in navigation.entries if not entry.found]
    if broken:
        problems += _broken_entry_problems(run, broken)
    problems += _pages_missing_from(run, navigation)
    return problems


def _broken_entry_problems(run: _Run, broken: list[NavEntry]) -> list[DocsProblem]:
    # Entries that were already broken at the start are not this run's doing and are left be.
    before = read_navigation(run.start, run.site, set(run.start.list_files()))
    found_before = {(e.file, e.ref): e for e in before.entries if e.found}
    broken_before = {(e.file, e.ref) for e in before.entries if not e.found}
    problems = []
    for entry in broken:
        key = (entry.file, entry.ref)
        if key in broken_before and key not in found_before:
            continue
        earlier = found_before.get(key)
        removed = [t for t in (earlier.targets if earlier else entry.targets) if t in run.removed]
        if removed:
            message = (f"navigation entry `{entry.ref}` points to {removed[0]}, which this run moved or deleted; "
                       "update the entry to the page's new path or remove it")
        else:
            looked = ", ".join(entry.targets[:2]) or "a page inside the repository"
            message = (f"navigation entry `{entry.ref}` points to no page (looked for {looked}); create the page "
                       "or fix the entry")
        problems.append(DocsProblem(entry.file, entry.line, message))
    return problems


def _pages_missing_from(run: _Run, navigation: Navigation) -> list[DocsProblem]:
    if not navigation.complete:
        return []  # part of the navigation could not be read, so any page may be listed there
    problems = []
    for page in sorted(run.added):
        if run.site.needs_nav_entry(page, run.text(page)) and not navigation.lists(page):
            problems.append(DocsProblem(page, 1, "new page is not in the navigation, so readers cannot find it: "
                                                 + suggest_entry(run.site, page, run.files)))
    return problems


def _resolve_quietly(page: str, target: str) -> str | None:
    try:
        return resolve(page, target)
    except ValueError:
        return None


def _targets(resolved: str) -> set[str]:
    # Every file a link to `resolved` may stand for.
    candidates = {resolved, *(resolved + s for s in PAGE_SUFFIXES)}
    candidates |= {posixpath.join(resolved, name) for name in INDEX_PAGES}
    return candidates


def _why_broken(workspace, resolved: str) -> str | None:
    # None when the link resolves: to the path as written, with a page suffix, or to a folder's index page.
    kind = EntryKind.DIRECTORY if resolved == "" else workspace.kind(resolved)
    if kind is EntryKind.DIRECTORY:
        if any(_kind_is_file(workspace, posixpath.join(resolved, name)) for name in INDEX_PAGES):
            return None
        return f"the folder {resolved or '(repository root)'} has no {', '.join(INDEX_PAGES)}"
    if kind is not None or any(_kind_is_file(workspace, resolved + suffix) for suffix in PAGE_SUFFIXES):
        return None
    return f"no file {resolved}"


def _landing_page(workspace, resolved: str) -> str | None:
    """The file a link that resolves lands on: the path itself, with a page suffix, or the folder's index."""
    kind = EntryKind.DIRECTORY if resolved == "" else workspace.kind(resolved)
    if kind is EntryKind.DIRECTORY:
        candidates = [posixpath.join(resolved, name) for name in INDEX_PAGES]
    elif kind is not None:
        return resolved
    else:
        candidates = [resolved + suffix for suffix in PAGE_SUFFIXES]
    return next((c for c in candidates if _kind_is_file(workspace, c)), None)


def _kind_is_file(workspace, path: str) -> bool:
    kind = workspace.kind(path)
    return kind is not None and kind is not EntryKind.DIRECTORY


def _search_terms(removed: set[str]) -> list[str]:
    terms = set()
    for path in removed:
        folder, name = posixpath.split(path)
        stem, suffix = posixpath.splitext(name)
        terms.add(stem if suffix.lower() in PAGE_SUFFIXES else name)
        if name in INDEX_PAGES and folder:
            terms.add(posixpath.basename(folder))
    return sorted(terms)


def _pages_mentioning(workspace, terms: list[str], *, exclude: set[str], escape: bool = True) -> list[str]:
    # A cheap pre-filter: only pages whose text matches a term get their links parsed.
    pages = set()
    for term in terms:
        try:
            matches = workspace.search(re.escape(term) if escape else term, globs=["*.md", "*.mdx"],
                                       ignore_case=not escape, max_matches=1000)
        except WorkspaceError:
            continue
        pages |= {m.path for m in matches if _is_page(m.path) and m.path not in exclude}
    return sorted(pages)


def _is_page(path: str) -> bool:
    return path.lower().endswith(PAGE_SUFFIXES)
