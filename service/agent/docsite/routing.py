"""Where a link lands: the plain rules (paths relative to the page's file) that each framework's router extends."""

import enum
import posixpath
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from urllib.parse import unquote

from service.agent.docsite.pages import Link, LinkKind

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
INDEX_NAMES = ("index.md", "index.mdx", "README.md")
# Files a theme or the build adds to the site: links to them are not broken although the repository lacks them.
BUILD_FILES = frozenset(
    {
        "favicon.ico",
        "favicon.png",
        "favicon.svg",
        "apple-touch-icon.png",
        "sitemap.xml",
        "sitemap.xml.gz",
        "404.html",
        "robots.txt",
        "search_index.json",
        "feed.xml",
        "rss.xml",
        "atom.xml",
        "llms.txt",
        "llms-full.txt",
    }
)
THEME_ASSETS = (".css", ".js", ".map", ".woff", ".woff2", ".ttf", ".eot", "file.png", "minus.png", "plus.png")
BUILD_FOLDERS = frozenset({"assets", "css", "js", "fonts", "search", "_static", "_astro", "_next", "_images"})


class Verdict(str, enum.Enum):
    OK = "ok"
    BROKEN = "broken"
    OUTSIDE = "outside"  # a relative path that climbs out of the repository
    SKIP = "skip"  # not the check's to judge: external, templated, or served by something outside the repository
    UNKNOWN = "unknown"  # where it lands depends on routing the check does not know; `reason` says which links


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    landing: str | None = None  # the page or file it lands on, when known
    reason: str = ""  # why it is broken

    @property
    def ok(self) -> bool:
        return self.verdict is Verdict.OK


SKIP = Outcome(Verdict.SKIP)
UNKNOWN_ROOT_RELATIVE = "links of the form `/x` are not checked: the site's routing is unknown"
OTHER_ROUTES = (
    "links of the form `/x` to routes outside the docs pages (the theme's, a blog's, other plugins' or "
    "app pages) are not checked"
)


# Files that keep an otherwise empty folder in git; a docs folder holding one is filled by a build step (a script
# that writes pages from the code's own docs, say), so a route into it cannot be judged from the repository.
PLACEHOLDERS = (".gitkeep", ".keep")
GENERATED_ROUTES = "links into folders a build step fills (kept in git by a `.gitkeep`) are not checked"


def unknown(reason: str = UNKNOWN_ROOT_RELATIVE) -> Outcome:
    """The outcome of a link whose landing the site's routing decides and the check cannot know; `reason` is
    said once in the report, for every such link."""
    return Outcome(Verdict.UNKNOWN, reason=reason)


def is_external(target: str) -> bool:
    """Whether a link or navigation target is a URL (with a scheme or protocol-relative) rather than a path."""
    return bool(_SCHEME.match(target)) or target.startswith("//")


def split_target(target: str) -> tuple[str, str | None]:
    """(path, anchor) of a link target: the path decoded and without query; the anchor None when absent or a
    text fragment."""
    path, _, fragment = target.partition("#")
    path = unquote(path.split("?", 1)[0])
    return path, unquote(fragment) if fragment and not fragment.startswith(":~:") else None


def join(folder: str, path: str) -> str | None:
    """`path` joined to `folder` and normalised; "" for the root, None when it leaves the repository."""
    joined = posixpath.normpath(posixpath.join(folder, path))
    if joined == ".." or joined.startswith("../"):
        return None
    return "" if joined == "." else joined


