"""Mintlify sites: `docs.json` (or the legacy `mint.json`) and the page paths its `navigation` lists."""

import json
import posixpath
import re

from service.agent.docsite.links import is_external
from service.agent.docsite.site import DocsSite, Navigation, NavEntry, NavError, page_targets, read_text

CONFIG_NAMES = ("docs.json", "mint.json")
SUFFIXES = (".mdx", ".md")
# Pages generated from an OpenAPI file are listed as "GET /path" (optionally after the spec's file name).
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_OPENAPI_REF = re.compile(r"(?:^|\s)(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS|TRACE|WEBHOOK)\s+\S", re.IGNORECASE)


def detect(workspace, config_path: str, files: set[str]) -> DocsSite | None:
    """The Mintlify site configured by `config_path`, or None when that file is not a Mintlify config."""
    text = read_text(workspace, config_path)
    if text is None:
        return None
    if posixpath.basename(config_path) == "docs.json" and '"navigation"' not in text and "mintlify" not in text:
        return None  # docs.json is a common name; Mintlify's always has a navigation
    root = posixpath.dirname(config_path)
    where = f"{root}/" if root else "the repository root"
    snippets = f"/{root}/snippets" if root else "/snippets"
    hint = (f"Navigation lives in {config_path} (`navigation`, groups of `pages`): pages are listed by their path "
            f"relative to {where} without the extension, e.g. \"guides/setup\". New pages must be added to a group "
            f"in {config_path}.")
    if any(path.startswith(snippets[1:] + "/") for path in files):
        hint += f" Reusable snippets (not pages) live in {snippets[1:]}/."
    return DocsSite("mintlify", config_path, root, nav_files=[config_path], nav_hint=hint, page_suffixes=SUFFIXES,
                    ignored=(snippets,), explicit_nav=True)


def navigation(workspace, site: DocsSite, files: set[str]) -> Navigation:
    """The pages `navigation` lists, each with the line it is on."""
    path = site.config_path
    text = read_text(workspace, path) or ""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        return Navigation(complete=False, errors=[NavError(path, exc.lineno, f"{path} is not valid JSON ({exc.msg} "
                                                                              f"at column {exc.colno})")])
    nav = config.get("navigation") if isinstance(config, dict) else None
    result = Navigation()
    lines = _string_lines(text)
    for ref in dict.fromkeys(_page_refs(nav, False)):
        if not ref.strip() or is_external(ref) or _OPENAPI_REF.search(ref):
            continue
        targets = page_targets(site.docs_root, ref, SUFFIXES)
        result.entries.append(NavEntry(path, lines.get(ref, 1), ref, targets, any(t in files for t in targets)))
    return result


def _page_refs(node, in_pages: bool):
    # Pages are the strings in any `pages` list (at any depth: tabs, anchors, groups, nested groups) and group roots.
    if isinstance(node, str):
        if in_pages:
            yield node
    elif isinstance(node, list):
        for item in node:
            yield from _page_refs(item, in_pages)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "pages":
                yield from _page_refs(value, True)
            elif key == "root" and isinstance(value, str):
                yield value
            elif isinstance(value, (list, dict)):
                yield from _page_refs(value, False)


def _string_lines(text: str) -> dict[str, int]:
    # One pass over the JSON's string literals: the line each value first appears on.
    lines: dict[str, int] = {}
    line, position = 1, 0
    for match in _JSON_STRING.finditer(text):
        line += text.count("\n", position, match.start())
        position = match.start()
        try:
            lines.setdefault(json.loads(match.group()), line)
        except json.JSONDecodeError:
            continue
    return lines


def suggest_entry(site: DocsSite, page: str, files: set[str]) -> str:
    """How to list `page` in the navigation."""
    ref = posixpath.splitext(page[len(site.docs_root) + 1:] if site.docs_root else page)[0]
    return f'add "{ref}" to the `pages` of a group in {site.config_path}'
