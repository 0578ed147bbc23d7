"""The docs check the agent runs before finishing: broken relative links caused by this run's changes."""

import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import unquote

from service.workspace.entries import EntryKind, WorkspaceError

PAGE_SUFFIXES = (".md", ".mdx")
INDEX_PAGES = ("index.md", "index.mdx", "README.md")

_INLINE_LINK = re.compile(r"\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+[\"'(][^)\n]*)?\s*\)")
_REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]\n]+\]:\s*(<[^>\n]*>|\S+)")
_HREF = re.compile(r"<a\s[^>]*?\bhref\s*=\s*(?:\"([^\"]*)\"|'([^']*)')", re.IGNORECASE)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


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
        """The report as plain text for the model and the pull request body."""
        if self.ok:
            return f"docs check passed: no broken links in {self.pages_checked} changed page(s)"
        lines = [f"docs check found {len(self.problems)} problem(s):"]
        lines += [f"- {p.path}:{p.line}: {p.message}" for p in self.problems]
        return "\n".join(lines)


@dataclass(frozen=True)
class Link:
    line: int
    target: str


def check_docs(workspace) -> DocsReport:
    """Check the Markdown/MDX pages this run changed, and unchanged pages that link to files it removed."""
    changes = workspace.changes()
    changed_pages = sorted(p for p, data in changes.items() if data is not None and _is_page(p))
    removed = {p for p, data in changes.items() if data is None}
    report = DocsReport(pages_checked=len(changed_pages))
    for page in changed_pages:
        for link, resolved in _page_links(page, changes[page]):
            if resolved is None:
                report.problems.append(DocsProblem(page, link.line, f"link to {link.target} points outside the "
                                                                    "repository"))
            elif (reason := _why_broken(workspace, resolved)) is not None:
                report.problems.append(DocsProblem(page, link.line, f"broken link: {link.target} ({reason})"))
    for page in _pages_mentioning(workspace, removed, exclude=set(changes)):
        try:
            data = workspace.read(page)
        except WorkspaceError:  # a symlink or submodule entry named like a page: not a page we can read
            continue
        for link, resolved in _page_links(page, data):
            if resolved is not None and _targets(resolved) & removed and _why_broken(workspace, resolved):
                report.problems.append(DocsProblem(page, link.line, f"link to {link.target}, which this run "
                                                                    "moved or deleted"))
    return report


def extract_links(text: str) -> list[Link]:
    """The link targets in a Markdown/MDX page (inline, reference definitions, `<a href>`), outside code."""
    links, fence = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        line = _CODE_SPAN.sub("", line)
        targets = [m.group(1) for m in _INLINE_LINK.finditer(line)]
        targets += [m.group(1) for m in _REFERENCE_DEF.finditer(line)]
        targets += [m.group(1) if m.group(1) is not None else m.group(2) for m in _HREF.finditer(line)]
        links += [Link(number, t.strip("<>")) for t in targets]
    return links


def resolve(page: str, target: str) -> str | None:
    """The repository path a relative link on `page` points to; "" for the root, None outside the repository.

    Raises ValueError for links the check does not follow (external, site-absolute, anchors, templates).
    """
    if not target or _SCHEME.match(target) or target.startswith(("#", "/")) or "{" in target:
        raise ValueError(target)
    path = unquote(re.split(r"[#?]", target, maxsplit=1)[0])
    if not path or "\0" in path:
        raise ValueError(target)
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
    if joined == ".." or joined.startswith("../"):
        return None
    return "" if joined == "." else joined


def _page_links(page: str, data: bytes):
    for link in extract_links(data.decode("utf-8", "replace")):
        try:
            yield link, resolve(page, link.target)
        except ValueError:
            continue


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


def _kind_is_file(workspace, path: str) -> bool:
    kind = workspace.kind(path)
    return kind is not None and kind is not EntryKind.DIRECTORY


def _pages_mentioning(workspace, removed: set[str], *, exclude: set[str]) -> list[str]:
    # A cheap pre-filter: only pages whose text names a removed file get their links parsed.
    terms = set()
    for path in removed:
        folder, name = posixpath.split(path)
        stem, suffix = posixpath.splitext(name)
        terms.add(stem if suffix.lower() in PAGE_SUFFIXES else name)
        if name in INDEX_PAGES and folder:
            terms.add(posixpath.basename(folder))
    pages = set()
    for term in sorted(terms):
        try:
            matches = workspace.search(re.escape(term), globs=["*.md", "*.mdx"], max_matches=1000)
        except WorkspaceError:
            continue
        pages |= {m.path for m in matches if _is_page(m.path) and m.path not in exclude}
    return sorted(pages)


def _is_page(path: str) -> bool:
    return path.lower().endswith(PAGE_SUFFIXES)
