"""VitePress sites: `.vitepress/config.*` read as literals (never run) for `srcDir`, `base`, `cleanUrls`,
`rewrites`, `ignoreDeadLinks`, the sidebar and nav, and `locales`, and the per-folder `config.*` files
(`defineAdditionalConfig`) for their folder's sidebar and nav; routes are page paths without `.md`."""

import posixpath
import re

from service.agent.docsite.framework import listed_order
from service.agent.docsite.jsliteral import OPAQUE, Str, read_module
from service.agent.docsite.limits import Uncheckable
from service.agent.docsite.routing import (
    Outcome,
    RouteMapRouter,
    Router,
    Verdict,
    is_external,
    join,
    split_target,
    unknown,
)
from service.agent.docsite.site import DocsSite, Language, NavEntry, Navigation, read_text
from service.agent.docsite.tree import Tree

CONFIG_NAMES: tuple[str, ...] = ()
CONFIG_TAILS = tuple(
    f".vitepress/config{index}.{ext}" for index in ("", "/index") for ext in ("mts", "ts", "mjs", "js")
)
SUFFIXES = (".md",)
_CALLEES = ("defineConfig", "defineConfigWithTheme", "withMermaid", "withPwa", "withI18n", "defineAdditionalConfig")
# A folder's own config under srcDir (VitePress 2): `<folder>/config.[m]ts` or `.[m]js` with `defineAdditionalConfig`.
_FOLDER_CONFIG = re.compile(r"(?:^|/)config\.m?[jt]s$")
_PARAM = re.compile(r":(\w+)[*+?]?")  # path-to-regexp parameters: `:pkg`, `:rest*`
_ESCAPED_PARAM = re.compile(r":(\w+)(\\[*+?])?")
IGNORED_DEAD = "links VitePress is told not to check (`ignoreDeadLinks`) are not checked when no page serves them"


def read_config(workspace, config_path: str) -> dict:
    """The config's options as literals ({} when they are computed); Uncheckable past the size caps."""
    module = read_module(read_text(workspace, config_path) or "", callees=_CALLEES)
    for callee in _CALLEES:
        options = module.call_argument(callee)
        if isinstance(options, dict):
            return options
    return module.exported if isinstance(module.exported, dict) else {}


def site_folder(config_path: str) -> str:
    """The folder that holds `.vitepress/`: VitePress's project root."""
    folder = posixpath.dirname(config_path)
    while posixpath.basename(folder) != ".vitepress":
        folder = posixpath.dirname(folder)
    return posixpath.dirname(folder)


def detect(workspace, config_path: str, files: set[str]) -> DocsSite | None:
    """The VitePress site configured by `config_path` (its `srcDir` is the docs root)."""
    project = site_folder(config_path)
    try:
        options = read_config(workspace, config_path)
    except Uncheckable:
        options = {}
    src = _value(options.get("srcDir")) or "."
    root = join(project, src.strip("/") or ".")
    if root is None:
        return None
    folder_configs = _folder_configs(workspace, root, files)
    main = _sidebars(options)
    sidebars, holders = list(main), [config_path] if main else []
    for path, folder in folder_configs:
        found = _folder_sidebars(workspace, path, folder)
        sidebars += found
        holders += [path] if found else []
    explicit = bool(sidebars) and all(s is not OPAQUE for _, s in sidebars)
    languages = _languages(options, root)
    holders = holders or [config_path]
    where = " and ".join(holders) if len(holders) < 4 else f"{holders[0]} and the other folders' config files"
    if explicit and not any(_computed(sidebar) for _, sidebar in sidebars):
        hint = (
            f"Navigation is `themeConfig.sidebar` in {where}: items are {{ text, link }} with links as "
            'routes ("/guide/setup"); new pages must be added to it.'
        )
    elif sidebars:
        hint = (
            f"The sidebar (`themeConfig.sidebar`) is built by code in {where}; add new pages where it lists their "
            "neighbours."
        )
    else:
        # It may still come from elsewhere (per-folder config files, the theme): not "there is no sidebar".
        hint = (
            f"No sidebar is set in {config_path} (one may come from per-folder config files or the theme, "
            "which the check does not read); link each new page from an existing page."
        )
    clean = options.get("cleanUrls") is True
    hint += (
        f" Pages are Markdown files under {root or 'the repository root'}/; links are routes without the "
        "extension or relative file links: [Setup](/guide/setup) or [Setup](./setup.md)"
        + ("" if clean else " (served as /guide/setup.html)")
        + "."
    )
    translations = tuple(
        f"/{lang.folder}/**"
        for lang in languages[1:]
        if not any(join(root, where or ".") == lang.folder for where, s in sidebars if s is not OPAQUE)
    )
    ignore = options.get("ignoreDeadLinks")
    routing = {
        "base": "/" + (_value(options.get("base")) or "/").strip("/"),
        "rewrites": _rewrites(options),
        # `true`, a list of patterns or anything computed: some dead links are let through, which ones is
        # not known; 'localhostLinks' only lets localhost URLs through, which are external here anyway.
        "ignore_dead": ignore not in (None, False) and _value(ignore) != "localhostLinks",
        "folder_configs": tuple(folder_configs),
    }
    excluded = options.get("srcExclude")
    ignored = ("/" + (join(root, "public") or "public") + "/**",) + tuple(
        f"/{root}/{glob.value.lstrip('/')}" if root else f"/{glob.value.lstrip('/')}"
        for glob in (excluded if isinstance(excluded, list) else [])
        if isinstance(glob, Str)
    )
    return DocsSite(
        "vitepress",
        config_path,
        root,
        nav_files=holders if explicit else [],
        nav_hint=hint,
        page_suffixes=SUFFIXES,
        ignored=ignored,
        explicit_nav=explicit,
        languages=languages,
        unlisted_ok=translations,
        routing=routing,
        detected_from=config_path,
    )


