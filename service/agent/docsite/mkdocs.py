"""MkDocs sites: `mkdocs.yml`, its `docs_dir` and the page paths its `nav:` lists."""

import posixpath

import yaml

from service.agent.docsite import mkdocs_anchors, mkdocs_blog, mkdocs_i18n
from service.agent.docsite.framework import listed_order
from service.agent.docsite.limits import Uncheckable
from service.agent.docsite.pages import Link, LinkKind, Mode, parse_page
from service.agent.docsite.routing import OTHER_ROUTES, Outcome, Router, Verdict, is_external, join, unknown
from service.agent.docsite.site import (
    DocsSite,
    NavEntry,
    NavError,
    Navigation,
    child_path,
    ignore_globs,
    in_folder,
    page_targets,
    read_text,
)
from service.agent.docsite.tree import Tree
from service.agent.docsite.yamltext import YAMLError, compose_yaml, error_line, error_text, mapping_value

CONFIG_NAMES = ("mkdocs.yml", "mkdocs.yaml")
CONFIG_TAILS: tuple[str, ...] = ()
SUFFIXES = (".md", ".markdown", ".mdown", ".mkdn", ".mkd")
_STR = "tag:yaml.org,2002:str"
MAX_AWESOME_FOLDERS = 20_000  # folders walked for awesome-pages `.pages` files; beyond, navigation is incomplete


def detect(workspace, config_path: str, files: set[str]) -> DocsSite | None:
    """The MkDocs site configured by `config_path` (defaults apply where the file does not parse); None for a
    per-language build that inherits another mkdocs.yml, whose site that one is."""
    text = read_text(workspace, config_path) or ""
    if mkdocs_i18n.inherited_config(text, config_path, files):
        return None
    node = _compose(text)
    folder = posixpath.dirname(config_path)
    root = _docs_root(folder, _scalar(mapping_value(node, "docs_dir")) or "docs")
    plugins = mapping_value(node, "plugins")
    names = _scalars(plugins) if plugins is not None else set()
    literate = _plugin_option(plugins, "literate-nav", "nav_file") or "SUMMARY.md" if "literate-nav" in names else None
    literate_root = child_path(root, literate) if literate else None
    awesome = "awesome-pages" in names or "awesome-nav" in names
    has_nav = mapping_value(node, "nav") is not None
    explicit = has_nav or (literate_root is not None and literate_root in files) or awesome
    where = f"{root}/" if root else "the repository root"
    nav_files = [config_path] if has_nav else []
    if literate_root in files:
        nav_files = [literate_root]
        hint = (
            f"Navigation is the literate-nav file {literate_root} (a Markdown list of links, relative to "
            f"it; a folder's own {literate} lists that folder). New pages must be added to it."
        )
    elif has_nav:
        hint = (
            f"Navigation is the `nav:` list in {config_path}: entries are page paths relative to {where} with "
            f"the extension, e.g. `- Setup: guides/setup.md`. New pages must be added to `nav:`."
        )
        if literate:
            hint += f" A folder entry (`guides/`) uses that folder's {literate} as its list (literate-nav)."
    elif awesome:
        hint = (
            f"Navigation follows the folders under {where}; a folder's `.pages` file (awesome-pages) orders "
            "it, and a `nav:` there without `...` lists its pages explicitly."
        )
    else:
        hint = (
            f"{config_path} has no `nav:` list, so navigation follows the folders under {where} "
            "(page titles come from each page's first heading)."
        )
    hint += " Links are file paths relative to the page, with the extension: [Setup](../guides/setup.md#install)."
    i18n = mkdocs_i18n.read_i18n(plugins) if "i18n" in names else None
    plugin = next((name for name in mkdocs_blog.PLUGIN_NAMES if name in names), None)
    blog = mkdocs_blog.read_blog(lambda option: _plugin_value(plugins, plugin, option), root) if plugin else None
    if blog is not None:
        hint += (
            f" Blog posts live in {blog.posts}/ with `date` (and `authors`, `categories`) front matter; the "
            "blog plugin lists them, so they need no `nav:` entry."
        )
    meta_file = next((_plugin_option(plugins, n, "meta_file") or ".meta.yml" for n in META_NAMES if n in names), None)
    builds = [] if i18n else mkdocs_i18n.language_builds(lambda p: read_text(workspace, p), config_path, root, files)
    use_directory_urls = _scalar(mapping_value(node, "use_directory_urls")) not in ("false", "False", "no")
    return DocsSite(
        "mkdocs",
        config_path,
        root,
        nav_files=nav_files,
        nav_hint=hint + mkdocs_i18n.hint(i18n),
        page_suffixes=SUFFIXES,
        ignored=_globs(root, mapping_value(node, "exclude_docs")),
        unlisted_ok=_globs(root, mapping_value(node, "not_in_nav"))
        + mkdocs_i18n.translation_globs(i18n, root)
        + tuple(f"/{lang.folder}/**" for lang in builds[1:])
        + ((f"/{blog.posts}/**",) if blog else ()),
        explicit_nav=explicit,
        languages=mkdocs_i18n.languages(i18n, root) or builds,
        routing={
            "literate": literate,
            "awesome": awesome,
            "use_directory_urls": use_directory_urls,
            "i18n": i18n,
            "builds": builds,
            "blog": blog,
            "redirects": _redirect_maps(plugins) if "redirects" in names else None,
            "meta_file": meta_file,
            "tabs": mkdocs_anchors.read_tab_ids(mapping_value(node, "markdown_extensions")),
            "page_hooks": mkdocs_anchors.rewrites_pages(
                lambda path: read_text(workspace, path), config_path, mapping_value(node, "hooks")
            ),
        },
    )


