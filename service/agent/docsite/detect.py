"""Which docs framework a repository uses and where its pages and navigation live, found cheaply."""

import logging
import posixpath
from collections import Counter
from dataclasses import dataclass, replace

from service.agent.docsite import (
    docusaurus,
    fumadocs,
    gitbook,
    hugo,
    mintlify,
    mkdocs,
    nextra,
    sphinx,
    starlight,
    vitepress,
)
from service.agent.docsite.framework import AddsToPages, ChecksPages, Framework
from service.agent.docsite.frontmatter import front_matter_keys
from service.agent.docsite.limits import Uncheckable
from service.agent.docsite.routing import Router
from service.agent.docsite.site import SKIPPED_FOLDERS, DocsSite, Navigation, in_folder, read_text
from service.agent.docsite.tree import Tree

log = logging.getLogger(__name__)

# Tried in this order when configs are equally deep; the first that accepts its config wins.
FRAMEWORKS: dict[str, Framework] = {
    "mintlify": mintlify,
    "docusaurus": docusaurus,
    "starlight": starlight,
    "mkdocs": mkdocs,
    "sphinx": sphinx,
    "vitepress": vitepress,
    "fumadocs": fumadocs,
    "hugo": hugo,
    "nextra": nextra,
    "gitbook": gitbook,
}
CONFIG_FILES = {name: framework for framework, module in FRAMEWORKS.items() for name in module.CONFIG_NAMES}
# Configs named by their last path parts (`.vitepress/config.ts`, `config/_default/hugo.toml`): the site's folder
# is the one that holds the first part.
CONFIG_TAILS = {tail: framework for framework, module in FRAMEWORKS.items() for tail in module.CONFIG_TAILS}
# What every config's path ends with: one test turns away the other files of a large tree before any lookup.
_CONFIG_ENDINGS = (*CONFIG_FILES, *CONFIG_TAILS)
MAX_CONFIG_DEPTH = 2  # folders below the docs root searched for a config
SAMPLE_PAGES = 40  # pages read for front matter conventions, so detection stays fast on large repositories
# Folders whose configs belong to test fixtures or dependencies, not to the repository's own docs.
NOT_SITE_FOLDERS = frozenset({*SKIPPED_FOLDERS, "tests", "test", "fixtures", "testdata"})
MARKDOWN_HINT = (
    "No config of a docs framework the check knows was found, so how the site is built, navigated and "
    "routed is unknown: relative links to files and anchors are checked, links of the form `/x` are "
    "not. Link each new page from an existing page so readers can find it."
)


def detect_site(workspace, docs_root: str = "") -> DocsSite:
    """The docs site in `workspace` (within `docs_root` when given): one file listing, configs and a page sample."""
    return detect(workspace, docs_root).site


@dataclass
class Detection:
    """A detected site with what it was worked out from: whether any config was a candidate, and its pages."""

    site: DocsSite
    configs_tried: bool
    pages: list[str]  # the site's current pages (not an older version's), sorted
    extensions: dict[str, list]  # their `extension_counts`


def detect(workspace, docs_root: str = "") -> Detection:
    """`detect_site` with the candidates and pages it went through, for a caller that keeps them."""
    files = workspace.list_files()
    file_set = set(files)
    root = docs_root.strip("/")
    site = None
    candidates = _config_candidates(files, root)
    for config in candidates:
        try:
            found = FRAMEWORKS[_config_of(config)[0] or ""].detect(workspace, config, file_set)
        except Uncheckable:
            continue  # a config too large or complex to read is not taken for the site's
        except Exception:  # a bug meeting an odd config must not stop the run that reads it
            log.exception("detecting the docs site from %s failed", config)
            continue

        if found is not None and _related(found.docs_root, root):
            site = found
            break
    if site is None:
        site = _markdown_site(files, root)
    pages = [p for p in files if site.is_page(p) and not site.is_versioned(p)]  # the current docs' only
    extensions = extension_counts(pages)
    site = with_page_stats(workspace, site, pages, ordered_extensions(extensions))
    return Detection(site, bool(candidates), pages, extensions)


def read_navigation(tree: Tree, site: DocsSite) -> Navigation:
    """The site's navigation as it is in `tree` (the docs check's view of now or the start); an empty,
    incomplete one for plain Markdown."""
    module = FRAMEWORKS.get(site.framework)
    if module is None:
        return Navigation(complete=False)
    return module.navigation(tree, site)


def navigation_order(tree: Tree, site: DocsSite) -> list[str]:
    """The site's pages in the order its navigation shows them, by the framework's rule; [] when the site has
    no explicit navigation or it cannot be read."""
    module = FRAMEWORKS.get(site.framework)
    if module is None or not site.explicit_nav:
        return []
    try:
        return module.navigation_order(tree, site)
    except Uncheckable:
        return []
    except Exception:  # the overview then lists pages by folder, and check_docs reports what it cannot read
        log.exception("reading the navigation of %s failed", site.config_path)
        return []


