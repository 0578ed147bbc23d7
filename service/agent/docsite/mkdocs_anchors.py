"""Anchors an MkDocs site's Markdown settings add beyond headings and `attr_list` ids: content tab ids
(`pymdownx.tabbed` with `slugify`, optionally prefixed with the heading's id) and ids its own hooks may write."""

import posixpath
import re
from dataclasses import dataclass

import yaml

from service.agent.docsite.anchors import github_slug, python_markdown_slug, split_explicit_id
from service.agent.docsite.yamltext import mapping_value

_TAB = re.compile(r'^[ \t]*===[+!]*[ \t]+"(.*)"[ \t]*$')
_HEADING = re.compile(r"^[ ]{0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_EMOJI = re.compile(r":[\w+-]+:")  # `:octicons-image-16:` renders as an icon, without text
_MARKUP = re.compile(r"<[^<>]*>|[*_`]")
_SLUG_ONLY = re.compile(r"[\w-]*")
# A hook that rewrites each page's Markdown before it is parsed (https://www.mkdocs.org/dev-guide/plugins/#events).
_PAGE_HOOK = re.compile(r"^\s*def\s+on_page_markdown\s*\(", re.MULTILINE)


@dataclass(frozen=True)
class TabIds:
    """How `pymdownx.tabbed` names its tabs; without `slugify` they are numbered (`__tabbed_1_2`), not named."""

    combined: bool  # `combine_header_slug`: the heading's id, `-`, then the label's slug


def read_tab_ids(extensions) -> TabIds | None:
    """The content tab naming from `markdown_extensions` (a YAML node); None when tabs get no named ids."""
    settings = None
    if isinstance(extensions, yaml.SequenceNode):
        for item in extensions.value:
            settings = settings or mapping_value(item, "pymdownx.tabbed")
    elif isinstance(extensions, yaml.MappingNode):
        settings = mapping_value(extensions, "pymdownx.tabbed")
    slugify = mapping_value(settings, "slugify")
    if slugify is None or (isinstance(slugify, yaml.ScalarNode) and slugify.value in ("", "null", "~")):
        return None
    combine = mapping_value(settings, "combine_header_slug")
    return TabIds(isinstance(combine, yaml.ScalarNode) and combine.value.lower() in ("true", "yes", "on"))


def rewrites_pages(read_text, config_path: str, hooks) -> bool:
    """Whether one of the site's `hooks:` (files read as text, never run) rewrites pages' Markdown."""
    if not isinstance(hooks, yaml.SequenceNode):
        return False
    folder = posixpath.dirname(config_path)
    paths = [posixpath.normpath(posixpath.join(folder, n.value)) for n in hooks.value if isinstance(n, yaml.ScalarNode)]
    return any(_PAGE_HOOK.search(read_text(path) or "") for path in paths)


def hook_may_write(anchor: str) -> bool:
    """Whether `anchor` could only be an explicit id (no heading slug has `.` or `+`), which a page-rewriting
    hook may add where the page's text does not show it."""
    return _SLUG_ONLY.fullmatch(anchor) is None


def tab_anchors(text: str, tabs: TabIds) -> set[str]:
    """The ids `pymdownx.tabbed` gives the page's content tabs (its labels slugified, lowercase as `pymdownx.slugs`
    does), each also after the heading above it when `combined`; both heading slug styles are offered."""
    anchors: set[str] = set()
    parents: set[str] = set()
    fence: str | None = None
    for line in text.split("\n"):
        marker = _FENCE.match(line)
        if fence is not None:
            fence = None if marker and marker.group(1).startswith(fence) else fence
            continue
        if marker:
            fence = marker.group(1)
            continue
        heading = _HEADING.match(line)
        if heading:
            raw, explicit = split_explicit_id(heading.group(2))
            plain = _MARKUP.sub("", raw)
            parents = {explicit.lower()} if explicit else {python_markdown_slug(plain), github_slug(plain)}
            continue
        tab = _TAB.match(line)
        if tab:
            slug = github_slug(_MARKUP.sub("", _EMOJI.sub("", tab.group(1))))
            anchors.add(slug)
            if tabs.combined:
                anchors |= {f"{parent}-{slug}" for parent in parents if parent}
    return anchors
