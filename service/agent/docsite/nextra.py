"""Nextra sites, recognised by a Next.js config that uses Nextra: pages under `content/` or `pages/`; their routes
and `_meta` files are not modelled, so only relative links are judged (root-relative ones are said unknown)."""

import posixpath

from service.agent.docsite.framework import listed_order
from service.agent.docsite.routing import Router, join, unknown
from service.agent.docsite.site import DocsSite, Navigation, read_text
from service.agent.docsite.tree import Tree

CONFIG_NAMES = tuple(f"next.config.{ext}" for ext in ("mjs", "js", "ts", "mts", "cjs"))
CONFIG_TAILS: tuple[str, ...] = ()
CONTENT_FOLDERS = ("content", "src/content", "pages", "src/pages", "app", "src/app")
UNKNOWN_RELATIVE = (
    "relative links without a file extension that name no file are routes relative to the page's URL, "
    "which Nextra's routing decides: not checked"
)
UNKNOWN_ROUTES = (
    "links of the form `/x` are not checked: Nextra's routing (`_meta` files, the app router) is not modelled"
)


def detect(workspace, config_path: str, files: set[str]) -> DocsSite | None:
    """The Nextra site of this Next.js config, or None when the config does not use Nextra."""
    if "nextra" not in (read_text(workspace, config_path) or ""):
        return None
    folder = posixpath.dirname(config_path)
    root = next(
        (
            path
            for path in (join(folder, name) for name in CONTENT_FOLDERS)
            if path and any(f.startswith(path + "/") and f.endswith((".md", ".mdx")) for f in files)
        ),
        None,
    )
    if root is None:
        return None
    hint = (
        f"Pages are under {root}/; `_meta` files order and title them, and every page shows in the sidebar "
        "unless hidden there. Link new pages with relative links to their files where neighbours do."
    )
    return DocsSite("nextra", config_path, root, nav_hint=hint, detected_from=f"{config_path}, which uses nextra")


def navigation(tree: Tree, site: DocsSite) -> Navigation:
    """Not modelled: an incomplete, empty navigation, so no page is reported as missing from it."""
    return Navigation(complete=False)


navigation_order = listed_order(navigation)


class NextraRouter(Router):
    """Relative links to files and folders; root-relative routes are not judged."""

    def route(self, page: str, path: str):
        if path.startswith("/"):
            return unknown(UNKNOWN_ROUTES)
        outcome = super().route(page, path)
        if not outcome.ok and not posixpath.splitext(path)[1]:
            return unknown(UNKNOWN_RELATIVE)  # `../guide/setup` is resolved against the page's URL, not its file
        return outcome


def router(site: DocsSite, tree: Tree) -> Router:
    """The router for links on this Nextra site."""
    return NextraRouter(site, tree)


def suggest_entry(tree: Tree, site: DocsSite, page: str) -> str:
    """How to make `page` findable (Nextra lists pages by folder)."""
    return f"add it to the `_meta` file of {posixpath.dirname(page)}/ if that file lists its pages"
