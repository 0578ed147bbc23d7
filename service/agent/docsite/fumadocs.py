"""Fumadocs sites: `source.config.*` (`defineDocs({dir})`, default `content/docs`) and the loader's `baseUrl`
read as literals (never run), `meta.json` `pages` per folder, `(group)` folders, and `x.<locale>.mdx` or
locale-folder translations that fall back to the default language."""

import posixpath
import re

from service.agent.docsite.framework import listed_order
from service.agent.docsite.jsliteral import Str, read_module
from service.agent.docsite.jsontext import JSONDecodeError, load_json
from service.agent.docsite.limits import Uncheckable
from service.agent.docsite.routing import Outcome, RouteMapRouter, Router, Verdict, join, unknown
from service.agent.docsite.site import DocsSite, Language, NavEntry, NavError, Navigation, read_text
from service.agent.docsite.tree import Tree

CONFIG_NAMES = tuple(f"source.config.{ext}" for ext in ("ts", "mts", "js", "mjs"))
CONFIG_TAILS: tuple[str, ...] = ()
SUFFIXES = (".mdx", ".md")
SOURCE_FILES = tuple(
    f"{folder}lib/{name}.{ext}" for folder in ("", "src/") for name in ("source", "i18n") for ext in ("ts", "tsx", "js")
)
_REST = ("...", "z...a")
_SEPARATOR = re.compile(r"^---.*---$")
_LINK = re.compile(r"^(?:external:)?\[.*\]\(.*\)$")
OUTSIDE_DOCS = "links of the form `/x` outside the docs' base URL are served by the app's other routes: not checked"


def _options(workspace, path: str, callee: str) -> dict:
    text = read_text(workspace, path)
    if text is None:
        return {}
    try:
        found = read_module(text, callees=(callee,)).call_argument(callee)
    except Uncheckable:
        return {}
    return found if isinstance(found, dict) else {}


def _value(value) -> str | None:
    return value.value if isinstance(value, Str) else None


def detect(workspace, config_path: str, files: set[str]) -> DocsSite | None:
    """The Fumadocs site of `config_path`, or None when that file does not configure fumadocs-mdx."""
    if "fumadocs" not in (read_text(workspace, config_path) or ""):
        return None
    project = posixpath.dirname(config_path)
    docs = _options(workspace, config_path, "defineDocs")
    root = join(project, (_value(docs.get("dir")) or "content/docs").strip("/"))
    if root is None:
        return None
    base_url, i18n = "/docs", dict[str, object]()
    for name in SOURCE_FILES:
        path = join(project, name)
        if path in files:
            base_url = _value(_options(workspace, path, "loader").get("baseUrl")) or base_url
            i18n = i18n or _options(workspace, path, "defineI18n") or _i18n_literal(workspace, path)
    languages = _languages(i18n, root, files)
    hint = (
        f"Pages are MDX files under {root}/; each folder's meta.json may list its pages in order (`pages`, with "
        '"..." for the rest): add new pages there when it lists them by name. Links are routes under '
        f"{base_url}: [Setup]({base_url.rstrip('/')}/guides/setup), or relative links to .mdx files."
    )
    metas = sorted(
        p for p in files if p.startswith(root + "/") and re.fullmatch(r"meta(?:\.[\w-]+)?\.json", posixpath.basename(p))
    )
    return DocsSite(
        "fumadocs",
        config_path,
        root,
        nav_files=metas,
        nav_hint=hint,
        page_suffixes=SUFFIXES,
        explicit_nav=True,
        languages=languages,
        unlisted_ok=tuple(_translation_globs(languages, root)),
        routing={"base": "/" + base_url.strip("/"), "public": join(project, "public") or "public"},
        detected_from=config_path,
    )


def _i18n_literal(workspace, path: str) -> dict:
    # Older sites export `i18n = { defaultLanguage, languages }` as a plain object.
    text = read_text(workspace, path) or ""
    if "defaultLanguage" not in text:
        return {}
    try:
        module = read_module(text)
    except Uncheckable:
        return {}
    return next(
        (value for value in module.bindings.values() if isinstance(value, dict) and "defaultLanguage" in value), {}
    )


def _languages(i18n: dict, root: str, files: set[str]) -> list[Language]:
    codes = (
        [_value(c) for c in i18n.get("languages") or [] if isinstance(c, Str)]
        if isinstance(i18n.get("languages"), list)
        else []
    )
    default = _value(i18n.get("defaultLanguage"))
    if default is None or len(codes) < 2:
        return []
    by_folder = _value(i18n.get("parser")) == "dir"
    found = [Language(default, root)]
    for code in codes:
        if code and code != default:
            found.append(Language(code, f"{root}/{code}") if by_folder else Language(code, root, suffix=code))
    return found


def _translation_globs(languages: list[Language], root: str):
    for language in languages[1:]:
        yield f"/{language.folder}/**" if not language.suffix else f"/{root}/**/*.{language.suffix}.*"


def page_routes(site: DocsSite, files) -> dict[str, str]:
    """Slug (no slashes at the ends, `(group)` folders dropped) -> page, for the default language's pages."""
    routes: dict[str, str] = {}
    for path in sorted(files):
        if site.is_page(path) and site.language_of(path) is None:
            routes.setdefault(slug_of(path[len(site.docs_root) + 1 :]), path)
    return routes


