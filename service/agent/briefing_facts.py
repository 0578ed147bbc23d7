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
    plain_facts,
    plain_overview,
    repository_overview,
)
from service.agent.path_cache import allowed_files, forbidden_paths
from service.workspace.trees import TreeChange

MARKDOWN_ROOT = "docs"  # the docs root of a plain-Markdown site when docs/ holds pages (detect._markdown_site)


@dataclass
class SiteFacts:
    """What a plain-Markdown site's stats and overview were worked out from."""

    docs_root: str  # the docs root the run was asked about ("" for none)
    pages: list[str]  # the site's pages, sorted
    extensions: dict[str, list]  # extension -> [pages with it, the first such page]
    overview: PlainFacts


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
    kept = SiteFacts(docs_root, found.pages, found.extensions, facts)
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
    facts = _copied(kept)
    for path in gone:
        _remove(facts, site, path)
    for path in came:
        _add(facts, site, path)
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
        pages=list(kept.pages),
        extensions={e: list(v) for e, v in kept.extensions.items()},
        overview=replace(
            facts,
            root_files=list(facts.root_files),
            top=facts.top.copy(),
            configs=list(facts.configs),
            pages=list(facts.pages),
            by_suffix=facts.by_suffix.copy(),
            direct=facts.direct.copy(),
            index_pages=list(facts.index_pages),
        ),
    )


def _add(facts: SiteFacts, site: DocsSite, path: str) -> None:
    facts.overview.add(path)
    if site.is_page(path) and not site.is_versioned(path):
        bisect.insort(facts.pages, path)
        seen = facts.extensions.setdefault(page_extension(path), [0, path])
        seen[0] += 1
        seen[1] = min(seen[1], path)


def _remove(facts: SiteFacts, site: DocsSite, path: str) -> None:
    facts.overview.remove(path)
    if site.is_page(path) and not site.is_versioned(path):
        del facts.pages[bisect.bisect_left(facts.pages, path)]
        extension = page_extension(path)
        seen = facts.extensions[extension]
        seen[0] -= 1
        if not seen[0]:
            del facts.extensions[extension]
        elif seen[1] == path:  # the first page of its kind went: the next one (rarely needed, so looked for)
            seen[1] = next(page for page in facts.pages if page_extension(page) == extension)


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