def _sidebars(options: dict) -> list[tuple[str, object]]:
    """(the docs folder of its locale — "" for the root, the sidebar value) for the root and each locale."""
    found = []
    theme = options.get("themeConfig")
    if isinstance(theme, dict) and "sidebar" in theme:
        found.append(("", theme["sidebar"]))
    elif theme is OPAQUE:
        found.append(("", OPAQUE))
    locales = options.get("locales")
    if isinstance(locales, dict):
        for key, entry in locales.items():
            theme = entry.get("themeConfig") if isinstance(entry, dict) else OPAQUE
            if isinstance(theme, dict) and "sidebar" in theme:
                found.append(("" if key == "root" else key, theme["sidebar"]))
            elif theme is OPAQUE:
                found.append(("" if key == "root" else key, OPAQUE))
    return found


def _computed(value) -> bool:
    """Whether a sidebar has parts the check cannot read (function calls, spreads of computed values)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is OPAQUE:
            return True
        if isinstance(item, dict):
            stack += item.values()
        elif isinstance(item, list):
            stack += item
    return False


def _folder_configs(workspace, root: str, files: set[str]) -> list[tuple[str, str]]:
    """(path, folder relative to the docs root) of each per-folder config under `root`."""
    found = []
    for path in sorted(files):
        if root and not path.startswith(root + "/") or "/.vitepress/" in f"/{path}" or not _FOLDER_CONFIG.search(path):
            continue
        if "defineAdditionalConfig" in (read_text(workspace, path) or ""):
            relative = posixpath.dirname(path[len(root) + 1 :] if root else path)
            found.append((path, relative))
    return found


def _folder_sidebars(workspace, path: str, folder: str) -> list[tuple[str, object]]:
    try:
        return _theme_sidebar(read_config(workspace, path), folder)
    except Uncheckable:
        return [(folder, OPAQUE)]


def _theme_sidebar(options: dict, folder: str) -> list[tuple[str, object]]:
    # A folder's config holds the sidebar of its pages (its links are routes from the site's root, as above).
    theme = options.get("themeConfig")
    if isinstance(theme, dict) and "sidebar" in theme:
        return [(folder, theme["sidebar"])]
    return [(folder, OPAQUE)] if theme is OPAQUE else []


def _languages(options: dict, root: str) -> list[Language]:
    locales = options.get("locales")
    if not isinstance(locales, dict) or len(locales) < 2:
        return []
    found = []
    for key, entry in locales.items():
        lang = _value(entry.get("lang")) if isinstance(entry, dict) else None
        folder = root if key == "root" else join(root, key)
        if folder is not None:
            found.append(Language(lang or key, folder))
    default = next((lang for lang in found if lang.folder == root), None)
    return [default, *(lang for lang in found if lang is not default)] if default else []


def _rewrites(options: dict) -> tuple[tuple[str, str], ...]:
    rewrites = options.get("rewrites")
    if not isinstance(rewrites, dict):
        return ()
    return tuple((key, value.value) for key, value in rewrites.items() if isinstance(value, Str))


def _value(value) -> str | None:
    return value.value if isinstance(value, Str) else None


def page_routes(site: DocsSite, files) -> dict[str, str]:
    """Route key (path under the docs root without `.md`, `index` and slashes at the ends) -> page."""
    routes: dict[str, str] = {}
    root = site.docs_root
    for path in sorted(files):
        if site.is_page(path):
            relative = path[len(root) + 1 :] if root else path
            routes.setdefault(route_key(_rewritten(site, relative)), path)
    return routes


def route_key(written: str) -> str:
    """The key a route or page path is looked up by: no slashes at the ends, no `.md`/`.html`, no `index`."""
    key = written.strip("/")
    for suffix in (".md", ".html"):
        if key.lower().endswith(suffix):
            key = key[: -len(suffix)]
    if key == "index" or key.endswith("/index"):
        key = key[: -len("index")].rstrip("/")
    return key


def _rewritten(site: DocsSite, relative: str) -> str:
    for source, target in site.routing.get("rewrites", ()):
        if source == relative:
            return target
        if ":" in source or "(" in source:
            pattern = re.escape(source).replace(r"\(\.\*\)", "(.*)").replace(r"\:", ":")
            pattern = _ESCAPED_PARAM.sub(lambda m: f"(?P<{m.group(1)}>{'.*' if m.group(2) else '[^/]+'})", pattern)
            try:
                match = re.fullmatch(pattern, relative)
            except re.error:
                continue
            if match:
                return _fill(target, match.groupdict())
    return relative


def _fill(target: str, values: dict) -> str:
    return _PARAM.sub(lambda m: values.get(m.group(1)) or "", target)


def navigation(tree: Tree, site: DocsSite) -> Navigation:
    """The pages the sidebars and the top nav link to, each with the config line of its link."""
    workspace, files = tree.workspace, tree.files
    assert site.config_path is not None  # a site of this kind is only detected from its config file
    try:
        options = read_config(workspace, site.config_path)
    except Uncheckable as exc:
        exc.path = exc.path or site.config_path
        raise
    routes = page_routes(site, files)
    result = Navigation()
    for _, sidebar in _sidebars(options):
        _walk(result, site, routes, sidebar, "", site.config_path or "")
    navs = []
    theme = options.get("themeConfig")
    if isinstance(theme, dict) and isinstance(theme.get("nav"), list):
        navs.append((site.config_path or "", theme["nav"]))
    for path, folder in site.routing.get("folder_configs", ()):
        try:
            folder_options = read_config(workspace, path)
        except Uncheckable:
            result.complete = False  # part of the navigation cannot be read: any page may be listed there
            continue
        for _, sidebar in _theme_sidebar(folder_options, folder):
            _walk(result, site, routes, sidebar, "", path)
        folder_theme = folder_options.get("themeConfig")
        if isinstance(folder_theme, dict) and isinstance(folder_theme.get("nav"), list):
            navs.append((path, folder_theme["nav"]))
    for path, items in navs:
        nav = Navigation()  # the top nav lists pages too; what it cannot read does not hide the sidebar's gaps
        _walk(nav, site, routes, items, "", path)
        sections = {route.split("/", 1)[0] for route in routes}
        # A nav link whose first folder no page has goes to a custom page of the theme: not the check's to judge.
        result.entries += [
            e
            for e in nav.entries
            if e.found or route_key(_strip_base(site, split_target(e.ref)[0])).split("/", 1)[0] in sections
        ]
    return result


navigation_order = listed_order(navigation)


def _walk(result: Navigation, site: DocsSite, routes: dict[str, str], node, base: str, file: str) -> None:
    stack = [(node, base)]
    while stack:
        item, prefix = stack.pop()
        if isinstance(item, dict):
            group_base = _value(item.get("base")) or prefix
            link = item.get("link")
            if isinstance(link, Str):
                _add(result, site, routes, link, group_base, file)
            elif link is not None:
                result.complete = False
            children = item.get("items")
            if isinstance(children, list):
                stack += [(child, group_base) for child in reversed(children)]
            elif children is not None and not isinstance(children, dict):
                result.complete = False
            if "items" not in item and "link" not in item:  # the multi-sidebar form: {'/guide/': [...]}
                stack += [(value, prefix) for value in reversed(list(item.values())) if isinstance(value, (list, dict))]
        elif isinstance(item, list):
            stack += [(child, prefix) for child in reversed(item)]
        elif item is OPAQUE:
            result.complete = False


def _add(result: Navigation, site: DocsSite, routes: dict[str, str], link: Str, base: str, file: str) -> None:
    written = link.value
    if is_external(written) or not written.strip():
        return
    path = split_target(written)[0]
    if not path.startswith("/"):
        path = base.rstrip("/") + "/" + path
    page = routes.get(route_key(_strip_base(site, path)))
    target = join(site.docs_root, route_key(path) or "index")
    targets = (page,) if page else (target + ".md", join(target, "index.md") or "index.md") if target else ()
    result.entries.append(NavEntry(file, link.line, written, targets, page is not None))


def _strip_base(site: DocsSite, path: str) -> str:
    base = site.routing.get("base", "/")
    return path[len(base) :] if base != "/" and (path == base or path.startswith(base + "/")) else path


class VitePressRouter(RouteMapRouter):
    """Links are routes from the docs root (without `.md`, with `.html`, or ending in `/` for `index.md`) or
    paths relative to the page's file; files in `public/` are served at the root."""

    page_suffixes = SUFFIXES
    index_names = ("index.md",)

    def route(self, page: str, path: str) -> Outcome:
        root = self.site.docs_root
        routes = self._routes()
        if path.startswith("/"):
            path = _strip_base(self.site, path)
            public = join(root, "public/" + path.lstrip("/"))
            if public and self.tree.is_file(public):
                return Outcome(Verdict.OK, public)
            key = route_key(path)
        else:
            resolved = join(posixpath.dirname(page), path)
            if resolved is None:
                return Outcome(Verdict.OUTSIDE)
            found = self.land(resolved)
            if found is None and path.lower().endswith(".html"):
                found = self.land(resolved[: -len(".html")])
            if found is not None:
                return Outcome(Verdict.OK, found)
            own = self._by_page.get(page)
            folder = posixpath.dirname(own) if own is not None and posixpath.basename(page) != "index.md" else own
            relative_to = join(folder or "", path) if own is not None else None
            key = route_key(relative_to) if relative_to is not None else route_key(resolved[len(root) :])
        if key in routes:
            return Outcome(Verdict.OK, routes[key])
        if any(pattern.fullmatch(key) for pattern in self._dynamic()):
            return unknown("links to routes of VitePress dynamic pages (`[param].md`) are not checked")
        if self.site.routing.get("ignore_dead"):
            return unknown(IGNORED_DEAD)
        if posixpath.splitext(key)[1] and not key.lower().endswith(".md"):
            file = join(root, key)
            return self.landing(file, path) if file is not None else Outcome(Verdict.OUTSIDE)
        return Outcome(Verdict.BROKEN, reason=f"no page has the route /{key}")

    def route_map(self) -> dict[str, str]:
        return page_routes(self.site, self.tree.files)

    def _dynamic(self) -> list[re.Pattern]:
        if not hasattr(self, "_patterns"):
            self._patterns = [
                re.compile(re.sub(r"\\\[[^/\]]+\\\]", "[^/]+", re.escape(route)))
                for route in self._routes()
                if "[" in route
            ]
        return self._patterns


def router(site: DocsSite, tree: Tree) -> Router:
    """The router for links on this VitePress site."""
    return VitePressRouter(site, tree)


def suggest_entry(tree: Tree, site: DocsSite, page: str) -> str:
    """How to list `page` in the sidebar: in the config of the deepest folder that holds it and has one."""
    relative = page[len(site.docs_root) + 1 :] if site.docs_root else page
    holders = [
        (folder.count("/") + bool(folder), path)
        for path, folder in site.routing.get("folder_configs", ())
        if (not folder or relative.startswith(folder + "/")) and _folder_sidebars(tree.workspace, path, folder)
    ]
    holder = max(holders)[1] if holders else site.config_path
    return f"add {{ text: '…', link: '/{route_key(_rewritten(site, relative))}' }} to `themeConfig.sidebar` in {holder}"
