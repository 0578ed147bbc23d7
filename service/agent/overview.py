"""A compact overview of the repository for the agent's first request: counts, folders, docs pages, key files."""

import bisect
import heapq
import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from service.agent.path_cache import allowed_files
from service.workspace.pathruns import entries_below, starting_with

PAGE_SUFFIXES = (".md", ".mdx", ".rst")
ROOT_NOTABLE = ("README", "AGENTS.md", "CONTRIBUTING", "CHANGELOG", "SUMMARY.md")
DOCS_CONFIG_NAMES = frozenset(
    {
        "docs.json",
        "mint.json",
        "mkdocs.yml",
        "mkdocs.yaml",
        "conf.py",
        "_toc.yml",
        "book.toml",
        "SUMMARY.md",
        "_sidebar.md",
        "antora.yml",
        "hugo.toml",
        "hugo.yaml",
        "hugo.yml",
        "hugo.json",
        ".gitbook.yaml",
    }
)
DOCS_CONFIG_PREFIXES = ("docusaurus.config.", "sidebars.", "astro.config.", "source.config.")
# Docs configs sit at the root or a few folders down (website/docusaurus.config.js, docs/source/conf.py);
# deeper files with those names (a conf.py in a test fixture) are not about the docs site.
CONFIG_MAX_DEPTH = 3
MAX_PAGES = 60
OVERVIEW_CHARS = 3000  # the overview's size unless the caller says otherwise
MAX_CONFIGS = 10
INDEX_NAMES = ("index.", "readme.", "_index.", "overview.")
PAGES_LABEL = "Pages ({shown} of {total:,}: the shallowest, then the first of each folder):"
NAV_PAGES_LABEL = "Pages ({shown} of {total:,}, in navigation order):"


def repository_overview(
    workspace,
    *,
    docs_root: str = "",
    max_chars: int = OVERVIEW_CHARS,
    site=None,
    nav_order: list[str] | None = None,
) -> str:
    """A short description of the repository (file counts, folders, docs pages, key files) within `max_chars`.

    With the detected `site`, the pages are the site's, its default language's only (other languages are named,
    not listed), in `nav_order` (pages as the navigation lists them) first; for plain Markdown, those under the
    site's docs root unless `docs_root` is given. Without a site, the top-level folder with the most pages is
    described. One `workspace.list_files()` call and no file reads, so its cost and size do not grow with the
    repository.
    """
    paths = allowed_files(workspace)
    if site is None or site.framework == "markdown":
        return plain_overview(plain_facts(paths, docs_root, site), site, max_chars)
    area = site.docs_root
    site_pages = [path for path in paths if site.is_page(path) and not site.is_versioned(path)]
    area_pages = [path for path in site_pages if site.language_of(path) is None]
    translations = _translations(site, paths, site_pages)
    area_set = set(area_pages)
    listed = [path for path in dict.fromkeys(nav_order or []) if path in area_set]
    tree = _TreeFacts(
        len(paths), [p for p in paths if "/" not in p], _folder_counts(paths, ""), [p for p in paths if _listed(p)]
    )
    pages = _AreaPages(area, area_pages, Counter(_suffix(path) for path in area_pages), _by_priority)
    return _render(tree, pages, site, translations, listed, max_chars)


@dataclass
class _TreeFacts:
    """What the overview says of the whole tree: its file count, root files, top-level folders, docs configs."""

    count: int
    root_files: list[str]  # paths without a folder, sorted
    top: Counter  # top-level folder -> files under it
    configs: list[str]  # the docs configs `_docs_configs` picks from, sorted


@dataclass
class _AreaPages:
    """The pages the overview describes (sorted, all under `area`), by suffix, and how to put them in order."""

    area: str
    pages: list[str]
    by_suffix: Counter
    prioritized: Callable[[list[str], int], list[str]]  # (pages, at least how many) -> `_by_priority`'s answer