def slug_of(relative: str) -> str:
    """The slug Fumadocs gives a page from its path under the docs folder."""
    parts = [p for p in posixpath.splitext(relative)[0].split("/") if not (p.startswith("(") and p.endswith(")"))]
    if parts and parts[-1] == "index":
        parts.pop()
    return "/".join(parts)


def navigation(tree: Tree, site: DocsSite) -> Navigation:
    """Pages each folder's meta.json lists by name; folders without one, or whose `pages` has "...", list all."""
    workspace, files = tree.workspace, tree.files
    result = Navigation()
    root = site.docs_root
    folders = {posixpath.dirname(p) for p in files if site.is_page(p)}
    # A meta.json whose folder lost its last page still names it.
    for folder in sorted(
        folders
        | {posixpath.dirname(p) for p in files if p.startswith(root + "/") and posixpath.basename(p) == "meta.json"}
    ):
        meta = f"{folder}/meta.json"
        pages = _meta_pages(workspace, meta, result) if meta in files else None
        if pages is None or any(_value(p) in _REST for p in pages):
            result.patterns.append(f"/{folder}/*")
        for item in pages or []:
            name = _value(item)
            if name is None or name in _REST or _SEPARATOR.match(name) or _LINK.match(name):
                continue
            if name.startswith("!"):  # left out of the "..." rest on purpose: not an entry, not missing either
                result.patterns.append(f"/{folder}/{name[1:]}")
                continue
            name = name[3:] if name.startswith("...") else name
            path = join(folder, name)
            if path is None or not path.startswith(root):
                continue
            targets = tuple(path + s for s in SUFFIXES) + tuple(f"{path}/index{s}" for s in SUFFIXES)
            found = (
                any(t in files for t in targets) or path in folders or any(f.startswith(path + "/") for f in folders)
            )
            result.entries.append(NavEntry(meta, item.line, name, targets, found))
    return result


navigation_order = listed_order(navigation)


def _meta_pages(workspace, meta: str, result: Navigation) -> list | None:
    text = read_text(workspace, meta) or ""
    try:
        value = load_json(text)
    except JSONDecodeError as exc:
        result.errors.append(NavError(meta, exc.lineno, f"{meta} is not valid JSON ({exc.msg})"))
        result.complete = False
        return []
    except Uncheckable:
        result.complete = False
        return []
    pages = value.get("pages") if isinstance(value, dict) else None
    if not isinstance(pages, list):
        return None
    lines = text.splitlines()
    return [
        Str(p, next((i for i, line in enumerate(lines, 1) if f'"{p}"' in line), 1)) for p in pages if isinstance(p, str)
    ]


class FumadocsRouter(RouteMapRouter):
    """Routes are the base URL plus the page's slug (an optional locale first); relative links may name the
    .mdx file; a missing translation falls back to the default language's page."""

    page_suffixes = SUFFIXES

    def route(self, page: str, path: str) -> Outcome:
        routes = self._routes()
        base = self.site.routing.get("base", "/docs")
        if not path.startswith("/"):
            outcome = self.landing(join(posixpath.dirname(page), path), path)
            if outcome.ok:
                return outcome
            own = self._by_page.get(self._default_page(page))
            if own is None:
                return outcome
            resolved = join(posixpath.dirname(f"{base.strip('/')}/{own}".strip("/")), path)
            if resolved is None:
                return outcome
            path = "/" + resolved
        public = join(self.site.routing.get("public", "public"), path.lstrip("/"))
        if public and self.tree.is_file(public):
            return Outcome(Verdict.OK, public)  # Next.js serves public/ at the root
        parts = path.strip("/").split("/")
        codes = {lang.code for lang in self.site.languages}
        if parts and parts[0] in codes:
            parts = parts[1:]  # a translation, or the default language with its prefix: both fall back to it
        rest = "/".join(parts)
        inside = base.strip("/")
        if inside and not (rest == inside or rest.startswith(inside + "/")):
            return unknown(OUTSIDE_DOCS)
        slug = rest[len(inside) :].strip("/")
        if slug in routes:
            return Outcome(Verdict.OK, routes[slug])
        return Outcome(Verdict.BROKEN, reason=f"no page has the route {base.rstrip('/')}/{slug}")

    def _default_page(self, page: str) -> str:
        language = self.site.language_of(page)
        if language is None:
            return page
        if language.suffix:
            stem, suffix = posixpath.splitext(page)
            return posixpath.splitext(stem)[0] + suffix
        return self.site.docs_root + page[len(language.folder) :]

    def route_map(self) -> dict[str, str]:
        return page_routes(self.site, self.tree.files)


def router(site: DocsSite, tree: Tree) -> Router:
    """The router for links on this Fumadocs site."""
    return FumadocsRouter(site, tree)


def suggest_entry(tree: Tree, site: DocsSite, page: str) -> str:
    """How to list `page` in its folder's meta.json."""
    name = posixpath.splitext(posixpath.basename(page))[0]
    return f'add "{name}" to `pages` in {posixpath.dirname(page)}/meta.json (or "..." to list the rest)'
