"""The docs site and overview of a start tree, and what they were worked out from path by path (page lists, counts
per folder and suffix), kept with them by tree id (service.agent.tree_cache). A tree that gained or lost files
since the last one kept has them derived from those facts and the paths that came or went, so the cost follows
the change, not the repository.

Derived only for a tree without a docs framework (plain Markdown, no config even tried) whose paths the sandbox
policy all allows, and only while the change leaves the docs root and the overview's folder as they were and
brings or takes no file named like a docs config; anything else is worked out from scratch. A framework's site
depends on its config and on which files exist in ways only its own detection knows.
"""

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

from service.agent.docsite.detect import (
    _config_of,
    detect,
    navigation_order,
    ordered_extensions,
    page_extension,
    with_page_stats,
)
from service.agent.docsite.site import DocsSite
from service.agent.docsite.tree import Tree
from service.agent.overview import (
    OVERVIEW_CHARS,
    PlainFacts,
    is_page_file,
    plain_facts,
    plain_overview,
    repository_overview,
)
from service.agent.path_cache import allowed_files, forbidden_paths
from service.workspace.trees import TreeChange

MARKDOWN_ROOT = "docs"  # the docs root of a plain-Markdown site when docs/ holds pages (detect._markdown_site)


SITE_PAGE, OVERVIEW_PAGE = 1, 2  # what a path of the listing is, in `SiteFacts.kinds`
_SITE_PAGES = bytes(kind & SITE_PAGE for kind in range(256))  # translation tables: kinds -> 0/1 selectors
_OVERVIEW_PAGES = bytes(kind & OVERVIEW_PAGE for kind in range(256))


@dataclass
class SiteFacts:
    """What a plain-Markdown site's stats and overview were worked out from. Which paths are pages is kept as
    one byte a path of the tree's sorted listing, not as the paths: a tree's entry stays small, and the pages are
    picked out of the listing the run loads anyway (`restore`)."""

    docs_root: str  # the docs root the run was asked about ("" for none)
    kinds: bytes  # per path of the start tree's listing: SITE_PAGE | OVERVIEW_PAGE bits
    pages: list[str]  # the site's pages, sorted (not kept)
    extensions: dict[str, list]  # extension -> [pages with it, the first such page]
    overview: PlainFacts

    def __getstate__(self) -> dict:
        return {**self.__dict__, "pages": []}

    def restore(self, paths: list[str]) -> None:
        """Pick the pages out of `paths`, the sorted listing `kinds` describes."""
        self.pages = list(itertools.compress(paths, self.kinds.translate(_SITE_PAGES)))
        self.overview.pages = list(itertools.compress(paths, self.kinds.translate(_OVERVIEW_PAGES)))


Entry = tuple[DocsSite, str, frozenset[str] | None, SiteFacts | None]


def site_and_overview(workspace, docs_root: str) -> Entry:
    """The site and overview of the start tree, the paths whose content they were worked out from, and the facts
    a later tree's are derived from (None when they cannot be)."""
    view = workspace.recording_view()
    found = detect(view, docs_root)
    site = found.site
    if site.framework != "markdown" or found.configs_tried or forbidden_paths(workspace):
        overview = repository_overview(
            view, docs_root=docs_root, site=site, nav_order=navigation_order(Tree(view), site)
        )
        return site, overview, view.content_read(), None
    # repository_overview's own way for plain Markdown (no navigation, nothing hidden), its facts kept.
    paths = allowed_files(view)
    facts = plain_facts(paths, docs_root, site)
    site_pages, pages = frozenset(found.pages), frozenset(facts.pages)
    kinds = bytes((path in site_pages) | (path in pages) << 1 for path in paths)
    kept = SiteFacts(docs_root, kinds, found.pages, found.extensions, facts)
    return site, plain_overview(facts, site, OVERVIEW_CHARS), view.content_read(), kept


def derive(workspace, docs_root: str, earlier: Entry, changes: Sequence[TreeChange]) -> Entry | None:
    """The entry of the start tree from the `earlier` tree's and the entries that differ; None to work it out."""
    if _reusable(earlier, changes):
        return earlier
    site, _, _, kept = earlier
    if kept is None or kept.docs_root != docs_root:
        return None
    came = [change.path for change in changes if change.old is None and change.new is not None]
    gone = [change.path for change in changes if change.new is None and change.old is not None]
    if any(_config_of(path)[0] is not None for path in came + gone) or forbidden_paths(workspace):
        return None
    paths = workspace.start_files()  # nothing hidden: what the listing holds is what the entry counted
    kinds = _spliced(kept.kinds, paths, changes, lambda path: _kind(site, path))
    if kinds is None:
        return None
    facts = _copied(kept)
    facts.kinds = kinds
    for path in gone:
        facts.overview.remove(path)
        _uncount(facts, site, path)
    for path in came:
        facts.overview.add(path)
        _count(facts, site, path)
    facts.restore(paths)
    for extension, seen in facts.extensions.items():
        if seen[1] is None:  # the first page of its kind went: the next one (rarely needed, so looked for)
            seen[1] = next(page for page in facts.pages if page_extension(page) == extension)
    root = docs_root.strip("/") or (MARKDOWN_ROOT if _has_docs_page(facts.overview.pages) else "")
    if root != site.docs_root or _area(facts.overview.pages, docs_root, site) != facts.overview.area:
        return None  # the site or the overview now describes another folder
    view = workspace.recording_view()
    site = with_page_stats(view, site, facts.pages, ordered_extensions(facts.extensions))
    return site, plain_overview(facts.overview, site, OVERVIEW_CHARS), view.content_read(), facts


