"""Mintlify sites: `docs.json` (or the legacy `mint.json`) with the files it `$ref`s, the pages its `navigation`
lists, `.mintignore`, redirects, languages, and links as routes from the docs root."""

import posixpath
import re
from dataclasses import dataclass, field

from service.agent.docsite.framework import listed_order
from service.agent.docsite.jsontext import JSONDecodeError, load_json
from service.agent.docsite.limits import Uncheckable
from service.agent.docsite.routing import SKIP, Outcome, Router, Verdict, is_external, join
from service.agent.docsite.site import (
    DocsSite,
    Language,
    NavEntry,
    NavError,
    Navigation,
    child_path,
    ignore_globs,
    page_targets,
    read_text,
)
from service.agent.docsite.tree import Tree

CONFIG_NAMES = ("docs.json", "mint.json")
CONFIG_TAILS: tuple[str, ...] = ()
SUFFIXES = (".mdx", ".md")
MAX_REF_FILES = 50  # `$ref`s followed per config; real sites use one per language or version
# Pages generated from an OpenAPI file are listed as "GET /path" (optionally after the spec's file name).
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_OPENAPI_REF = re.compile(r"(?:^|\s)(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS|TRACE|WEBHOOK)\s+\S", re.IGNORECASE)


@dataclass
class _Config:
    """docs.json with its `$ref`s replaced by the referenced files' content; where each string came from."""

    value: object
    files: list[str] = field(default_factory=list)  # the config and every file it references
    lines: dict[str, tuple[str, int]] = field(default_factory=dict)  # string -> (file, line) where first seen
    errors: list[NavError] = field(default_factory=list)


def detect(workspace, config_path: str, files: set[str]) -> DocsSite | None:
    """The Mintlify site configured by `config_path`, or None when that file is not a Mintlify config."""
    text = read_text(workspace, config_path)
    if text is None:
        return None
    if posixpath.basename(config_path) == "docs.json" and '"navigation"' not in text and "mintlify" not in text:
        return None  # docs.json is a common name; Mintlify's always has a navigation
    root = posixpath.dirname(config_path)
    try:
        config = read_config(workspace, config_path)
    except Uncheckable:
        config = _Config({}, [config_path])
    where = f"{root}/" if root else "the repository root"
    snippets = f"/{root}/snippets" if root else "/snippets"
    hint = (
        f"Navigation lives in {_named(config.files)} (`navigation`, groups of `pages`): pages are listed by "
        f'their path relative to {where} without the extension, e.g. "guides/setup". New pages must be added '
        f"to a group there. Links are routes from the docs root: [Setup](/guides/setup)."
    )
    if any(path.startswith(snippets[1:] + "/") for path in files):
        hint += f" Reusable snippets (not pages) live in {snippets[1:]}/."
    ignored = (snippets, *ignore_globs(read_text(workspace, child_path(root, ".mintignore")) or "", root))
    return DocsSite(
        "mintlify",
        config_path,
        root,
        nav_files=config.files,
        nav_hint=hint,
        page_suffixes=SUFFIXES,
        ignored=ignored,
        explicit_nav=True,
        languages=_languages(config.value, root),
        routing={"openapi": _has_openapi(config.value)},
    )


def read_config(workspace, path: str) -> _Config:
    """The config with `$ref`s followed (relative to the file that holds them); Uncheckable past the caps."""
    config = _Config(None, [path])
    config.value = _load(workspace, path, config, depth=0)
    return config


def _load(workspace, path: str, config: _Config, depth: int):
    text = read_text(workspace, path)
    if text is None:
        config.errors.append(NavError(path, 1, f"{path} is referenced with $ref but does not exist"))
        return None
    try:
        value = load_json(text)
    except JSONDecodeError as exc:
        config.errors.append(NavError(path, exc.lineno, f"{path} is not valid JSON ({exc.msg} at column {exc.colno})"))
        return None
    except Uncheckable as exc:
        exc.path = path
        raise
    for string, line in _string_lines(text).items():
        config.lines.setdefault(string, (path, line))
    return _follow(workspace, value, path, config, depth)


