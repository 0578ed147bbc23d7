"""The languages of an MkDocs site that uses the `i18n` plugin (mkdocs-static-i18n), read from the composed
`mkdocs.yml`: its locales (the default first) and whether translations are `page.<locale>.md` files beside the
default pages (the `suffix` structure, the plugin's default) or folders `docs/<locale>/` (the `folder` one)."""

import posixpath
import re
from dataclasses import dataclass, field

import yaml

from service.agent.docsite.limits import MAX_LANGUAGES
from service.agent.docsite.site import Language, child_path
from service.agent.docsite.yamltext import mapping_value

PLUGIN = "i18n"
# ISO 639 codes with an optional region (`en`, `pt-BR`, `zh_Hant`): locales name folders and file suffixes, so
# anything else is not taken for one.
_LOCALE = re.compile(r"[A-Za-z]{2,3}(?:[_-][A-Za-z0-9]{2,8}){0,2}")
_TRUE = ("true", "True", "TRUE", "yes", "on")


@dataclass
class I18n:
    """The plugin's languages, the default first, and how translations are laid out."""

    structure: str = "suffix"  # "suffix" or "folder"
    locales: list[str] = field(default_factory=list)
    fallback: bool = True  # `fallback_to_default`: a missing translation is served from the default language

    @property
    def default(self) -> str:
        return self.locales[0]


def read_i18n(plugins: yaml.Node | None) -> I18n | None:
    """The `i18n` plugin's settings under `plugins:` (a list or a mapping); None without the plugin or with
    fewer than two languages."""
    settings = _settings(plugins)
    if settings is None:
        return None
    found = I18n(structure="folder" if _scalar(mapping_value(settings, "docs_structure")) == "folder" else "suffix")
    found.locales = _locales(settings)
    found.fallback = _scalar(mapping_value(settings, "fallback_to_default")) not in (
        "false",
        "False",
        "FALSE",
        "no",
        "off",
    )
    return found if len(found.locales) > 1 else None


def languages(i18n: I18n | None, root: str) -> list[Language]:
    """The site's languages, the default first: folders `root/<locale>` (the default's too) with the folder
    structure, else suffixed files beside the default pages."""
    if i18n is None:
        return []
    if i18n.structure == "folder":
        return [Language(locale, child_path(root, locale)) for locale in i18n.locales]
    return [Language(i18n.default, root)] + [Language(locale, root, suffix=locale) for locale in i18n.locales[1:]]


def translation_globs(i18n: I18n | None, root: str) -> tuple[str, ...]:
    """Globs of the other languages' pages: they need no `nav:` entry, the plugin lists them by the default's."""
    if i18n is None:
        return ()
    prefix = f"/{root}" if root else ""
    if i18n.structure == "folder":
        return tuple(f"{prefix}/{locale}/**" for locale in i18n.locales[1:])
    return tuple(f"{prefix}/**/*.{locale}.*" for locale in i18n.locales[1:])


def localized_targets(i18n: I18n | None, root: str, targets: tuple[str, ...]) -> tuple[str, ...]:
    """`targets` of a `nav:` entry plus the default language's files the plugin serves for them: `x.en.md` (suffix
    structure) or `<root>/en/x.md` (folder structure)."""
    if i18n is None:
        return targets
    extra = []
    for target in targets:
        if root and not target.startswith(root + "/"):
            continue
        if i18n.structure == "folder":
            extra.append(child_path(child_path(root, i18n.default), target[len(root) + 1 :] if root else target))
        else:
            extra.append(default_variant(i18n, target))
    return targets + tuple(extra)


def default_variant(i18n: I18n, path: str) -> str:
    """The default language's suffixed file for `path` (`x.md` -> `x.en.md`), which the plugin serves for it."""
    stem, suffix = posixpath.splitext(path)
    return f"{stem}.{i18n.default}{suffix}"


def fallback_path(i18n: I18n | None, root: str, path: str) -> str | None:
    """The default language's file the plugin serves for `path` when that file is missing: `x.en.md` for `x.md`
    and `x.md` for `x.fr.md` (suffix structure); `<root>/en/x.md` for `<root>/fr/x.md` or `<root>/x.md` (folder
    structure); None when nothing stands in for it."""
    if i18n is None or (root and not path.startswith(root + "/")):
        return None
    if i18n.structure == "suffix":
        if not path.lower().endswith(".md"):
            return None
        stem, suffix = posixpath.splitext(path)
        base, locale = posixpath.splitext(stem)
        if locale[1:] in i18n.locales[1:] and i18n.fallback:
            return base + suffix
        return default_variant(i18n, path) if locale[1:] not in i18n.locales else None
    relative = path[len(root) + 1 :] if root else path
    first, _, rest = relative.partition("/")
    if first == i18n.default:
        return None
    if first in i18n.locales:
        return child_path(child_path(root, i18n.default), rest) if i18n.fallback and rest else None
    return child_path(child_path(root, i18n.default), relative)  # a default-language URL has no locale folder


