"""Hugo sites: `hugo.*`/`config.*` (or `config/_default/`) read as data for `contentDir`, languages, `baseURL`,
`uglyURLs`, `permalinks` and menus; routes from content paths, `_index.md` sections and front-matter `slug`,
`url` and `aliases`."""

import json
import posixpath
import re
import tomllib
from dataclasses import dataclass

from service.agent.docsite.anchors import github_slug
from service.agent.docsite.framework import listed_order
from service.agent.docsite.hugo_permalinks import Permalinks, expand, read_permalinks
from service.agent.docsite.jsontext import load_json
from service.agent.docsite.limits import MAX_CONFIG_BYTES, check_size
from service.agent.docsite.markdown import front_matter_block
from service.agent.docsite.pages import Link, LinkKind
from service.agent.docsite.routing import Outcome, Router, Verdict, is_external, join, split_target, unknown
from service.agent.docsite.site import DocsSite, Language, NavEntry, NavError, Navigation, read_text
from service.agent.docsite.tree import Tree
from service.agent.docsite.yamltext import YAMLError, error_line, error_text, load_yaml

_EXTS = ("toml", "yaml", "yml", "json")
CONFIG_NAMES = tuple(f"{name}.{ext}" for name in ("hugo", "config") for ext in _EXTS)
CONFIG_TAILS = tuple(f"config/_default/{name}.{ext}" for name in ("hugo", "config") for ext in _EXTS)
SUFFIXES = (".md", ".markdown")
# Keys only a Hugo config has together with a content folder; `config.toml` alone is a common name.
_HUGO_KEYS = frozenset(
    {
        "baseurl",
        "theme",
        "languagecode",
        "contentdir",
        "defaultcontentlanguage",
        "module",
        "permalinks",
        "menu",
        "menus",
        "languages",
        "params",
        "markup",
        "taxonomies",
    }
)
_TOML_FRONT = re.compile(r"\A\+\+\+[ \t]*\n(.*?)\n\+\+\+[ \t]*(?:\n|\Z)", re.DOTALL)
# `{{< ref "x" >}}` / `{{% relref "x#a" %}}`: Hugo fails the build when one names no page.
_REF_SHORTCODE = re.compile(r"\{\{[<%]-?\s*(?:rel)?ref\s+(?:\"([^\"\n]+)\"|'([^'\n]+)'|([^\s\"'>%]+))\s*-?[>%]\}\}")
_DEFINITION = re.compile(r"^:[ \t]+\S")
# A site's own link render hook decides what a link means (glossary shorthands, file links, mounts).
_LINK_HOOK = re.compile(r"(?:^|/)layouts/(?:[^/]+/)*_markup/render-link(?:\.[\w-]+)*\.html$")
UNKNOWN_ROUTES = (
    "links to `/x` routes that no content page serves (a theme's or layout's pages, taxonomies, "
    "module files) are not checked"
)


@dataclass(frozen=True)
class ContentRoot:
    """One language's content folder and the URL prefix its pages get."""

    folder: str
    prefix: str  # "" or "fr/"
    code: str
    suffix: str = ""  # set for translations by file name (`page.fr.md`) in a shared content folder


def _load(text: str, path: str):
    check_size(text, MAX_CONFIG_BYTES)
    if path.endswith(".toml"):
        return tomllib.loads(text)
    if path.endswith(".json"):
        return load_json(text)
    return load_yaml(text)


def read_config(workspace, config_path: str) -> dict:
    """The config with lowercase top-level keys, merged with `languages.*` and `menus.*` beside it in a config
    folder; {} when it does not parse."""
    try:
        value = _load(read_text(workspace, config_path) or "", config_path)
    except (tomllib.TOMLDecodeError, YAMLError, json.JSONDecodeError, ValueError):
        return {}
    config = {str(k).lower(): v for k, v in value.items()} if isinstance(value, dict) else {}
    folder = posixpath.dirname(config_path)
    if posixpath.basename(folder) == "_default":
        for key, names in (("languages", ("languages",)), ("menu", ("menus", "menu"))):
            for name in names:
                for ext in _EXTS:
                    text = read_text(workspace, f"{folder}/{name}.{ext}")
                    if text is None:
                        continue
                    try:
                        extra = _load(text, f"{folder}/{name}.{ext}")
                    except (tomllib.TOMLDecodeError, YAMLError, json.JSONDecodeError, ValueError):
                        continue
                    if isinstance(extra, dict):
                        config.setdefault(key, extra)
    return config