class Router:
    """Plain Markdown: links are paths relative to the page's file and a folder link lands on its index page;
    where root-relative ones land depends on how the site is served, which is unknown."""

    page_suffixes: tuple[str, ...] = (".md", ".mdx")
    index_names: tuple[str, ...] = INDEX_NAMES

    def __init__(self, site, tree) -> None:
        self.site = site
        self.tree = tree

    def in_generated_folder(self, folder: str, rest: str) -> bool:
        """Whether `rest`, a route or path under `folder`, lies in (or is) a folder kept in git by a placeholder
        file for a build step to fill."""
        parts = [part for part in rest.strip("/").split("/") if part]
        return any(
            self.tree.is_file(posixpath.join(folder, *parts[:depth], name))
            for depth in range(1, len(parts) + 1)
            for name in PLACEHOLDERS
        )

    def resolve(self, page: str, link: Link) -> Outcome:
        """Where `link` on `page` lands, by the framework's rules."""
        target = link.target.strip()
        if link.kind is LinkKind.URL:
            if not target or is_external(target) or "{" in target or "\0" in target:
                return SKIP
            path, _anchor = split_target(target)
            if "\0" in path:
                return SKIP
            if not path:
                return Outcome(Verdict.OK, page) if target.startswith("#") else SKIP
            return self.route(page, path)
        if link.kind is LinkKind.FILE:
            if is_external(target) or not target:
                return SKIP
            return self.file(page, unquote(target))
        return self.reference(page, link)

    def route(self, page: str, path: str) -> Outcome:
        """A URL path (no anchor) written on `page`."""
        if path.startswith("/"):
            return unknown()
        return self.landing(join(posixpath.dirname(page), path), path)

    def file(self, page: str, path: str) -> Outcome:
        """A file a directive names, relative to the page (root-relative: to the docs root)."""
        folder = self.site.docs_root if path.startswith("/") else posixpath.dirname(page)
        resolved = join(folder, path.lstrip("/"))
        if resolved is None:
            return Outcome(Verdict.OUTSIDE)
        if self.tree.is_file(resolved):
            return Outcome(Verdict.OK, resolved)
        return Outcome(Verdict.BROKEN, reason=f"no file {resolved}")

    def reference(self, page: str, link: Link) -> Outcome:
        """A Sphinx cross-reference; only Sphinx sites judge them."""
        return SKIP

    def landing(self, resolved: str | None, written: str) -> Outcome:
        """The outcome of a link to repository path `resolved`: the file, the file with a page suffix, or the
        folder's index page."""
        if resolved is None:
            return Outcome(Verdict.OUTSIDE)
        found = self.land(resolved)
        if found is not None:
            return Outcome(Verdict.OK, found)
        if self.built(resolved):
            return SKIP
        if self.tree.is_folder(resolved):
            return Outcome(
                Verdict.BROKEN,
                reason=f"the folder {resolved or '(repository root)'} has no {', '.join(self.index_names)}",
            )
        return Outcome(Verdict.BROKEN, reason=f"no file {resolved}")

    def built(self, resolved: str) -> bool:
        """Whether a missing file is one a theme or the build provides (a favicon, `assets/`, a sitemap)."""
        root = self.site.docs_root
        relative = resolved[len(root) + 1 :] if root and resolved.startswith(root + "/") else resolved
        name = posixpath.basename(relative)
        if not posixpath.splitext(name)[1] or name.lower().endswith(self.page_suffixes):
            return False
        folder = relative.split("/", 1)[0]
        if folder == "_static" and self.tree.is_folder(join(root, folder) or folder):
            # The repository's own `_static/` (Sphinx's html_static_path): only the theme's assets are added.
            return name.lower().endswith(THEME_ASSETS)
        return name.lower() in BUILD_FILES or folder in BUILD_FOLDERS

    def land(self, resolved: str) -> str | None:
        """The file a path lands on, or None."""
        if resolved and self.tree.is_file(resolved):
            return resolved
        for suffix in self.page_suffixes:
            if resolved and self.tree.is_file(resolved + suffix):
                return resolved + suffix
        if self.tree.is_folder(resolved):
            for name in self.index_names:
                candidate = posixpath.join(resolved, name) if resolved else name
                if self.tree.is_file(candidate):
                    return candidate
        return None

    # Redirects, on sites that keep them: a moved page's old address should redirect to its new one.
    def redirect_place(self) -> str | None:
        """Where the site keeps its redirects (a file and key), None when it has none configured."""
        return None

    def page_address(self, page: str) -> str | None:
        """How a redirect names the page at `page` (its route, or its source path where redirects map files)."""
        return None

    def redirected(self, address: str) -> bool:
        """Whether a redirect from `address` (as `page_address` writes it) is configured."""
        return False

    def names(self, path: str) -> set[str]:
        """Words a link to the page at `path` contains (file stem, folder of an index page, routes' last part):
        links without one of them cannot land on it."""
        folder, name = posixpath.split(path)
        stem = posixpath.splitext(name)[0]
        found = {stem.lower()}
        if folder and (
            name in self.index_names or stem.lower() in ("index", "readme") or stem == posixpath.basename(folder)
        ):
            found.add(posixpath.basename(folder).lower())
        return found


class RouteMapRouter(Router, ABC):
    """A router over a map of route -> page built from the files' paths (VitePress, Fumadocs): a page's route
    names it too."""

    @abstractmethod
    def route_map(self) -> dict[str, str]:
        """Route (as the framework keys it) -> the page served there, built from the tree's files."""

    def _routes(self) -> dict[str, str]:
        if not hasattr(self, "_route_map"):
            self._route_map = self.route_map()
            self._by_page = {file: route for route, file in self._route_map.items()}
        return self._route_map

    def names(self, path: str) -> set[str]:
        found = super().names(path)
        self._routes()
        if self._by_page.get(path):
            found.add(self._by_page[path].rsplit("/", 1)[-1].lower())
        return found