_INHERIT = re.compile(r"^INHERIT:[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)
CONFIG_NAMES = ("mkdocs.yml", "mkdocs.yaml")


def inherited_config(text: str, config_path: str, files: set[str]) -> str | None:
    """The repository's mkdocs.yml that this config `INHERIT`s (a per-language build's base), if any."""
    match = _INHERIT.search(text)
    if match is None:
        return None
    base = posixpath.normpath(posixpath.join(posixpath.dirname(config_path), match.group(1)))
    return base if posixpath.basename(base) in CONFIG_NAMES and base in files else None


def language_builds(workspace_text, config_path: str, root: str, files: set[str]) -> list[Language]:
    """Per-language builds (Material's recipe: `docs/<locale>/mkdocs.yml` with `INHERIT: ../en/mkdocs.yml`) of the
    site configured by `config_path`: its own language first, then each build that inherits it, with the docs
    folder of each; [] when no other build inherits it. `workspace_text(path)` reads a file."""
    folder = posixpath.dirname(config_path)
    parent = posixpath.dirname(folder)
    found: list[Language] = []
    for path in sorted(files):
        if (
            posixpath.basename(path) not in CONFIG_NAMES
            or path == config_path
            or posixpath.dirname(posixpath.dirname(path)) != parent
            or len(found) >= MAX_LANGUAGES
        ):
            continue
        text = workspace_text(path) or ""
        if inherited_config(text, path, files) != config_path:
            continue
        docs_dir = re.search(r"^docs_dir:[ \t]*['\"]?([^'\"\s#]+)", text, re.MULTILINE)
        own = posixpath.normpath(posixpath.join(posixpath.dirname(path), docs_dir.group(1) if docs_dir else "docs"))
        if not own.startswith("../") and own != "..":
            found.append(Language(posixpath.basename(posixpath.dirname(path)), own))
    code = posixpath.basename(folder) if _LOCALE.fullmatch(posixpath.basename(folder)) else "default"
    if code != "default" and root.startswith(folder + "/"):
        # Builds whose mkdocs.yml a script writes at build time: sibling locale folders laid out like this one.
        inside = root[len(folder) + 1 :]
        known = {lang.folder for lang in found}
        siblings = sorted(
            {
                path.split("/")[len(parent.split("/")) if parent else 0]
                for path in files
                if (not parent or path.startswith(parent + "/")) and path.endswith(".md")
            }
        )
        for sibling in siblings:
            own = f"{parent}/{sibling}/{inside}" if parent else f"{sibling}/{inside}"
            if (
                sibling != code
                and _LOCALE.fullmatch(sibling)
                and own not in known
                and len(found) < MAX_LANGUAGES
                and any(path.startswith(own + "/") for path in files)
            ):
                found.append(Language(sibling, own))
    if not found:
        return []
    return [Language(code, root), *found]


def build_fallback(builds: list[Language] | None, path: str) -> str | None:
    """The default build's file standing in for `path` in a per-language build that lacks it (the recipe's build
    copies the default language's missing pages in)."""
    if not builds:
        return None
    default = builds[0].folder
    for language in builds[1:]:
        if path.startswith(language.folder + "/"):
            rest = path[len(language.folder) + 1 :]
            return f"{default}/{rest}" if default else rest
    return None


def unsuffixed_stem(i18n: I18n | None, stem: str) -> str:
    """A file stem without its language suffix (`setup.fr` -> `setup`): the name links use for the page."""
    base, locale = posixpath.splitext(stem)
    return base if i18n is not None and i18n.structure == "suffix" and locale[1:] in i18n.locales else stem


def hint(i18n: I18n | None) -> str:
    """One sentence on how translations work, for the site's navigation hint ("" without the plugin)."""
    if i18n is None:
        return ""
    if i18n.structure == "folder":
        return (
            f" Languages (i18n plugin): each has a folder (`{i18n.default}/` holds the default); `nav:` names "
            "pages without the language folder."
        )
    return (
        f" Languages (i18n plugin): a translation sits beside its page as `page.<locale>.md`; `nav:` names the "
        f"default ({i18n.default}) page."
    )


def _settings(plugins: yaml.Node | None) -> yaml.MappingNode | None:
    if isinstance(plugins, yaml.MappingNode):
        value = mapping_value(plugins, PLUGIN)
        return value if isinstance(value, yaml.MappingNode) else None
    for item in plugins.value if isinstance(plugins, yaml.SequenceNode) else []:
        value = mapping_value(item, PLUGIN)
        if isinstance(value, yaml.MappingNode):
            return value
        if value is not None and len(item.value) > 1:
            # `- i18n:` with its options indented as siblings of the name, as the plugin's own docs show.
            return item
    return None


def _locales(settings: yaml.MappingNode) -> list[str]:
    """The locales, the default first: the 1.x list of `{locale, default}` mappings, else the 0.x mapping of
    codes with `default_language`."""
    listed = mapping_value(settings, "languages")
    default = _scalar(mapping_value(settings, "default_language"))
    locales: list[str] = []
    if isinstance(listed, yaml.SequenceNode):
        for item in listed.value[:MAX_LANGUAGES]:
            locale = _scalar(mapping_value(item, "locale"))
            if locale and default is None and _scalar(mapping_value(item, "default")) in _TRUE:
                default = locale
            locales.append(locale or "")
    elif isinstance(listed, yaml.MappingNode):
        locales = [key.value for key, _ in listed.value[:MAX_LANGUAGES] if isinstance(key, yaml.ScalarNode)]
    ordered = [default] if default else []
    return [locale for locale in dict.fromkeys(ordered + locales) if _LOCALE.fullmatch(locale)]


def _scalar(node) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) else None