def navigation(tree: Tree, site: DocsSite) -> Navigation:
    """The page paths the navigation lists (`nav:`, literate-nav files, awesome-pages `.pages`), with lines."""
    workspace, files = tree.workspace, tree.files
    path = site.config_path
    assert path is not None  # a site of this kind is only detected from its config file
    literate = site.routing.get("literate")
    result = Navigation()
    if site.nav_files and site.nav_files[0] != path:
        _literate(workspace, site, files, site.nav_files[0], result, set())
    else:
        try:
            node = compose_yaml(read_text(workspace, path) or "")
        except YAMLError as exc:
            return Navigation(
                complete=False,
                errors=[NavError(path, error_line(exc), f"{path} is not valid YAML ({error_text(exc)})")],
            )
        except Uncheckable as exc:
            exc.path = path
            raise
        nav = mapping_value(node, "nav")
        if nav is None and not site.routing.get("awesome"):
            result.complete = False
        _walk(workspace, nav, site, files, result, literate)
    if site.routing.get("awesome"):
        _awesome_pages(workspace, site, files, result)
    return result


navigation_order = listed_order(navigation)


def _walk(workspace, node, site: DocsSite, files: set[str], result: Navigation, literate: str | None) -> None:
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _walk(workspace, item, site, files, result, literate)
    elif isinstance(node, yaml.MappingNode):
        for _title, value in node.value:
            _walk(workspace, value, site, files, result, literate)
    elif isinstance(node, yaml.ScalarNode) and node.tag == _STR and not node.value.startswith("!include"):
        _entry(
            workspace,
            site,
            files,
            result,
            site.config_path or "",
            node.start_mark.line + 1,
            node.value.strip(),
            site.docs_root,
            literate,
        )
    elif isinstance(node, yaml.ScalarNode) and (node.tag.startswith("!") or node.value.startswith("!include")):
        # `!include` (mkdocs-monorepo) or another plugin's tag: what it lists is not read here.
        line = node.start_mark.line + 1
        result.unreadable.append(
            NavError(
                site.config_path or "",
                line,
                f"the nav entry `{node.value}` on line {line} is a plugin's, so it could not be read",
            )
        )


def _entry(
    workspace,
    site: DocsSite,
    files: set[str],
    result: Navigation,
    file: str,
    line: int,
    ref: str,
    folder: str,
    literate: str | None,
    seen: set | None = None,
) -> None:
    if not ref or is_external(ref) or ref.startswith(("/", "#")):
        return  # an absolute path or URL is a link, not a page
    if "*" in ref or ref == "...":
        result.complete = False  # a plugin's glob or "rest of the pages" marker
        return
    if ref.endswith("/"):
        section = child_path(folder, ref.rstrip("/"))
        nav_file = child_path(section, literate) if literate else None
        if nav_file and nav_file in files:
            _literate(workspace, site, files, nav_file, result, seen if seen is not None else set())
        else:
            result.patterns.append(f"/{section}/**")
        return
    targets = mkdocs_i18n.localized_targets(
        site.routing.get("i18n"), site.docs_root, page_targets(folder, ref, (".md",))
    )
    result.entries.append(NavEntry(file, line, ref, targets, any(t in files for t in targets)))


