"""MkDocs sites: `mkdocs.yml`, its `docs_dir` and the page paths its `nav:` lists."""

import posixpath

import yaml

from service.agent.docsite.links import is_external
from service.agent.docsite.site import DocsSite, Navigation, NavEntry, NavError, page_targets, read_text
from service.agent.docsite.yamltext import YAMLError, compose_yaml, error_line, error_text, mapping_value

CONFIG_NAMES = ("mkdocs.yml", "mkdocs.yaml")
SUFFIXES = (".md", ".markdown", ".mdown", ".mkdn", ".mkd")
# Plugins that build the navigation from elsewhere (a SUMMARY.md, .pages files, globs).
NAV_PLUGINS = ("literate-nav", "awesome-pages", "awesome-nav")
_STR = "tag:yaml.org,2002:str"


def detect(workspace, config_path: str, files: set[str]) -> DocsSite:
    """The MkDocs site configured by `config_path` (defaults apply where the file does not parse)."""
    node = _compose(read_text(workspace, config_path) or "")
    folder = posixpath.dirname(config_path)
    root = _docs_root(folder, _scalar(mapping_value(node, "docs_dir")) or "docs")
    plugins = mapping_value(node, "plugins")
    plugin_nav = plugins is not None and any(name in _scalars(plugins) for name in NAV_PLUGINS)
    explicit = mapping_value(node, "nav") is not None and not plugin_nav
    where = f"{root}/" if root else "the repository root"
    if explicit:
        hint = (f"Navigation is the `nav:` list in {config_path}: entries are page paths relative to {where} with "
                f"the extension, e.g. `- Setup: guides/setup.md`. New pages must be added to `nav:`.")
    else:
        hint = (f"{config_path} has no `nav:` list, so navigation follows the folders under {where} "
                "(page titles come from each page's first heading).")
    return DocsSite("mkdocs", config_path, root, nav_files=[config_path] if explicit else [], nav_hint=hint,
                    page_suffixes=SUFFIXES, ignored=_globs(root, mapping_value(node, "exclude_docs")),
                    unlisted_ok=_globs(root, mapping_value(node, "not_in_nav")), explicit_nav=explicit)


def navigation(workspace, site: DocsSite, files: set[str]) -> Navigation:
    """The page paths `nav:` lists, each with its line."""
    path = site.config_path
    try:
        node = compose_yaml(read_text(workspace, path) or "")
    except YAMLError as exc:
        return Navigation(complete=False,
                          errors=[NavError(path, error_line(exc), f"{path} is not valid YAML ({error_text(exc)})")])
    result = Navigation()
    _walk(mapping_value(node, "nav"), site, files, result)
    return result


def _walk(node, site: DocsSite, files: set[str], result: Navigation) -> None:
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _walk(item, site, files, result)
    elif isinstance(node, yaml.MappingNode):
        for _title, value in node.value:
            _walk(value, site, files, result)
    elif isinstance(node, yaml.ScalarNode) and node.tag == _STR:
        ref = node.value.strip()
        if not ref or is_external(ref) or ref.startswith("/"):
            return  # an absolute path or URL is a link, not a page
        if "*" in ref or ref == "...":
            result.complete = False  # a plugin's glob or "rest of the pages" marker
            return
        targets = page_targets(site.docs_root, ref, (".md",))
        result.entries.append(NavEntry(site.config_path, node.start_mark.line + 1, ref, targets,
                                       any(t in files for t in targets)))


def _compose(text: str):
    try:
        return compose_yaml(text)
    except YAMLError:
        return None


def _scalar(node) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) and node.tag == _STR else None


def _scalars(node) -> set[str]:
    # Plugin names: list items that are names, or keys of mappings of settings.
    names = set()
    for item in node.value if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)) else []:
        for part in item if isinstance(item, tuple) else (item,):
            if isinstance(part, yaml.ScalarNode):
                names.add(part.value)
            elif isinstance(part, yaml.MappingNode):
                names |= {key.value for key, _ in part.value if isinstance(key, yaml.ScalarNode)}
    return names


def _docs_root(folder: str, docs_dir: str) -> str:
    root = posixpath.normpath(posixpath.join(folder, docs_dir))
    if root == ".." or root.startswith("../") or posixpath.isabs(docs_dir):
        root = posixpath.join(folder, "docs")
    return "" if root == "." else root


def _globs(root: str, node) -> tuple[str, ...]:
    # MkDocs takes gitignore-style lines relative to docs_dir; these are anchored to the repository instead.
    text = _scalar(node) or ""
    prefix = f"/{root}" if root else ""
    globs = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        anchored = line.startswith("/") or "/" in line.rstrip("/")
        globs.append(f"{prefix}/{line.lstrip('/')}" if anchored else f"{prefix}/**/{line}")
    return tuple(globs)


def suggest_entry(site: DocsSite, page: str, files: set[str]) -> str:
    """How to list `page` in the navigation."""
    ref = page[len(site.docs_root) + 1:] if site.docs_root else page
    return f"add `- Title: {ref}` to `nav:` in {site.config_path}"