def config_error(workspace, config_path: str) -> NavError | None:
    """Why Hugo could not read the config at `config_path` (with its line), or None when it parses."""
    text = read_text(workspace, config_path) or ""
    try:
        _load(text, config_path)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"at line (\d+)", str(exc))
        return NavError(config_path, int(line.group(1)) if line else 1, f"{config_path} is not valid TOML ({exc})")
    except json.JSONDecodeError as exc:
        return NavError(config_path, exc.lineno, f"{config_path} is not valid JSON ({exc.msg})")
    except YAMLError as exc:
        return NavError(config_path, error_line(exc), f"{config_path} is not valid YAML ({error_text(exc)})")
    except ValueError:  # past a size or depth cap: read_navigation's caller reports those through Uncheckable
        return None
    return None


def project_folder(config_path: str) -> str:
    """The Hugo project folder: the config's folder, or the one holding `config/_default/`."""
    folder = posixpath.dirname(config_path)
    if folder == "config/_default" or folder.endswith("/config/_default"):
        return posixpath.dirname(posixpath.dirname(folder))
    return folder


def content_roots(config: dict, project: str, files: set[str]) -> list[ContentRoot]:
    """Each language's content folder (the default language first) and URL prefix."""
    content = join(project, str(config.get("contentdir") or "content").strip("/")) or ""
    default = str(config.get("defaultcontentlanguage") or "en").lower()
    in_subdir = config.get("defaultcontentlanguageinsubdir") is True
    languages = config.get("languages")
    languages = languages if isinstance(languages, dict) else {}
    mounted = _content_mounts(config, project)
    if mounted:
        content = mounted.get(default) or mounted.get("") or content
    roots = []
    for code, settings in languages.items():
        code = str(code).lower()
        settings = settings if isinstance(settings, dict) else {}
        own = {str(k).lower(): v for k, v in settings.items()}.get("contentdir") or mounted.get(code)
        prefix = "" if code == default and not in_subdir else f"{code}/"
        if isinstance(own, str):
            roots.append(ContentRoot(join(project, own.strip("/")) or "", prefix, code))
        else:
            roots.append(ContentRoot(content, prefix, code, "" if code == default else code))
    if not roots:
        roots = [ContentRoot(content, "", default)]
    roots.sort(key=lambda r: r.code != default)
    return roots


def _content_mounts(config: dict, project: str) -> dict[str, str]:
    """Language ("" for any) -> the folder a `module.mounts` entry mounts as `content`."""
    module = config.get("module")
    mounts = module.get("mounts") if isinstance(module, dict) else None
    found: dict[str, str] = {}
    for mount in mounts if isinstance(mounts, list) else []:
        if not isinstance(mount, dict) or mount.get("target") != "content" or not isinstance(mount.get("source"), str):
            continue
        matrix = (mount.get("sites") or {}).get("matrix") if isinstance(mount.get("sites"), dict) else None
        languages = matrix.get("languages") if isinstance(matrix, dict) else None
        codes = (
            [str(c).lower() for c in languages]
            if isinstance(languages, list)
            else [str(mount["lang"]).lower()]
            if isinstance(mount.get("lang"), str)
            else [""]
        )
        folder = join(project, mount["source"].strip("/"))
        for code in codes:
            if folder is not None:
                found.setdefault(code, folder)
    return found