def _literate(workspace, site: DocsSite, files: set[str], nav_file: str, result: Navigation, seen: set) -> None:
    # The links in the nav file's lists; a folder link uses that folder's own nav file.
    if nav_file in seen or len(seen) > 200:
        return
    seen.add(nav_file)
    result.entries.append(NavEntry(nav_file, 1, posixpath.basename(nav_file), (nav_file,), True))
    parsed = parse_page(read_text(workspace, nav_file) or "", Mode.MARKDOWN)
    if parsed.uncheckable:
        raise Uncheckable(parsed.uncheckable, path=nav_file)
    for link in parsed.links:
        path = link.target.split("#", 1)[0]
        if path:
            _entry(
                workspace,
                site,
                files,
                result,
                nav_file,
                link.line,
                path,
                posixpath.dirname(nav_file),
                site.routing.get("literate"),
                seen,
            )


def _awesome_pages(workspace, site: DocsSite, files: set[str], result: Navigation) -> None:
    """The folders awesome-pages shows, walked from the docs root: a folder without a `.pages` `nav:` (or with
    the `...` rest marker in it) lists its pages and sub-folders; otherwise only what its `nav:` names, a
    sub-folder named there being walked in turn. Folders no `nav:` reaches are hidden."""
    children: dict[str, set[str]] = {}
    for page in files:
        if site.is_page(page):
            folder = posixpath.dirname(page)
            while folder != site.docs_root and in_folder(folder, site.docs_root):
                children.setdefault(posixpath.dirname(folder), set()).add(folder)
                folder = posixpath.dirname(folder)
    pending, seen = [site.docs_root], set[str]()
    while pending:
        folder = pending.pop()
        if folder in seen:
            continue
        if len(seen) >= MAX_AWESOME_FOLDERS:
            result.complete = False  # the rest is not read, so no page is reported as missing from it
            return
        seen.add(folder)
        pending += _awesome_folder(workspace, site, files, folder, children.get(folder, set()), result)


def _awesome_folder(
    workspace, site: DocsSite, files: set[str], folder: str, subfolders: set[str], result: Navigation
) -> list[str]:
    """Add one folder's listing to `result`; return the sub-folders it shows."""
    pages_file = child_path(folder, ".pages")
    items = _pages_nav(workspace, pages_file) if pages_file in files else None
    if items is None:
        result.patterns.append(f"/{folder}/*" if folder else "*")
        return sorted(subfolders)
    named, rest = [], False
    for line, ref in items:
        if ref.startswith("..."):  # `...`, `... | flat`, `... | regex=...`: the rest, filtered or not
            rest = True
            if "flat" in ref:  # the rest's sub-folders' pages are shown at this level
                result.patterns.append(f"/{folder}/**" if folder else "**")
            continue
        target = join(folder, ref.rstrip("/"))
        if target is not None and target in subfolders and not ref.lower().endswith(SUFFIXES):
            named.append(target)
        else:
            _entry(workspace, site, files, result, pages_file, line, ref, folder, None)
    if rest:
        result.patterns.append(f"/{folder}/*" if folder else "*")
        return named + sorted(subfolders - set(named))
    return named


def _pages_nav(workspace, pages_file: str) -> list[tuple[int, str]] | None:
    """(line, name) of each entry of a `.pages` file's `nav:` (or the older `arrange:`), sections flattened;
    None when it has none or does not parse."""
    try:
        node = compose_yaml(read_text(workspace, pages_file) or "")
    except YAMLError:
        return None
    except Uncheckable as exc:
        exc.path = pages_file
        raise
    nav = mapping_value(node, "nav")
    nav = mapping_value(node, "arrange") if nav is None else nav
    if not isinstance(nav, yaml.SequenceNode):
        return None
    found: list[tuple[int, str]] = []
    pending = list(reversed(nav.value))
    while pending:
        item = pending.pop()
        if isinstance(item, yaml.MappingNode) and item.value:
            item = item.value[0][1]  # `- Title: value`
        if isinstance(item, yaml.SequenceNode):
            pending += reversed(item.value)  # a section: its entries are names in this folder too
        elif isinstance(item, yaml.ScalarNode) and item.tag == _STR and item.value.strip():
            found.append((item.start_mark.line + 1, item.value.strip()))
    return found


def _redirect_maps(plugins) -> frozenset[str]:
    """The sources of the redirects plugin's `redirect_maps` (page paths relative to docs_dir)."""
    settings = [mapping_value(plugins, "redirects")]  # `plugins:` as a mapping
    if isinstance(plugins, yaml.SequenceNode):
        settings += [mapping_value(item, "redirects") for item in plugins.value]
    sources: set[str] = set()
    for node in settings:
        maps = mapping_value(node, "redirect_maps")
        if isinstance(maps, yaml.MappingNode):
            sources |= {key.value.strip("/") for key, _ in maps.value if isinstance(key, yaml.ScalarNode)}
    return frozenset(sources)