def _follow(workspace, value, path: str, config: _Config, depth: int):
    if isinstance(value, list):
        return [_follow(workspace, item, path, config, depth) for item in value]
    if not isinstance(value, dict):
        return value
    ref = value.get("$ref")
    if isinstance(ref, str) and not is_external(ref):
        target = join(posixpath.dirname(path), ref)
        if target is None or depth >= 10 or target in config.files or len(config.files) >= MAX_REF_FILES:
            raise Uncheckable(
                f"$ref {ref} refers outside the repository, back to a file already read, or past {MAX_REF_FILES} files",
                path=path,
            )
        config.files.append(target)
        loaded = _load(workspace, target, config, depth + 1)
        rest = {k: _follow(workspace, v, path, config, depth) for k, v in value.items() if k != "$ref"}
        return {**loaded, **rest} if isinstance(loaded, dict) else loaded if not rest else rest
    return {key: _follow(workspace, item, path, config, depth) for key, item in value.items()}


def navigation(tree: Tree, site: DocsSite) -> Navigation:
    """The pages `navigation` lists (in docs.json and the files it references), each with its file and line."""
    workspace, files = tree.workspace, tree.files
    assert site.config_path is not None  # a site of this kind is only detected from its config file
    config = read_config(workspace, site.config_path)
    if config.errors and not isinstance(config.value, dict):
        return Navigation(complete=False, errors=config.errors)
    nav = config.value.get("navigation") if isinstance(config.value, dict) else None
    # A `$ref`'d file that is missing or invalid is reported (when the run changed it) and skipped; the rest
    # of the navigation still counts.
    result = Navigation(errors=config.errors)
    for ref in dict.fromkeys(_page_refs(nav, False)):
        if not ref.strip() or is_external(ref) or _OPENAPI_REF.search(ref):
            continue
        targets = page_targets(site.docs_root, ref, SUFFIXES)
        file, line = config.lines.get(ref, (site.config_path, 1))
        result.entries.append(NavEntry(file, line, ref, targets, any(t in files for t in targets)))
    return result


navigation_order = listed_order(navigation)


def _page_refs(node, in_pages: bool):
    # Pages are the strings in any `pages` list (at any depth: tabs, anchors, groups, nested groups) and group roots.
    stack = [(node, in_pages)]
    while stack:
        item, listed = stack.pop()
        if isinstance(item, str):
            if listed:
                yield item
        elif isinstance(item, list):
            stack += [(child, listed) for child in reversed(item)]
        elif isinstance(item, dict):
            for key, value in reversed(list(item.items())):
                if key == "pages":
                    stack.append((value, True))
                elif key == "root" and isinstance(value, str):
                    stack.append((value, True))
                elif isinstance(value, (list, dict)):
                    stack.append((value, False))


def _languages(config, root: str) -> list[Language]:
    nav = config.get("navigation") if isinstance(config, dict) else None
    entries = nav.get("languages") if isinstance(nav, dict) else None
    if not isinstance(entries, list) or len(entries) < 2:
        return []
    found = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("language"), str):
            continue
        pages = [p for p in _page_refs(entry, False) if "/" in p and not _OPENAPI_REF.search(p)]
        firsts = {p.lstrip("/").split("/", 1)[0] for p in pages}
        code = entry["language"]
        folder = child_path(root, code) if firsts == {code} else root
        found.append((bool(entry.get("default")), Language(code, folder)))
    default = next((lang for is_default, lang in found if is_default), None)
    default = default or next((lang for _, lang in found if lang.folder == root), found[0][1] if found else None)
    return [default, *(lang for _, lang in found if lang is not default)] if default else []


def _has_openapi(config) -> bool:
    found, stack = False, [config]
    while stack and not found:
        item = stack.pop()
        if isinstance(item, dict):
            found = "openapi" in item or "asyncapi" in item
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
    return found