def detect(workspace, config_path: str, files: set[str]) -> DocsSite | None:
    """The Hugo site of `config_path`, or None when that file is not a Hugo config with a content folder."""
    name = posixpath.basename(config_path)
    folder = posixpath.dirname(config_path)
    if name.startswith("config.") and any(f"{folder}/hugo.{ext}".lstrip("/") in files for ext in _EXTS):
        return None  # Hugo reads hugo.* before config.*
    config = read_config(workspace, config_path)
    # `hugo.*` is Hugo's even when it does not parse (the navigation check says why); `config.*` only with Hugo's
    # keys, and not with Zola's `base_url`, whose sites look alike (content/, _index.md).
    zola = "base_url" in config and "baseurl" not in config
    if name.startswith("config.") and (not _HUGO_KEYS & set(config) or zola):
        return None
    project = project_folder(config_path)
    roots = content_roots(config, project, files)
    root = roots[0].folder
    if not any(f.startswith(root + "/") if root else True for f in files):
        return None
    languages = [Language(r.code, r.folder, r.suffix) for r in roots] if len(roots) > 1 else []
    hint = (
        f"Pages are under {root}/: a folder with an `_index.md` is a section, a page's URL is its path with a "
        "trailing slash ([Setup](/docs/guide/setup/)) unless its front matter sets `url` or `slug`; `aliases` "
        "keep old URLs working. Sections list their pages; menus are in the config (`menu`) or a page's "
        "front matter (`menu:`). Move a page with an `aliases` entry for its old URL."
    )
    base_path = str(config.get("baseurl") or "").split("://", 1)[-1].partition("/")[2].strip("/")
    routing = {
        "roots": roots,
        "base_path": base_path,
        "ugly": config.get("uglyurls") is True,
        "lower": config.get("disablepathtolower") is not True,
        "permalinks": read_permalinks(config.get("permalinks")),
        "static": join(project, "static") or "static",
        "term_ids": _setting(config, "markup", "goldmark", "parser", "autodefinitiontermid") is True,
        "link_hook": next(
            (f for f in sorted(files) if _LINK_HOOK.search(f) and (not project or f.startswith(project + "/"))), ""
        ),
    }
    return DocsSite(
        "hugo",
        config_path,
        root,
        nav_hint=hint,
        page_suffixes=SUFFIXES,
        languages=languages,
        routing=routing,
        detected_from=config_path,
        unlisted_keys=("draft", "headless"),
    )


def _setting(config: dict, *keys: str):
    value: object = config
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = next((v for k, v in value.items() if str(k).lower() == key), None)
    return value


def front_matter(tree, site: DocsSite, path: str) -> dict:
    """The page's front matter, YAML (`---`) or TOML (`+++`); {} when it has none or it does not parse."""
    text = tree.text(path) or ""
    if text.startswith("+++"):
        match = _TOML_FRONT.match(text)
        try:
            return tomllib.loads(match.group(1)) if match else {}
        except tomllib.TOMLDecodeError:
            return {}
    return tree.front_matter(path, site.page_mode(path)) if front_matter_block(text) is not None else {}


def page_routes(site: DocsSite, tree) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """(route key -> page, alias route key -> page, sections whose `permalinks` routes cannot be known) for every
    page in every language; keys have no slashes at the ends and no `.html`."""
    routes: dict[str, str] = {}
    aliases: dict[str, str] = {}
    unresolved: set[str] = set()
    permalinks: Permalinks = site.routing.get("permalinks") or Permalinks()
    lower = site.routing.get("lower", True)
    for path in sorted(tree.files):
        if not path.lower().endswith(SUFFIXES):
            continue
        place = _place(site, path)
        if place is None:
            continue
        root, relative = place
        meta = front_matter(tree, site, path)
        route: str | None = _route(root, relative, meta)
        permalink = _permalink(permalinks, tree, root, relative, meta)
        if permalink is not None:
            route = permalink[1]
            if route is None:
                unresolved.add(permalink[0])
        if route is not None:
            routes.setdefault(route.lower() if lower else route, path)
        found = meta.get("aliases")
        for alias in found if isinstance(found, list) else [found] if isinstance(found, str) else []:
            if isinstance(alias, str) and (route is not None or alias.startswith("/")):
                folder = posixpath.dirname(route or "")
                key = route_key(alias if alias.startswith("/") else f"{folder}/{alias}")
                aliases.setdefault(key.lower() if lower else key, path)
    return routes, aliases, unresolved


def _permalink(
    permalinks: Permalinks, tree, root: ContentRoot, relative: str, meta: dict
) -> tuple[str, str | None] | None:
    """(section, route) for a regular page whose section has a `permalinks` pattern (the route None when it
    cannot be known); None when no pattern applies (section pages, `url` set, sections without one)."""
    section = relative.split("/", 1)[0] if "/" in relative else ""
    pattern = permalinks.patterns.get(section)
    name = posixpath.basename(relative).split(".")[0]
    if pattern is None or name == "_index" or isinstance(meta.get("url"), str):
        return None
    plain = relative if not root.suffix else posixpath.splitext(posixpath.splitext(relative)[0])[0] + ".md"
    expanded = expand(
        pattern, plain, meta, lambda folder: tree.is_file(posixpath.join(root.folder, folder, "_index.md"))
    )
    return section, None if expanded is None else route_key(root.prefix + expanded.lstrip("/"))