def _plugin_value(plugins, plugin: str, option: str):
    """A plugin setting as a string or a list of strings (None when unset or of another kind)."""
    node = None
    for item in plugins.value if isinstance(plugins, (yaml.SequenceNode, yaml.MappingNode)) else []:
        for part in item if isinstance(item, tuple) else (item,):
            if node is None and isinstance(part, yaml.MappingNode):
                node = mapping_value(mapping_value(part, plugin), option)
    if node is None and isinstance(plugins, yaml.MappingNode):
        node = mapping_value(mapping_value(plugins, plugin), option)
    if isinstance(node, yaml.SequenceNode):
        return [value for value in (_scalar(n) for n in node.value) if value is not None]
    return node.value if isinstance(node, yaml.ScalarNode) else None


def _plugin_option(plugins, plugin: str, option: str) -> str | None:
    for item in plugins.value if isinstance(plugins, (yaml.SequenceNode, yaml.MappingNode)) else []:
        for part in item if isinstance(item, tuple) else (item,):
            if isinstance(part, yaml.MappingNode):
                settings = mapping_value(part, plugin)
                value = _scalar(mapping_value(settings, option))
                if value:
                    return value
    if isinstance(plugins, yaml.MappingNode):
        return _scalar(mapping_value(mapping_value(plugins, plugin), option))
    return None


META_NAMES = ("meta", "material/meta")  # Material's meta plugin: `.meta.yml` front matter defaults
BLOG_PAGES = "links to the pages the blog plugin generates (archive, categories, authors, posts' URLs) are not checked"


def extra_links(site: DocsSite, page: str, text: str) -> list[Link]:
    """A blog post's `links` front matter: pages the blog plugin links (paths from the docs folder; it stops the
    build when one is missing)."""
    blog = site.routing.get("blog")
    if blog is None or not mkdocs_blog.is_post(blog, page) or "links:" not in text:
        return []
    return [Link(line, "/" + path, LinkKind.FILE) for line, path in mkdocs_blog.post_links(text)]


def extra_anchors(site: DocsSite, text: str) -> set[str]:
    """Content tabs' ids, when `pymdownx.tabbed` names them (`slugify`)."""
    tabs = site.routing.get("tabs")
    return mkdocs_anchors.tab_anchors(text, tabs) if tabs is not None and "===" in text else set()


def page_problems(tree: Tree, site: DocsSite, page: str) -> list[tuple[int, str]]:
    """Front matter a blog post needs for the blog plugin to build it (none for other pages)."""
    blog = site.routing.get("blog")
    if blog is None or not mkdocs_blog.is_post(blog, page):
        return []
    front = tree.front_matter(page, site.page_mode(page))
    meta_file = site.routing.get("meta_file")
    if meta_file:
        front = mkdocs_blog.with_meta_files(tree.files, tree.text, site.docs_root, meta_file, page, front)
    return mkdocs_blog.post_problems(blog, tree.workspace, tree.text(page) or "", front)


