"""What a `docusaurus.config.*` says about its docs plugin, read as a literal (never run): the docs folder,
`routeBasePath`, the sidebars file, `baseUrl`, its `i18n` locales, and the versions `versions.json` lists."""

import posixpath
import re
from dataclasses import dataclass, field

from service.agent.docsite.jsimports import LocalImports
from service.agent.docsite.jsliteral import OPAQUE, Str, exported_value, read_module
from service.agent.docsite.jsontext import JSONDecodeError, load_json
from service.agent.docsite.limits import MAX_LANGUAGES, MAX_VERSIONS, Uncheckable
from service.agent.docsite.site import normal_join, read_text

REDIRECT_PLUGINS = ("client-redirects", "@docusaurus/plugin-client-redirects", "docusaurus-plugin-client-redirects")
PRESETS = ("classic", "@docusaurus/preset-classic", "docusaurus-preset-classic")
DOCS_PLUGINS = ("content-docs", "@docusaurus/plugin-content-docs", "docusaurus-plugin-content-docs")
# Fallbacks for configs the literal reader cannot read (an async function, a computed export). They stop at the
# first nested `{}`, so they are tried only when the literal reader finds nothing.
_DOCS_PATH = re.compile(r"\bdocs\s*:\s*\{[^{}]*?\bpath\s*:\s*['\"]([^'\"]+)['\"]", re.DOTALL)
_ROUTE_BASE = re.compile(r"\bdocs\s*:\s*\{[^{}]*?\brouteBasePath\s*:\s*['\"]([^'\"]*)['\"]", re.DOTALL)
_SIDEBAR_PATH = re.compile(r"\bsidebarPath\s*:\s*(?:require\.resolve\(\s*)?['\"]([^'\"]+)['\"]")
_SIDEBAR_OFF = re.compile(r"\bsidebarPath\s*:\s*(?:false|undefined)\b")
_BASE_URL = re.compile(r"\bbaseUrl\s*:\s*['\"]([^'\"]*)['\"]")
_DEFAULT_LOCALE = re.compile(r"\bi18n\s*:\s*\{[^{}]*?\bdefaultLocale\s*:\s*['\"]([^'\"]+)['\"]", re.DOTALL)
_LOCALES = re.compile(r"\bi18n\s*:\s*\{[^{}]*?\blocales\s*:\s*\[([^\[\]{}]*)\]", re.DOTALL)
_QUOTED = re.compile(r"['\"]([^'\"]+)['\"]")
_UNSET = object()  # sidebarPath not given: Docusaurus then autogenerates the whole sidebar


@dataclass
class DocsConfig:
    """The default docs plugin's options that decide where pages live and how they are routed."""

    path: str = "docs"  # relative to the site folder
    route_base: str = "docs"
    sidebar: str | None = None  # the sidebars file as written, when it is a literal
    sidebar_named: bool = False  # whether the config mentions sidebarPath at all
    sidebar_off: bool = False  # `sidebarPath: false` (or undefined): no sidebars file
    base_url: str = "/"
    plugin_id: str = "default"
    last_version: str | None = None
    version_paths: dict[str, str] = field(default_factory=dict)  # version name -> its `path` option
    include_current: bool = True  # `includeCurrentVersion`
    only_include: list[str] | None = None  # `onlyIncludeVersions`, "current" among them when served
    i18n: "I18n | None" = None


@dataclass
class I18n:
    """The site's `i18n` option: the default locale, every locale (the default among them), and the folders
    that hold translations (`path`, relative to the site folder, and each locale's `localeConfigs.path`)."""

    default: str
    locales: list[str]
    path: str = "i18n"
    locale_paths: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Version:
    """One docs version: its name, the folder of its pages, its route prefix and its sidebars file."""

    name: str
    root: str
    route: str
    sidebar: str