@dataclass
class PlainFacts:
    """What the overview of a tree without a docs framework is rendered from, kept so that a tree that gained or
    lost files has its overview derived from the last tree's facts and those paths (service.agent.briefing_facts)
    rather than from each of its paths. `pages` is not kept (the keeper knows which paths of the listing are
    pages) and is set again on loading."""

    count: int
    root_files: list[str]  # paths without a folder, sorted
    top: Counter  # top-level folder -> files under it
    configs: list[str]  # sorted paths `_listed` as docs configs
    pages: list[str]  # sorted paths with a page suffix (`is_page_file`)
    area: str  # the folder whose pages are described
    by_suffix: Counter  # the area's pages by suffix
    direct: Counter  # folder -> the area's pages directly in it
    index_pages: list[str]  # the area's index pages, sorted

    def area_pages(self) -> list[str]:
        """The pages under `area`: one run of the sorted pages."""
        return starting_with(self.pages, self.area + "/") if self.area else list(self.pages)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "pages": []}

    def add(self, path: str) -> None:
        """Count `path`, a file the tree gained (the area stays as it is; the caller checks it would); `pages`
        is left to the caller."""
        self.count += 1
        if "/" not in path:
            bisect.insort(self.root_files, path)
        else:
            self.top[path.split("/", 1)[0]] += 1
        if _listed(path):
            bisect.insort(self.configs, path)
        if is_page_file(path) and _under(path, self.area):
            self.by_suffix[_suffix(path)] += 1
            self.direct[path.rpartition("/")[0]] += 1
            if _is_index(path):
                bisect.insort(self.index_pages, path)

    def remove(self, path: str) -> None:
        """Stop counting `path`, a file the tree lost (`pages` is left to the caller)."""
        self.count -= 1
        if "/" not in path:
            self.root_files.remove(path)
        else:
            _decrement(self.top, path.split("/", 1)[0])
        if _listed(path):
            self.configs.remove(path)
        if is_page_file(path) and _under(path, self.area):
            _decrement(self.by_suffix, _suffix(path))
            _decrement(self.direct, path.rpartition("/")[0])
            if _is_index(path):
                self.index_pages.remove(path)


def is_page_file(path: str) -> bool:
    """Whether a plain overview counts `path` as a page (by its suffix)."""
    return path.lower().endswith(PAGE_SUFFIXES)


def plain_facts(paths: list[str], docs_root: str, site) -> PlainFacts:
    """The facts of the sorted `paths` for `plain_overview`, worked out path by path."""
    pages = [path for path in paths if path.lower().endswith(PAGE_SUFFIXES)]  # is_page_file, inlined
    # A detected plain-Markdown site knows its docs root (docs/ when it has pages, else the repository).
    area = plain_area(pages, docs_root, site)
    area_pages = starting_with(pages, area + "/") if area else pages
    return PlainFacts(
        len(paths),
        [path for path in paths if "/" not in path],
        _folder_counts(paths, ""),
        [path for path in paths if _listed(path)],
        pages,
        area,
        Counter(_suffix(path) for path in area_pages),
        Counter(path.rpartition("/")[0] for path in area_pages),
        [path for path in area_pages if _is_index(path)],
    )


def plain_area(pages: list[str], docs_root: str, site) -> str:
    """The folder a plain overview describes, of the sorted `pages` (see `_docs_area`)."""
    return _docs_area(
        pages, docs_root.strip("/") or (site.docs_root if site is not None else ""), fallback=site is None
    )


def plain_overview(facts: PlainFacts, site, max_chars: int) -> str:
    """The overview of a tree without a docs framework (`site` is None or plain Markdown), from its facts."""
    tree = _TreeFacts(facts.count, facts.root_files, facts.top, facts.configs)

    def prioritized(pages: list[str], first: int) -> list[str]:
        return _prioritized(facts, pages, first)

    return _render(
        tree, _AreaPages(facts.area, facts.area_pages(), facts.by_suffix, prioritized), site, [], [], max_chars
    )