class MkDocsRouter(Router):
    """MkDocs: links are file paths relative to the page; without `.md` they may also be URLs relative to the
    page's URL (`use_directory_urls`); root-relative links start at the docs folder; a folder's README.md is its
    index."""

    page_suffixes = (".md",)

    def route(self, page: str, path: str) -> Outcome:
        root = self.site.docs_root
        if path.startswith("/"):
            first = join(root, path.lstrip("/").split("/", 1)[0])
            if first is None or not (self.tree.is_folder(first) or self.land(first)):
                return unknown(OTHER_ROUTES)  # served by the theme or another part of the site, not by a page here
            return self.landing(join(root, path.lstrip("/")), path)
        outcome = self.landing(join(posixpath.dirname(page), path), path)
        if outcome.ok or path.lower().endswith(SUFFIXES) or not self.site.routing.get("use_directory_urls", True):
            return outcome
        stem = posixpath.splitext(page)[0]
        if posixpath.basename(stem).lower() in ("index", "readme"):
            return outcome
        url_relative = self.landing(join(stem, path), path)  # the page's URL is its own folder
        return url_relative if url_relative.ok else outcome

    def landing(self, resolved: str | None, written: str) -> Outcome:
        outcome = super().landing(resolved, written)
        if outcome.verdict is Verdict.BROKEN and resolved is not None and self._redirect_source(resolved):
            return Outcome(Verdict.OK)  # the redirects plugin writes a page there that sends readers on
        blog = self.site.routing.get("blog")
        if (
            outcome.verdict is Verdict.BROKEN
            and resolved is not None
            and blog is not None
            and not resolved.lower().endswith(SUFFIXES)
            and mkdocs_blog.is_generated(blog, resolved)
        ):
            return unknown(BLOG_PAGES)  # an archive, category, author or post URL the blog plugin generates
        return outcome

    def _redirect_source(self, resolved: str) -> bool:
        sources = self.site.routing.get("redirects")
        if not sources:
            return False
        root = self.site.docs_root
        relative = resolved[len(root) + 1 :] if root and resolved.startswith(root + "/") else resolved
        relative = relative.strip("/")
        if relative.lower().endswith(SUFFIXES):
            return relative in sources
        # A URL-style link (`old/` with use_directory_urls): the page `old.md` or `old/index.md`.
        return any(f"{relative}{name}" in sources for name in (".md", "/index.md", "/README.md"))

    def redirect_place(self) -> str | None:
        if self.site.routing.get("redirects") is None:
            return None
        return f"the `redirect_maps` of the redirects plugin in {self.site.config_path}"

    def page_address(self, page: str) -> str | None:
        root = self.site.docs_root
        return page[len(root) + 1 :] if root and page.startswith(root + "/") else page

    def redirected(self, address: str) -> bool:
        return address in (self.site.routing.get("redirects") or ())

    def land(self, resolved: str) -> str | None:
        found = super().land(resolved)
        if found is None:  # the i18n plugin serves x.en.md for x.md, and the default's page for a missing translation
            fallback = mkdocs_i18n.fallback_path(
                self.site.routing.get("i18n"), self.site.docs_root, resolved
            ) or mkdocs_i18n.build_fallback(self.site.routing.get("builds"), resolved)
            return super().land(fallback) if fallback else None
        return found

    def names(self, path: str) -> set[str]:
        found = super().names(path)
        stem = posixpath.splitext(posixpath.basename(path))[0]
        return found | {mkdocs_i18n.unsuffixed_stem(self.site.routing.get("i18n"), stem).lower()}


def router(site: DocsSite, tree: Tree) -> Router:
    """The router for links on this MkDocs site."""
    return MkDocsRouter(site, tree)


def _compose(text: str):
    try:
        return compose_yaml(text)
    except (YAMLError, Uncheckable):
        return None  # check_docs reports an unreadable config when it reads the navigation


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
    # MkDocs takes gitignore-style lines relative to docs_dir.
    return ignore_globs(_scalar(node) or "", root)


def suggest_entry(tree: Tree, site: DocsSite, page: str) -> str:
    """How to list `page` in the navigation: the nearest literate-nav file above it, else `nav:`."""
    files = tree.files
    literate = site.routing.get("literate")
    folder = posixpath.dirname(page)
    while literate and in_folder(folder, site.docs_root):
        nav_file = child_path(folder, literate)
        if nav_file in files:
            return f"add `- [Title]({posixpath.relpath(page, folder)})` to the list in {nav_file}"
        if folder == site.docs_root:
            break
        folder = posixpath.dirname(folder)
    if site.routing.get("awesome") and not site.nav_files:
        return _awesome_suggestion(site, page, files)
    ref = page[len(site.docs_root) + 1 :] if site.docs_root else page
    return f"add `- Title: {ref}` to `nav:` in {site.config_path}"


def _awesome_suggestion(site: DocsSite, page: str, files: set[str]) -> str:
    # The nearest `.pages` above the page must name it (or the folder on the way to it), and every folder above
    # that one must be named in its parent's: which of them is missing is not known without reading them.
    name, folder = posixpath.basename(page), posixpath.dirname(page)
    while child_path(folder, ".pages") not in files and folder != site.docs_root and in_folder(folder, site.docs_root):
        name, folder = posixpath.basename(folder), posixpath.dirname(folder)
    pages_file = child_path(folder, ".pages")
    relative = folder[len(site.docs_root) :].strip("/") if site.docs_root else folder
    above = f", and each folder of `{relative}` in its parent's `.pages`" if relative else ""
    if pages_file not in files:
        return f"add a `.pages` file in {folder or 'the repository root'} whose `nav:` names `{name}` or `...`"
    return f"name `{name}` (or `...`) in the `nav:` of {pages_file}{above}"