def config_value(text: str, imports: LocalImports | None = None):
    """What the config `text` exports, read as a literal (with what it imports from the repository's own
    modules when `imports` is given); OPAQUE when it cannot be read."""
    try:
        if imports is None:
            return exported_value(text)
        return read_module(text, imports.default, load_named=imports.named).exported
    except Uncheckable:
        return OPAQUE


def read_config(text: str, exported=None) -> DocsConfig:
    """The docs options of the config `text` (whose export `config_value` read, when given): from the literal
    `presets`/`plugins` entries, else by regex."""
    exported = config_value(text) if exported is None else exported
    config = DocsConfig()
    options = _docs_options(exported) if isinstance(exported, dict) else None
    base_url = exported.get("baseUrl") if isinstance(exported, dict) else None
    config.base_url = base_url.value if isinstance(base_url, Str) else _search(_BASE_URL, text) or "/"
    config.i18n = read_i18n(exported, text)
    if options is None:
        config.path = _search(_DOCS_PATH, text) or "docs"
        route_base = _search(_ROUTE_BASE, text)
        config.route_base = "docs" if route_base is None else route_base
        _sidebar_by_regex(config, text)
        return config
    _apply_options(config, options, text)
    return config


def read_instances(text: str, exported=None) -> list[DocsConfig]:
    """Every docs plugin instance of the config (the default one first, as `read_config` reads it), each with
    its own folder, route base, sidebars file and versions options."""
    exported = config_value(text) if exported is None else exported
    default = read_config(text, exported)
    others = []
    for options in _docs_instances(exported)[1:] if isinstance(exported, dict) else ():
        config = DocsConfig(base_url=default.base_url, i18n=default.i18n)
        config.sidebar_named = False
        _apply_options(config, options, "")
        if config.plugin_id != default.plugin_id:
            others.append(config)
    return [default, *others]


def client_redirects(text: str, exported=None) -> list[str] | None:
    """The `from` routes of `@docusaurus/plugin-client-redirects`' literal `redirects`, and `*.html` for each of
    its `fromExtensions` (`/x.html` redirects to the route `/x`); None without the plugin."""
    exported = config_value(text) if exported is None else exported
    sources: list[str] | None = None
    for name, options in _entries(exported.get("plugins")) if isinstance(exported, dict) else ():
        if name not in REDIRECT_PLUGINS:
            continue
        sources = sources or []
        extensions = options.get("fromExtensions") if isinstance(options, dict) else None
        sources += (
            [f"*.{item.value.lstrip('.')}" for item in extensions if isinstance(item, Str)]
            if isinstance(extensions, list)
            else []
        )
        entries = options.get("redirects") if isinstance(options, dict) else None
        for entry in entries if isinstance(entries, list) else ():
            written = entry.get("from") if isinstance(entry, dict) else None
            for item in written if isinstance(written, list) else [written]:
                if isinstance(item, Str):
                    sources.append("/" + item.value.strip("/"))
    return sources


def read_i18n(exported, text: str) -> I18n | None:
    """The `i18n` option of the exported config, else (when it is computed) the literal `defaultLocale` and
    `locales` found by regex; None without one, or when its default locale cannot be known."""
    i18n = exported.get("i18n") if isinstance(exported, dict) else OPAQUE
    if isinstance(i18n, dict):
        default, locales = _string(i18n.get("defaultLocale")), i18n.get("locales")
        found = I18n(
            default or "",
            [item.value for item in locales if isinstance(item, Str)] if isinstance(locales, list) else [],
            _string(i18n.get("path")) or "i18n",
        )
        _locale_paths(found, i18n.get("localeConfigs"))
    elif i18n is OPAQUE:
        listed = _search(_LOCALES, text)
        found = I18n(_search(_DEFAULT_LOCALE, text) or "", _QUOTED.findall(listed or ""))
    else:
        return None
    found.locales = [name for name in dict.fromkeys([found.default, *found.locales]) if _valid_locale(name)][
        :MAX_LANGUAGES
    ]
    return found if _valid_locale(found.default) else None