def _render(
    tree: _TreeFacts, pages: _AreaPages, site, translations: list[str], listed: list[str], max_chars: int
) -> str:
    area, area_pages = pages.area, pages.pages
    budget = _Budget(max_chars)
    header = (
        f"Repository overview: {tree.count:,} files at the run's start. This is a summary; use list_files, "
        "read_file and search to look further."
    )
    if not budget.add(header):
        return header[:max_chars]
    budget.add(_joined("Root files: ", _root_files(tree.root_files), max_chars // 5))
    budget.add(_joined("Top-level folders (files): ", _counted(tree.top, "/"), max_chars // 4))
    budget.add(_joined("Docs configuration files: ", _docs_configs(tree.configs), max_chars // 6))
    if not area_pages:
        budget.add("No Markdown, MDX or reStructuredText pages found.")
        return budget.text()
    where = f"under {area}/" if area else "in the repository"
    kinds = ", ".join(f"{suffix} {count:,}" for suffix, count in sorted(pages.by_suffix.items()))
    language = f" in the default language ({site.languages[0].code})" if translations else ""
    budget.add(f"Docs pages {where}{language}: {len(area_pages):,} ({kinds}).")
    budget.add(_joined("Translations (not listed here): ", translations, max_chars // 5))
    budget.add(_joined(f"Folders {where} (pages): ", _counted(_folder_counts(area_pages, area), "/"), max_chars // 4))
    _add_pages(budget, pages, listed, translated=bool(translations))
    return budget.text()


def _translations(site, paths: list[str], site_pages: list[str]) -> list[str]:
    """Each other language of `site` with where its pages are and how many there are. Translations outside the
    docs root (Docusaurus `i18n/<locale>/…`) are not pages the docs check reads, so they are counted by suffix."""
    counts: Counter = Counter(site.language_of(path) for path in site_pages)
    if any(lang.folder != site.docs_root and not _under(lang.folder, site.docs_root) for lang in site.languages):
        counts.update(
            site.language_of(path)
            for path in paths
            if path.lower().endswith(site.page_suffixes) and site.root_of(path) is None
        )
    return [f"{language.code} ({_show(language.where)}, {counts[language]:,} pages)" for language in site.languages[1:]]


class _Budget:
    """Lines that together stay within a character limit; a line that does not fit is left out."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.lines: list[str] = []
        self.size = -1  # the first line needs no newline before it

    def room(self) -> int:
        return self.max_chars - self.size - 1

    def add(self, line: str | None, *, reserve: int = 0) -> bool:
        if not line:
            return True
        if len(line) > self.room() - reserve:
            return False
        self.lines.append(line)
        self.size += len(line) + 1
        return True

    def text(self) -> str:
        return "\n".join(self.lines)


def _docs_area(pages: list[str], docs_root: str, *, fallback: bool = True) -> str:
    """The folder whose pages the overview lists: `docs_root` when it holds pages, else (with `fallback`) the
    top-level folder with the most pages, else the whole repository."""
    if docs_root and any(_under(path, docs_root) for path in pages):
        return docs_root
    if not fallback:
        return ""
    counts = Counter(path.split("/", 1)[0] if "/" in path else "" for path in pages)
    if not counts:
        return ""
    # Most pages first, then the name, so ties resolve the same way every time.
    return min(counts.items(), key=lambda item: (-item[1], item[0]))[0]


def _under(path: str, folder: str) -> bool:
    return not folder or path.startswith(folder + "/")


def _folder_counts(paths: list[str], parent: str) -> Counter:
    """Files per folder one level below `parent` (files directly in `parent` are not counted). `paths` are sorted,
    so each folder's files are one run, counted by bisection rather than one by one."""
    inside = parent + "/" if parent else ""
    return Counter(
        {inside + name[:-1]: end - start for name, start, end in entries_below(paths, inside) if name.endswith("/")}
    )


def _counted(counts: Counter, suffix: str) -> list[str]:
    return [f"{_show(name)}{suffix} {count:,}" for name, count in sorted(counts.items())]


def _root_files(paths: list[str]) -> list[str]:
    root = [path for path in paths if "/" not in path]
    notable = [path for path in root if path.startswith(ROOT_NOTABLE) or _is_docs_config(path)]
    return [_show(path) for path in notable + [path for path in root if path not in notable]]


def _listed(path: str) -> bool:
    """Whether `path` is a docs config the overview names."""
    return path.count("/") < CONFIG_MAX_DEPTH and (
        _is_docs_config(path.rsplit("/", 1)[-1]) or f"/{path}".rsplit("/", 2)[-2:-1] == [".vitepress"]
    )


def _docs_configs(paths: list[str]) -> list[str]:
    found = [path for path in paths if _listed(path)]
    # Shallow ones first: the root's mkdocs.yml says more than a nested sidebars.js.
    found.sort(key=lambda path: (path.count("/"), path))
    return [_show(path) for path in found[:MAX_CONFIGS]] + (["…"] if len(found) > MAX_CONFIGS else [])


def _is_docs_config(name: str) -> bool:
    return name in DOCS_CONFIG_NAMES or name.startswith(DOCS_CONFIG_PREFIXES)


def _joined(label: str, items: list[str], limit: int) -> str | None:
    """`label` and as many `items` as fit in `limit` characters, then how many were left out."""
    if not items:
        return None
    tail = f" … and {len(items):,} more"
    line = label
    for shown, item in enumerate(items):
        piece = ("" if shown == 0 else ", ") + item
        last = shown == len(items) - 1
        if len(line) + len(piece) + (0 if last else len(tail)) > limit:
            return line + f" … and {len(items) - shown:,} more" if shown else None
        line += piece
    return line


def _add_pages(budget: _Budget, described: _AreaPages, listed: list[str], translated: bool = False) -> None:
    """List a spread of pages (in navigation order when `listed` is given, else the shallowest first, then the
    first of each folder) while they fit, then say how to list the rest (`translated`: the site has other
    languages, which that listing shows too)."""
    pages = described.pages
    hint = _more_hint(described.by_suffix, described.area, translated)
    chosen: list[str] = []
    reserve = len(hint(len(pages))) + 1
    label = NAV_PAGES_LABEL if listed else PAGES_LABEL
    label_size = len(label.format(shown=min(MAX_PAGES, len(pages)), total=len(pages))) + 1
    room = budget.room() - label_size - reserve
    listed_set = set(listed)
    order = list(listed) + [
        path for path in described.prioritized(pages, MAX_PAGES + len(listed_set)) if path not in listed_set
    ]
    for path in order[:MAX_PAGES]:
        if len(_show(path)) + 1 > room:
            break
        chosen.append(path)
        room -= len(_show(path)) + 1
    if not chosen:
        budget.add(hint(len(pages)))
        return
    budget.add(label.format(shown=len(chosen), total=len(pages)))
    for path in chosen if listed else sorted(chosen):  # navigation order, else by path
        budget.add(_show(path))
    if len(chosen) < len(pages):
        budget.add(hint(len(pages) - len(chosen)))


def _by_priority(pages: list[str], first: int) -> list[str]:
    """The `first` pages (at least) of an order in which any prefix is a fair sample: shallow pages first, then
    each folder's first pages (index pages before the rest) taken across sibling folders in turn."""
    children: dict[str, set[str]] = {}
    in_folder: dict[str, list[str]] = {}
    for path in pages:
        in_folder.setdefault(path.rpartition("/")[0], []).append(path)
    for folder in in_folder:  # each folder once: a large tree has far fewer folders than pages
        parts = folder.split("/") if folder else []
        for depth in range(len(parts)):
            children.setdefault("/".join(parts[:depth]), set()).add("/".join(parts[: depth + 1]))
    folder_rank = {child: n for kids in children.values() for n, child in enumerate(sorted(kids))}
    page_rank = {
        path: n
        for members in in_folder.values()
        for n, path in enumerate(sorted(members, key=lambda p: (not _is_index(p), p)))
    }

    def key(path: str) -> tuple:
        parts = path.split("/")[:-1]
        # Deepest folder first: pages of neighbouring folders alternate before those of cousin folders.
        ranks = [folder_rank["/".join(parts[:n])] for n in range(len(parts), 0, -1)]
        return (len(parts), page_rank[path], *ranks, path)

    # The full key leads with (depth, rank in folder): only pages whose lead is among the `first` smallest can
    # open the order, so the rest are never given the costlier full key.
    def lead(path: str) -> tuple[int, int]:
        return path.count("/"), page_rank[path]

    if len(pages) > first > 0:
        cutoff = heapq.nsmallest(first, map(lead, pages))[-1]
        pages = [path for path in pages if lead(path) <= cutoff]
    return sorted(pages, key=key)


def _prioritized(facts: PlainFacts, pages: list[str], first: int) -> list[str]:
    """`_by_priority(pages, first)` of the area's sorted `pages`, from the facts' page counts per folder and index
    pages: only the pages that open the order are looked at, so it costs what the folders are, not the pages."""
    depth_of = {folder: folder.count("/") + 1 if folder else 0 for folder in facts.direct}
    cutoff = _cutoff(facts.direct, depth_of, first) if len(pages) > first > 0 else None
    if cutoff is None:
        return _by_priority(pages, first)
    page_rank: dict[str, int] = {}
    for folder, count in facts.direct.items():
        if depth_of[folder] <= cutoff[0]:
            taken = count if depth_of[folder] < cutoff[0] else min(count, cutoff[1] + 1)
            for n, path in enumerate(itertools.islice(_by_rank(facts, pages, folder), taken)):
                page_rank[path] = n
    folder_rank = _folder_ranks(facts.direct)

    def key(path: str) -> tuple:
        parts = path.split("/")[:-1]
        ranks = [folder_rank["/".join(parts[:n])] for n in range(len(parts), 0, -1)]
        return (len(parts), page_rank[path], *ranks, path)

    return sorted(page_rank, key=key)


def _cutoff(direct: Counter, depth_of: dict[str, int], first: int) -> tuple[int, int] | None:
    """The `first`th smallest (depth, rank in folder) of the pages counted in `direct` (folder -> pages in it)."""
    by_depth: dict[int, list[int]] = {}
    for folder, count in direct.items():
        by_depth.setdefault(depth_of[folder], []).append(count)
    seen = 0
    for depth in sorted(by_depth):
        sizes = sorted(by_depth[depth], reverse=True)
        alive, rank = len(sizes), 0
        while True:
            while alive and sizes[alive - 1] <= rank:
                alive -= 1  # folders with no page of this rank
            if not alive:
                break
            seen += alive
            if seen >= first:
                return depth, rank
            rank += 1
    return None


def _by_rank(facts: PlainFacts, pages: list[str], folder: str) -> Iterator[str]:
    """The pages directly in `folder` in `_by_priority`'s order within a folder: index pages, then the rest, each
    by path; found in the sorted `pages` by skipping each subfolder's run."""
    inside = folder + "/" if folder else ""
    index_pages = facts.index_pages
    for path in index_pages[bisect.bisect_left(index_pages, inside) :]:
        if not path.startswith(inside):
            break
        if "/" not in path[len(inside) :]:
            yield path
    for name, start, _ in entries_below(pages, inside):
        if not name.endswith("/") and not _is_index(pages[start]):
            yield pages[start]


def _folder_ranks(direct: Counter) -> dict[str, int]:
    """Each folder's place among its siblings (by name), for the folders of pages and their parents."""
    children: dict[str, set[str]] = {}
    for folder in direct:
        parts = folder.split("/") if folder else []
        for depth in range(len(parts)):
            children.setdefault("/".join(parts[:depth]), set()).add("/".join(parts[: depth + 1]))
    return {child: n for kids in children.values() for n, child in enumerate(sorted(kids))}


def _decrement(counts: Counter, key: str) -> None:
    """One fewer of `key`, gone when none is left (a zero would still be shown)."""
    counts[key] -= 1
    if counts[key] <= 0:
        del counts[key]


def _is_index(path: str) -> bool:
    return path.rpartition("/")[2].lower().startswith(INDEX_NAMES)


def _more_hint(by_suffix: Counter, area: str, translated: bool):
    prefix = f"{area}/**/" if area else ""
    suffixes = sorted(suffix for suffix, count in by_suffix.items() if count)
    calls = " or ".join(f"list_files('{prefix}*{suffix}')" for suffix in suffixes)
    others = " (it lists the translations too)" if translated else ""
    return lambda left: f"… and {left:,} more: use {calls}{others}"


def _suffix(path: str) -> str:
    return "." + path.rsplit(".", 1)[-1].lower()


def _show(path: str) -> str:
    # Paths are data from the repository: a newline in one must not pass for a line of the overview.
    return json.dumps(path, ensure_ascii=False) if any(ord(c) < 32 for c in path) else path