def _place(site: DocsSite, path: str) -> tuple[ContentRoot, str] | None:
    roots: list[ContentRoot] = site.routing["roots"]
    for root in sorted(roots, key=lambda r: (-len(r.folder), not r.suffix)):
        if root.folder and not path.startswith(root.folder + "/"):
            continue
        relative = path[len(root.folder) + 1 :] if root.folder else path
        language = posixpath.splitext(posixpath.splitext(relative)[0])[1].lstrip(".").lower()
        if root.suffix and language != root.suffix:
            continue
        if not root.suffix and language and any(r.suffix == language for r in roots):
            continue
        return root, relative
    return None


def _route(root: ContentRoot, relative: str, meta: dict) -> str:
    if isinstance(meta.get("url"), str):
        return route_key(meta["url"])
    stem = posixpath.splitext(relative)[0]
    if root.suffix:
        stem = posixpath.splitext(stem)[0]
    folder, name = posixpath.split(stem)
    if name in ("_index", "index"):
        route = folder
    else:
        slug = meta.get("slug")
        route = posixpath.join(folder, str(slug).strip("/")) if isinstance(slug, (str, int)) and str(slug) else stem
    return route_key(root.prefix + route)


def route_key(written: str) -> str:
    """A route as looked up: no slashes at the ends, no `index.html` or `.html`."""
    key = written.strip("/")
    if key == "index.html" or key.endswith("/index.html"):
        key = key[: -len("index.html")]
    elif key.endswith(".html"):
        key = key[: -len(".html")]
    return key.strip("/")


def extra_links(site: DocsSite, page: str, text: str) -> list[Link]:
    """The `ref`/`relref` shortcodes of a page, as document references (Markdown links around them do not parse)."""
    links = []
    for match in _REF_SHORTCODE.finditer(text):
        target = next(group for group in match.groups() if group is not None)
        links.append(Link(text.count("\n", 0, match.start()) + 1, target, LinkKind.DOC))
    return links


def extra_anchors(site: DocsSite, text: str) -> set[str]:
    """Definition-list terms' ids, when `markup.goldmark.parser.autoDefinitionTermID` is on."""
    if not site.routing.get("term_ids"):
        return set()
    lines = text.split("\n")
    return {
        github_slug(lines[i].replace("`", "").strip())
        for i in range(len(lines) - 1)
        if lines[i].strip() and _DEFINITION.match(lines[i + 1])
    }


def navigation(tree: Tree, site: DocsSite) -> Navigation:
    """The pages the config's menus point to; sections list their pages, so no page is required in a menu."""
    workspace, files = tree.workspace, tree.files
    assert site.config_path is not None  # a site of this kind is only detected from its config file
    error = config_error(workspace, site.config_path)
    if error is not None:
        return Navigation(complete=False, errors=[error])
    config = read_config(workspace, site.config_path)
    routes = page_routes(site, tree)[0]
    lines = (read_text(workspace, site.config_path) or "").splitlines()
    result = Navigation()
    menus = config.get("menu") or config.get("menus")
    for entries in menus.values() if isinstance(menus, dict) else []:
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            ref = entry.get("pageRef") or entry.get("pageref") or entry.get("url")
            if not isinstance(ref, str) or is_external(ref) or not ref.strip("/"):
                continue
            key = route_key(split_target(ref)[0])
            key = key.lower() if site.routing.get("lower", True) else key
            stem = posixpath.splitext(key)[0]
            page = (
                routes.get(key)
                or routes.get(stem)
                or next(
                    (
                        p
                        for p in files
                        if posixpath.splitext(p)[0]
                        in (join(site.docs_root, stem), join(site.docs_root, stem + "/_index"))
                    ),
                    None,
                )
            )
            if (
                page is None
                and not entry.get("pageRef")
                and not entry.get("pageref")
                and not any(r == stem.split("/")[0] or r.startswith(stem.split("/")[0] + "/") for r in routes)
            ):
                continue  # a URL to a theme's page
            line = next((i for i, text in enumerate(lines, 1) if ref in text), 1)
            target = join(site.docs_root, stem) or ""
            result.entries.append(
                NavEntry(site.config_path, line, ref, (page,) if page else (target + ".md",), page is not None)
            )
    return result