def _locale_paths(found: I18n, configs) -> None:
    for name, settings in configs.items() if isinstance(configs, dict) else ():
        folder = _string(settings.get("path")) if isinstance(settings, dict) else None
        if isinstance(name, str) and folder:
            found.locale_paths[name] = folder


def _valid_locale(value) -> bool:
    # Locales name folders; anything that could climb out of i18n/ or is implausibly long is not taken.
    return (
        isinstance(value, str)
        and 0 < len(value) <= 40
        and value not in (".", "..")
        and not any(c in value for c in "/\\\0\n")
    )


def _string(value) -> str | None:
    return value.value if isinstance(value, Str) else None


def _apply_options(config: DocsConfig, options: dict, text: str) -> None:
    path, route_base = options.get("path"), options.get("routeBasePath")
    if isinstance(path, Str):
        config.path = path.value
    elif path is OPAQUE:  # computed, e.g. `path.join(__dirname, 'docs')`
        config.path = _search(_DOCS_PATH, text) or "docs"
    if isinstance(route_base, Str):
        config.route_base = route_base.value
    elif route_base is OPAQUE:
        found = _search(_ROUTE_BASE, text)
        config.route_base = "docs" if found is None else found
    _apply_version_options(config, options)
    sidebar = options.get("sidebarPath", _UNSET)
    config.sidebar_named = sidebar is not _UNSET
    if isinstance(sidebar, Str):
        config.sidebar = sidebar.value
    elif sidebar is False or sidebar is None:
        config.sidebar_off = True
    elif sidebar is OPAQUE:  # `require.resolve('./sidebars.js')`
        _sidebar_by_regex(config, text)


def _apply_version_options(config: DocsConfig, options: dict) -> None:
    # `id` names the versions files (`<id>_versions.json`); `lastVersion` and `versions.<name>.path` move routes.
    plugin_id, last = options.get("id"), options.get("lastVersion")
    config.plugin_id = plugin_id.value if isinstance(plugin_id, Str) and plugin_id.value else "default"
    config.last_version = last.value if isinstance(last, Str) else None
    config.include_current = options.get("includeCurrentVersion") is not False
    only = options.get("onlyIncludeVersions")
    if isinstance(only, list) and all(isinstance(item, Str) for item in only):
        config.only_include = [item.value for item in only]
    versions = options.get("versions")
    for name, settings in versions.items() if isinstance(versions, dict) else ():
        version_path = settings.get("path") if isinstance(settings, dict) else None
        if isinstance(name, str) and isinstance(version_path, Str):
            config.version_paths[name] = version_path.value


def _sidebar_by_regex(config: DocsConfig, text: str) -> None:
    config.sidebar_named = "sidebarPath" in text
    config.sidebar_off = bool(_SIDEBAR_OFF.search(text))
    config.sidebar = _search(_SIDEBAR_PATH, text)


def _docs_options(exported: dict) -> dict | None:
    """The options of the default docs plugin instance: the classic preset's `docs`, else a content-docs plugin
    without an `id` (else the first one); None when the config names none that can be read."""
    return next(iter(_docs_instances(exported)), None)


def _docs_instances(exported: dict) -> list[dict]:
    """The options of every docs plugin instance that can be read, the default one (no `id`) first."""
    instances = []
    presets = exported.get("presets")
    for name, options in _entries(presets):
        docs = options.get("docs") if isinstance(options, dict) else None
        if isinstance(docs, dict) and (name in PRESETS or name is OPAQUE):
            instances.append(docs)  # an OPAQUE name is `require.resolve('@docusaurus/preset-classic')`
        elif name in PRESETS and docs is None and isinstance(options, dict) and OPAQUE not in options:
            instances.append({})  # the preset with its default docs options
    for name, options in _entries(exported.get("plugins")):
        if name in DOCS_PLUGINS and isinstance(options, dict):
            instances.append(options)
    default = [i for i in instances if not isinstance(i.get("id"), Str) or i["id"].value in ("", "default")]
    return default[:1] + [i for i in instances if not default or i is not default[0]]


