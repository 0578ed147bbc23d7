"""What a docs framework module provides to the docs check: the one interface every framework implements.

Each framework is a module (`mkdocs`, `sphinx`, …) that conforms to `Framework`; `detect.FRAMEWORKS` is typed
with it, so mypy checks every module against the interface.
"""

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from service.agent.docsite.pages import Link
from service.agent.docsite.routing import Router
from service.agent.docsite.site import DocsSite, Navigation
from service.agent.docsite.tree import Tree

NavigationReader = Callable[[Tree, DocsSite], Navigation]
OrderReader = Callable[[Tree, DocsSite], list[str]]


class Framework(Protocol):
    """A docs framework: how its configs are named, how a site is detected, navigated, ordered and routed."""

    @property
    def CONFIG_NAMES(self) -> tuple[str, ...]:  # noqa: N802 - a module constant
        """File names of the framework's config (`mkdocs.yml`)."""

    @property
    def CONFIG_TAILS(self) -> tuple[str, ...]:  # noqa: N802 - a module constant
        """Configs named by their last path parts (`.vitepress/config.ts`); () when names suffice."""

    def detect(self, workspace, config_path: str, files: set[str], /) -> DocsSite | None:
        """The site `config_path` configures, or None when the file is not this framework's config."""

    def navigation(self, tree: Tree, site: DocsSite, /) -> Navigation:
        """The site's navigation as it is in `tree` (the docs check's view of one state)."""

    def navigation_order(self, tree: Tree, site: DocsSite, /) -> list[str]:
        """The site's pages in the order its navigation shows them (most frameworks: `listed_order`)."""

    def router(self, site: DocsSite, tree: Tree, /) -> Router:
        """The router that resolves links on `site` by the framework's rules, over `tree`."""

    def suggest_entry(self, tree: Tree, site: DocsSite, page: str, /) -> str:
        """How to list a new page in the site's navigation, for the docs check's message."""


@runtime_checkable
class AddsToPages(Protocol):
    """A framework whose Markdown adds links or anchors beyond what the page parser finds (Hugo, MkDocs)."""

    def extra_links(self, site: DocsSite, page: str, text: str, /) -> list[Link]:
        """Links the framework adds to a page's text (Hugo's `ref` shortcodes, a blog post's `links`)."""

    def extra_anchors(self, site: DocsSite, text: str, /) -> set[str]:
        """Anchors the framework's Markdown settings add (Hugo's definition-term ids)."""


@runtime_checkable
class ChecksPages(Protocol):
    """A framework with rules of its own for some pages (MkDocs' blog posts need a `date`)."""

    def page_problems(self, tree: Tree, site: DocsSite, page: str, /) -> list[tuple[int, str]]:
        """(line, message) for what in the page at `page` stops the framework's build."""


def listed_order(reader: NavigationReader) -> OrderReader:
    """The navigation order of a framework whose navigation lists its pages: each found entry's first existing
    page, in the order the entries are read."""

    def order(tree: Tree, site: DocsSite) -> list[str]:
        navigation = reader(tree, site)
        workspace = tree.workspace
        return [
            next(t for t in entry.targets if workspace.kind(t))
            for entry in navigation.entries
            if entry.found and any(workspace.kind(t) for t in entry.targets)
        ]

    return order