def make_router(site: DocsSite, tree: Tree) -> Router:
    """The router that resolves links on `site` by its framework's rules, over one tree (now or at the start)."""
    module = FRAMEWORKS.get(site.framework)
    return module.router(site, tree) if module is not None else Router(site, tree)


def has_extras(site: DocsSite) -> bool:
    """Whether the site's framework adds links or anchors to what the page parser finds (see below)."""
    return isinstance(FRAMEWORKS.get(site.framework), AddsToPages)


def extra_links(site: DocsSite, page: str, text: str) -> list:
    """Links the framework adds to a page's text beyond what the page parser sees (Hugo's `ref` shortcodes)."""
    module = FRAMEWORKS.get(site.framework)
    return module.extra_links(site, page, text) if isinstance(module, AddsToPages) else []


def extra_anchors(site: DocsSite, text: str) -> set[str]:
    """Anchors the framework's Markdown settings add beyond headings and ids (Hugo's definition-term ids)."""
    module = FRAMEWORKS.get(site.framework)
    return module.extra_anchors(site, text) if isinstance(module, AddsToPages) else set()


def page_problems(tree: Tree, site: DocsSite, page: str) -> list[tuple[int, str]]:
    """What the framework's own rules find wrong in a page (a blog post's metadata), as (line, message)."""
    module = FRAMEWORKS.get(site.framework)
    return module.page_problems(tree, site, page) if isinstance(module, ChecksPages) else []


def suggest_entry(tree: Tree, site: DocsSite, page: str) -> str:
    """How to list a new page in the site's navigation (as it is in `tree`), for the docs check's message."""
    return FRAMEWORKS[site.framework].suggest_entry(tree, site, page)


def _config_candidates(files: list[str], root: str) -> list[str]:
    depth_of_root = len(root.split("/")) if root else 0
    ranked = []
    for path in files:
        framework, folder = _config_of(path)
        if framework is None:
            continue
        parts = folder.split("/") if folder else []
        if any(part.startswith(".") or part in NOT_SITE_FOLDERS for part in parts):
            continue
        if in_folder(folder, root):
            distance = len(parts) - depth_of_root
            if distance > MAX_CONFIG_DEPTH:
                continue
        elif in_folder(root, folder):
            distance = depth_of_root - len(parts)  # a config above the docs root, e.g. mkdocs.yml beside docs/
        else:
            continue
        order = list(FRAMEWORKS).index(framework)
        ranked.append((distance, order, path))
    return [path for *_, path in sorted(ranked)]


def _config_of(path: str) -> tuple[str | None, str]:
    """(the framework whose config `path` may be, the site folder it configures); (None, "") for other files."""
    if not path.endswith(_CONFIG_ENDINGS):
        return None, ""
    name = posixpath.basename(path)
    if name in CONFIG_FILES:
        return CONFIG_FILES[name], posixpath.dirname(path)
    for tail, framework in CONFIG_TAILS.items():
        if path == tail or path.endswith("/" + tail):
            return framework, path[: -len(tail)].rstrip("/")
    return None, ""


def _markdown_site(files: list[str], root: str) -> DocsSite:
    if not root and any(p.startswith("docs/") and p.lower().endswith((".md", ".mdx")) for p in files):
        root = "docs"
    return DocsSite("markdown", None, root, nav_hint=MARKDOWN_HINT)


def extension_counts(pages: list[str]) -> dict[str, list]:
    """Extension -> [how many of the sorted `pages` have it, the first of them]."""
    found: dict[str, list] = {}
    for page in pages:
        seen = found.setdefault(page_extension(page), [0, page])
        seen[0] += 1
    return found


def ordered_extensions(counts: dict[str, list]) -> list[str]:
    """The extensions of `extension_counts`, most used first (ties: the one whose first page comes first)."""
    return [e for e, _ in sorted(counts.items(), key=lambda item: (-item[1][0], item[1][1]))]


def page_extension(path: str) -> str:
    """The extension of `path` as `posixpath.splitext` finds it (a name's leading dots start none), in lower case;
    written out, as it runs for every page of a large tree."""
    name = path[path.rfind("/") + 1 :]
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 and name[:dot].strip(".") else ""


def with_page_stats(workspace, site: DocsSite, pages: list[str], extensions: list[str]) -> DocsSite:
    """`site` with its page count, `extensions` and the front matter keys common in a sample of its `pages`."""
    count = min(SAMPLE_PAGES, len(pages))
    sample = [pages[i * len(pages) // count] for i in range(count)]
    keys: Counter[str] = Counter()
    with_front_matter = 0
    for page in sample:
        found = front_matter_keys(read_text(workspace, page) or "")
        with_front_matter += bool(found)
        keys.update(found)
    common = [key for key, seen in keys.most_common() if seen * 5 >= with_front_matter]
    return replace(
        site,
        page_count=len(pages),
        page_extensions=extensions,
        front_matter_keys=common[:10],
    )


def _related(site_root: str, root: str) -> bool:
    return not root or in_folder(site_root, root) or in_folder(root, site_root)