def _entries(value) -> list[tuple[object, object]]:
    """(name, options) of each `presets`/`plugins` entry: `'name'` or `['name', {options}]`."""
    found: list[tuple[object, object]] = []
    for item in value if isinstance(value, list) else ():
        if isinstance(item, Str):
            found.append((item.value, {}))
        elif isinstance(item, list) and item:
            name = item[0].value if isinstance(item[0], Str) else OPAQUE
            found.append((name, item[1] if len(item) > 1 else {}))
    return found


def _search(pattern: re.Pattern, text: str) -> str | None:
    match = pattern.search(text)
    return match.group(1) if match else None


def read_versions(workspace, site_dir: str, config: DocsConfig, files: set[str]) -> list[Version]:
    """The versions `versions.json` lists (newest first), each with its folder, route prefix and sidebars file;
    [] when the file is absent or not a list of names. The current docs are not among them."""
    prefix = "" if config.plugin_id == "default" else f"{config.plugin_id}_"
    listing = normal_join(site_dir, f"{prefix}versions.json")
    if listing not in files:
        return []
    try:
        value = load_json(read_text(workspace, listing) or "")
    except (JSONDecodeError, Uncheckable):
        return []  # Docusaurus fails on it; the check then reads no versions rather than guess
    names = [v for v in value if _valid_name(v)][:MAX_VERSIONS] if isinstance(value, list) else []
    last = config.last_version or (names[0] if names else "current")
    if config.only_include is not None:
        names = [name for name in names if name in config.only_include]
    route_base = "/" + config.route_base.strip("/")
    versions = []
    for name in dict.fromkeys(names):
        route = _version_route(route_base, config.version_paths.get(name, "" if name == last else name))
        versions.append(
            Version(
                name,
                normal_join(site_dir, f"{prefix}versioned_docs/version-{name}"),
                route,
                normal_join(site_dir, f"{prefix}versioned_sidebars/version-{name}-sidebars.json"),
            )
        )
    return versions


@dataclass(frozen=True)
class Instance:
    """A docs plugin instance besides the default one: its folder, route prefixes, sidebars file and versions."""

    plugin_id: str
    root: str
    route_base: str
    current_route: str | None
    sidebar: str | None
    versions: list[Version]


def served_versions(config: DocsConfig, versions: list[Version], files: set[str]) -> tuple[list[Version], str | None]:
    """The versions that have routes and the current docs' route prefix (None when not served). With
    `includeCurrentVersion: false`, a listed version whose folder is absent is the one the build copies the
    current docs into: the current docs take its route."""
    current = current_route(config, versions)
    if current is not None or not versions:
        return versions, current
    present = {posixpath.dirname(path) for path in files}
    missing = [v for v in versions if not any(p == v.root or p.startswith(v.root + "/") for p in present)]
    if not missing:
        return versions, None
    return [v for v in versions if v is not missing[0]], missing[0].route


def current_route(config: DocsConfig, versions: list[Version]) -> str | None:
    """The route prefix of the current docs: `routeBasePath`, or `routeBasePath/next` when versions exist and
    the latest of them is served there; None when they are not served (`includeCurrentVersion: false`)."""
    route_base = "/" + config.route_base.strip("/")
    if not config.include_current or (config.only_include is not None and "current" not in config.only_include):
        # The current docs are not served; a build that copies them into the missing latest version serves them
        # at that version's route.
        return None if versions else route_base
    if not versions or config.last_version == "current":
        return _version_route(route_base, config.version_paths.get("current", ""))
    return _version_route(route_base, config.version_paths.get("current", "next"))


def _version_route(route_base: str, path: str) -> str:
    return "/" + posixpath.join(route_base, path.strip("/")).strip("/")


def _valid_name(value) -> bool:
    # Docusaurus refuses names with slashes and the dot folders; the rest name folders and route parts.
    return (
        isinstance(value, str)
        and 0 < len(value) <= 100
        and value not in (".", "..", "current")
        and not any(c in value for c in "/\\\0")
    )