def _string_lines(text: str) -> dict[str, int]:
    # One pass over the JSON's string literals: the line each value first appears on.
    import json

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


def _named(files: list[str]) -> str:
    return (
        files[0]
        if len(files) == 1
        else f"{files[0]} (and the files it references with $ref: "
        f"{', '.join(files[1:4])}{', …' if len(files) > 4 else ''})"
    )


class MintlifyRouter(Router):
    """Routes are page paths from the docs root without the extension; root-relative links are the norm."""

    page_suffixes = SUFFIXES

    def route(self, page: str, path: str) -> Outcome:
        root = self.site.docs_root
        if path.startswith("/"):
            outcome = self.landing(join(root, path.lstrip("/")), path)
        else:
            outcome = self.landing(join(posixpath.dirname(page), path), path)
            if not outcome.ok:  # browsers resolve it against the page's route, which drops the extension
                url_relative = self.landing(join(posixpath.dirname(posixpath.splitext(page)[0]), path), path)
                outcome = url_relative if url_relative.ok else outcome
        if outcome.ok or outcome.verdict is Verdict.OUTSIDE:
            return outcome
        route = path if path.startswith("/") else self._route_from(page, path)
        if route and self._redirected(route):
            return Outcome(Verdict.OK)
        if (
            self.site.routing.get("openapi")
            and path.startswith("/")
            and not self.tree.is_folder(join(root, path.split("/")[1]))
        ):
            return SKIP  # a page generated from an OpenAPI spec has a route no file shows
        return outcome

    def _route_from(self, page: str, path: str) -> str | None:
        # A relative link as the browser resolves it against the page's route (the page path without extension).
        root = self.site.docs_root
        relative = page[len(root) + 1 :] if root else page
        joined = join(posixpath.dirname(posixpath.splitext(relative)[0]), path)
        return None if joined is None else "/" + joined

    def _redirected(self, route: str) -> bool:
        return any(pattern.fullmatch(route.rstrip("/") or "/") for pattern in self._redirect_patterns()[1])

    def _redirect_patterns(self) -> tuple[bool, list[re.Pattern]]:
        # (whether the config has `redirects` at all, the patterns of their sources)
        if not hasattr(self, "_redirects"):
            try:
                config = read_config(self.tree.workspace, self.site.config_path).value
            except Uncheckable:
                config = {}
            entries = config.get("redirects") if isinstance(config, dict) else None
            self._redirects = (
                isinstance(entries, list),
                [
                    _redirect_pattern(e["source"])
                    for e in entries or []
                    if isinstance(e, dict) and isinstance(e.get("source"), str)
                ],
            )
        return self._redirects

    def redirect_place(self) -> str | None:
        return f"the `redirects` of {self.site.config_path}" if self._redirect_patterns()[0] else None

    def page_address(self, page: str) -> str | None:
        root = self.site.docs_root
        return "/" + posixpath.splitext(page[len(root) + 1 :] if root else page)[0]

    def redirected(self, address: str) -> bool:
        return self._redirected(address)


def _redirect_pattern(source: str) -> re.Pattern:
    # `/old/:slug*` and `/old/:slug` match any rest of the path or one segment.
    parts = []
    for part in source.rstrip("/").split("/"):
        if part.startswith(":"):
            parts.append(".*" if part.endswith("*") else "[^/]+")
        else:
            parts.append(re.escape(part))
    return re.compile("/".join(parts) or "/")


def router(site: DocsSite, tree: Tree) -> Router:
    """The router for links on this Mintlify site."""
    return MintlifyRouter(site, tree)


def suggest_entry(tree: Tree, site: DocsSite, page: str) -> str:
    """How to list `page` in the navigation."""
    ref = posixpath.splitext(page[len(site.docs_root) + 1 :] if site.docs_root else page)[0]
    language = site.language_of(page)
    where = site.config_path
    if language is not None:
        where = next((f for f in site.nav_files if posixpath.basename(f).startswith(language.code)), where)
    return f'add "{ref}" to the `pages` of a group in {where}'