navigation_order = listed_order(navigation)


class HugoRouter(Router):
    """Routes from content paths (with a trailing slash), front matter and aliases; files in `static/` are served
    at the root; relative links are tried against the page's file and against its URL."""

    page_suffixes = SUFFIXES
    index_names = ("_index.md", "index.md")

    def route(self, page: str, path: str) -> Outcome:
        if not path.startswith("/"):
            outcome = self.landing(join(posixpath.dirname(page), path), path)
            if outcome.ok:
                return outcome
            own = self._by_page().get(page)
            if own is None:
                return outcome
            resolved = join(own, path)  # the page's URL ends in `/`, so links resolve inside it
            if resolved is None:
                return outcome
            path = "/" + resolved
        else:
            base = self.site.routing.get("base_path", "")
            if base and (path.strip("/") == base or path.startswith(f"/{base}/")):
                path = path[len(base) + 1 :] or "/"
            static = join(self.site.routing["static"], path.lstrip("/"))
            if static and self.tree.is_file(static):
                return Outcome(Verdict.OK, static)
        key = route_key(path)
        key = key.lower() if self.site.routing.get("lower", True) else key
        routes = self._routes()
        if key in routes:
            return Outcome(Verdict.OK, routes[key])
        first = key.split("/", 1)[0]
        sections = self._sections()
        if (
            posixpath.splitext(key)[1]
            or first not in sections
            or any(key == p or key.startswith(p + "/") for p in self._unknown_sections())
        ):
            return unknown(UNKNOWN_ROUTES)
        hook = self.site.routing.get("link_hook")
        if hook:
            return unknown(
                f"links that match no page are read by the site's link render hook ({hook}), which the "
                "check does not run: not checked"
            )
        return Outcome(Verdict.BROKEN, reason=f"no page has the route /{key}/")

    def reference(self, page: str, link: Link) -> Outcome:
        """A `ref`/`relref` shortcode: a content path relative to the page, else to the content folder (with or
        without the extension, a section by its folder), else a page's unique file name."""
        path = split_target(link.target)[0].strip()
        if not path:
            return Outcome(Verdict.OK, page)
        place = _place(self.site, page)
        content = place[0].folder if place else self.site.docs_root
        bases = [content] if path.startswith("/") else [posixpath.dirname(page), content]
        for base in bases:
            resolved = join(base, path.lstrip("/"))
            if resolved is None:
                continue
            for candidate in (
                resolved,
                *(resolved + s for s in SUFFIXES),
                f"{resolved}/_index.md",
                f"{resolved}/index.md",
            ):
                if self.tree.is_file(candidate):
                    return Outcome(Verdict.OK, candidate)
        if "/" not in path:
            named = [f for f in self._by_page() if posixpath.basename(f) in (path, path + ".md")]
            if len(named) == 1:
                return Outcome(Verdict.OK, named[0])
        return Outcome(Verdict.BROKEN, reason=f"no page {path} (Hugo stops the build on it)")

    def _routes(self) -> dict[str, str]:
        if not hasattr(self, "_route_map"):
            routes, aliases, self._unresolved = page_routes(self.site, self.tree)
            self._pages = {page: route for route, page in reversed(routes.items())}
            self._route_map = {**aliases, **routes}
        return self._route_map

    def _unknown_sections(self) -> set[str]:
        # Sections whose `permalinks` patterns the check cannot expand (for a page, or at all).
        self._routes()
        permalinks: Permalinks = self.site.routing.get("permalinks") or Permalinks()
        return self._unresolved | set(permalinks.unknown)

    def _by_page(self) -> dict[str, str]:
        self._routes()
        return self._pages

    def _sections(self) -> set[str]:
        if not hasattr(self, "_first"):
            self._first = {route.split("/", 1)[0] for route in self._routes() if route}
        return self._first

    def names(self, path: str) -> set[str]:
        found = super().names(path)
        route = self._by_page().get(path)
        if route:
            found.add(route.rsplit("/", 1)[-1].lower())
        return found


def router(site: DocsSite, tree: Tree) -> Router:
    """The router for links on this Hugo site."""
    return HugoRouter(site, tree)


def suggest_entry(tree: Tree, site: DocsSite, page: str) -> str:
    """How to add `page` to a menu (sections list their pages without it)."""
    return f"add `menu: main` to its front matter or an entry under `menu` in {site.config_path}"