def _reusable(earlier: Entry, changes: Sequence[TreeChange]) -> bool:
    """Whether the trees differ only in the content of files the entry did not read: both see the same paths and
    kinds then."""
    read = earlier[2]
    if read is None:
        return False
    return not any(
        change.old is None or change.new is None or change.old[0] != change.new[0] or change.path in read
        for change in changes
    )


def _copied(kept: SiteFacts) -> SiteFacts:
    facts = kept.overview
    return replace(
        kept,
        extensions={e: list(v) for e, v in kept.extensions.items()},
        overview=replace(
            facts,
            root_files=list(facts.root_files),
            top=facts.top.copy(),
            configs=list(facts.configs),
            by_suffix=facts.by_suffix.copy(),
            direct=facts.direct.copy(),
            index_pages=list(facts.index_pages),
        ),
    )


def _kind(site: DocsSite, path: str) -> int:
    """What `path` is in `SiteFacts.kinds`."""
    on_site = site.is_page(path) and not site.is_versioned(path)
    return (SITE_PAGE if on_site else 0) | (OVERVIEW_PAGE if is_page_file(path) else 0)


def _spliced(kinds: bytes, paths: list[str], changes: Sequence[TreeChange], kind_of) -> bytes | None:
    """The kinds of the sorted `paths` from those of the earlier tree's listing (`kinds`) and the entries that
    differ (sorted by path): runs of unchanged paths are copied whole, so it costs what changed, in C. None when
    the two do not line up (not the tree the kinds were kept for)."""
    result = bytearray()
    start = 0  # the next earlier path not copied yet
    shift = 0  # earlier paths before the current one minus later ones: removed so far minus added
    for change in changes:
        if change.old is not None and change.new is not None:
            continue  # the same path in both: its kind depends on the path alone
        earlier_index = bisect.bisect_left(paths, change.path) + shift
        if earlier_index < start or earlier_index > len(kinds):
            return None
        result += kinds[start:earlier_index]
        if change.new is None:  # gone: skipped
            start, shift = earlier_index + 1, shift + 1
        else:  # came: inserted
            start, shift = earlier_index, shift - 1
            result.append(kind_of(change.path))
    result += kinds[start:]
    return bytes(result) if len(result) == len(paths) else None


def _count(facts: SiteFacts, site: DocsSite, path: str) -> None:
    if site.is_page(path) and not site.is_versioned(path):
        seen = facts.extensions.setdefault(page_extension(path), [0, path])
        seen[0] += 1
        if seen[1] is not None:
            seen[1] = min(seen[1], path)


def _uncount(facts: SiteFacts, site: DocsSite, path: str) -> None:
    if site.is_page(path) and not site.is_versioned(path):
        extension = page_extension(path)
        seen = facts.extensions[extension]
        seen[0] -= 1
        if not seen[0]:
            del facts.extensions[extension]
        elif seen[1] == path:
            seen[1] = None  # the next first is looked for once the pages are restored


def _has_docs_page(pages: list[str]) -> bool:
    """Whether the sorted `pages` (overview.PAGE_SUFFIXES) hold a Markdown file under docs/, which makes docs/ a
    plain site's root (detect._markdown_site's test); the first of docs/ usually tells."""
    inside = MARKDOWN_ROOT + "/"
    for page in pages[bisect.bisect_left(pages, inside) :]:
        if not page.startswith(inside):
            return False
        if page.lower().endswith((".md", ".mdx")):
            return True
    return False


def _area(pages: list[str], docs_root: str, site: DocsSite) -> str:
    """The overview's folder for the sorted `pages` (overview.plain_area), by bisection."""
    root = docs_root.strip("/") or site.docs_root
    i = bisect.bisect_left(pages, root + "/")
    holds = bool(root) and i < len(pages) and pages[i].startswith(root + "/")
    return root if holds else ""  # a detected site's overview falls back to no other folder
