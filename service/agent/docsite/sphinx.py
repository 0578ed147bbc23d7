"""Sphinx sites: `conf.py`, its source folder and the `toctree` directives that make the navigation."""

import fnmatch
import posixpath
import re

from service.agent.docsite.limits import MAX_PAGE_BYTES
from service.agent.docsite.pages import Link, LinkKind, Mode
from service.agent.docsite.routing import SKIP, Outcome, Router, Verdict, is_external, join, unknown
from service.agent.docsite.site import DocsSite, NavEntry, NavError, Navigation, read_text
from service.agent.docsite.sphinx_conf import read_conf
from service.agent.docsite.tree import Tree
from service.workspace.globs import compile_glob

CONFIG_NAMES = ("conf.py",)
CONFIG_TAILS: tuple[str, ...] = ()
# Suffixes a toctree entry may stand for (nbsphinx and myst-nb add notebooks).
DOCUMENT_SUFFIXES = (".rst", ".md", ".txt", ".ipynb")
_ROOT_DOC = re.compile(r"^(?:root_doc|master_doc)\s*=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
_EXCLUDES = re.compile(r"^exclude_patterns\s*=\s*\[(.*?)\]", re.MULTILINE | re.DOTALL)
_STRING = re.compile(r"['\"]([^'\"]+)['\"]")
_TITLED = re.compile(r"^(.*?)\s*<([^<>]+)>$")
# `.. toctree::` as docutils reads a directive (name in any case; tabs and form feeds are spaces to it).
_TOCTREE_DIRECTIVE = re.compile(r"\.\.[ \t\v\f]+toctree[ \t\v\f]*::", re.IGNORECASE)
MAX_ORDERED = 2_000  # documents put in toctree order for the overview, which shows far fewer
MAX_ORDER_STEPS = 500_000  # glob matches tried and entries followed while ordering them


def detect(workspace, config_path: str, files: set[str]) -> DocsSite | None:
    """The Sphinx site whose `conf.py` is `config_path`, or None when that file is not a Sphinx config."""
    text = read_text(workspace, config_path) or ""
    source = posixpath.dirname(config_path)
    prefix = f"{source}/" if source else ""
    if not any(word in text for word in ("sphinx", "extensions", "html_theme")) and not any(
        f"{prefix}index{s}" in files for s in (".rst", ".md")
    ):
        return None
    suffixes = (".rst", ".md") if "myst" in text else (".rst",)
    root_doc_match = _ROOT_DOC.search(text)
    root_doc = root_doc_match.group(1) if root_doc_match else "index"
    root_page = next((f"{prefix}{root_doc}{s}" for s in suffixes if f"{prefix}{root_doc}{s}" in files), None)
    excludes = _EXCLUDES.search(text)
    ignored = [f"/{prefix}{pattern}" for pattern in _STRING.findall(excludes.group(1))] if excludes else []
    start = f", starting at {root_page}" if root_page else ""
    hint = (
        f"Navigation is the `toctree` directives in the pages{start}: entries are document names relative to "
        "the page that holds the toctree, without the extension. New pages must be added to the toctree of "
        "the page above them (or marked `:orphan:`)."
    )
    hint += (
        " Cross-reference documents with {doc}`path` (MyST) or :doc:`path` (reST), relative to the page, and "
        "labels with {ref}`label` / :ref:`label`."
    )
    conf = read_conf(text)
    routing = {
        "autosectionlabel": "autosectionlabel" in text,
        "generated_options": any(name in text for name in OPTION_EXTENSIONS),
        "intersphinx": "intersphinx" in text,
        "inventories": conf.inventories,
        "redirects": conf.redirects if "reredirects" in text else None,
        "heading_anchors": conf.heading_anchors,
        "default_role": conf.default_role,
        "shared_names": conf.shared_names,
        "additional_pages": conf.additional_pages,
    }
    return DocsSite(
        "sphinx",
        config_path,
        source,
        nav_files=[root_page] if root_page else [],
        nav_hint=hint,
        page_suffixes=suffixes,
        ignored=(f"/{prefix}_build", *ignored),
        unlisted_ok=(f"/{prefix}{root_doc}.*",),
        explicit_nav=True,
        unlisted_keys=("orphan",),
        routing=routing,
    )


def navigation(tree: Tree, site: DocsSite) -> Navigation:
    """Every toctree entry of the site's pages (parsed with docutils or markdown-it), with the documents they
    stand for."""
    files = tree.files
    result = Navigation()
    for page in sorted(p for p in files if site.is_page(p)):
        mode = site.page_mode(page)
        if not _may_hold_toctree(tree, page, mode):
            continue
        parsed = tree.page(page, mode)
        if parsed.uncheckable:
            result.unreadable.append(
                NavError(page, 1, f"{page} is {parsed.uncheckable}, so its toctrees could not be read")
            )
        for entry in parsed.toctrees:
            _add_entry(result, site, files, page, entry.line, entry.entry, entry.glob)
    return result


def _may_hold_toctree(tree: Tree, page: str, mode: Mode) -> bool:
    """Whether the page's parse may hold toctree entries: it is parsed already, or its text names a toctree and,
    for reST, writes the directive (a page that only mentions toctrees, as Sphinx's own docs do, is not parsed)
    or is too large to parse (reported as unreadable, as it always was)."""
    if tree.parsed(page, mode):
        return True
    text = tree.text(page) or ""
    return "toctree" in text and (
        mode is not Mode.RST or len(text) > MAX_PAGE_BYTES or _TOCTREE_DIRECTIVE.search(text) is not None
    )


def _add_entry(result: Navigation, site: DocsSite, files: set[str], page: str, line: int, raw: str, glob: bool) -> None:
    name, is_glob = _entry_name(site, page, raw, glob)
    if name is None:
        return
    if is_glob:
        result.patterns.append("/" + name)
        return
    targets = tuple(name + s for s in DOCUMENT_SUFFIXES)
    result.entries.append(NavEntry(page, line, raw, targets, any(t in files for t in targets)))


def _entry_name(site: DocsSite, page: str, raw: str, glob: bool) -> tuple[str | None, bool]:
    """The document name (a repository path without suffix) a toctree entry of `page` stands for, and whether
    it is a glob pattern; None for `self`, URLs and names outside the repository."""
    titled = _TITLED.match(raw)
    target = titled.group(2).strip() if titled else raw
    if target == "self" or is_external(target):
        return None, False
    folder = site.docs_root if target.startswith("/") else posixpath.dirname(page)
    name = posixpath.normpath(posixpath.join(folder, target.lstrip("/")))
    if name == ".." or name.startswith("../"):
        return None, False
    stem, suffix = posixpath.splitext(name)
    return (stem if suffix in DOCUMENT_SUFFIXES else name), glob and any(c in target for c in "*?[")


def navigation_order(tree: Tree, site: DocsSite) -> list[str]:
    """The site's documents in the order Sphinx's table of contents shows them: the root document, then each
    toctree entry depth-first (a glob entry's matches sorted by name), each document once. Bounded: at most
    MAX_ORDERED documents and MAX_ORDER_STEPS steps, and only pages that mention a toctree are parsed; past a
    bound the order found so far is returned."""
    if not site.nav_files:
        return []
    walk = _TocWalk(tree, site)
    order: list[str] = []
    seen: set[str] = set()
    pending = [site.nav_files[0]]
    while pending and len(order) < MAX_ORDERED and walk.steps < MAX_ORDER_STEPS:
        page = pending.pop()
        if page in seen:
            continue
        seen.add(page)
        order.append(page)
        # Pushed again when already pending: depth-first, a document sits where it is first reached.
        pending += reversed([child for child in walk.children(page) if child not in seen])
    return order


class _TocWalk:
    """The toctree entries of pages as pages, counting the steps they take (glob matches tried, entries read)."""

    def __init__(self, tree: Tree, site: DocsSite) -> None:
        self.tree = tree
        self.site = site
        self.steps = 0
        # By name, as Sphinx sorts a glob's matches; of two files with one name, the alphabetically first.
        found = {
            posixpath.splitext(path)[0]: path for path in sorted(self.tree.files, reverse=True) if site.is_page(path)
        }
        self.stems = dict(sorted(found.items()))

    def children(self, page: str) -> list[str]:
        """The pages the toctrees of `page` list, in order."""
        mode = self.site.page_mode(page)
        if not _may_hold_toctree(self.tree, page, mode):
            return []  # most pages hold none: no parse needed
        children = []
        for entry in self.tree.page(page, mode).toctrees:
            name, is_glob = _entry_name(self.site, page, entry.entry, entry.glob)
            if name is None or self.steps >= MAX_ORDER_STEPS:
                continue
            if is_glob:
                pattern = compile_glob("/" + name)
                self.steps += len(self.stems)
                children += [path for stem, path in self.stems.items() if pattern.fullmatch(stem) and path != page]
            elif name in self.stems:
                children.append(self.stems[name])
        self.steps += len(children)
        return children


def suggest_entry(tree: Tree, site: DocsSite, page: str) -> str:
    """How to list `page` in the navigation."""
    files = tree.files
    folder = posixpath.dirname(page)
    indexes = [f"{folder}/index{s}" if folder else f"index{s}" for s in site.page_suffixes]
    holder = next((p for p in indexes if p in files and p != page), site.nav_files[0] if site.nav_files else None)
    if holder is None:
        return "add it to the toctree of the page above it"
    name = posixpath.relpath(posixpath.splitext(page)[0], posixpath.dirname(holder) or ".")
    return f"add `{name}` to the toctree in {holder}"


BUILTIN_LABELS = frozenset({"genindex", "modindex", "py-modindex", "search"})
# Extensions that make a MyST link target a file rather than a cross-reference name.
FILE_EXTENSIONS = frozenset(
    "md rst txt html htm ipynb png jpg jpeg gif svg webp ico pdf zip gz tar py json yaml yml "
    "toml csv mp4 webm css js xml ini cfg sh".split()
)

# `.. option::` or MyST's `{option}` (and `cmdoption`, `std:` forms).
_OPTION_DIRECTIVE = re.compile(r"option::|option\}")
# The images a `.. image:: name.*` may pick, in the HTML and LaTeX builders' order of preference.
WILDCARD_IMAGES = ("svg", "png", "gif", "jpg", "jpeg", "webp", "pdf")


class SphinxRouter(Router):
    """Sphinx: documents by name relative to the page (or to the source folder with a leading /), labels from
    any page of the project, files relative to the page; `.html` links stand for documents."""

    @property
    def page_suffixes(self):
        return self.site.page_suffixes

    def resolve(self, page: str, link: Link) -> Outcome:
        target = link.target.strip()
        if link.kind is LinkKind.URL and target.startswith("inv:"):
            # MyST's `inv:name:domain:role#target` (or `inv:name#target`) names an intersphinx inventory.
            name = re.split(r"[:#]", target[len("inv:") :], maxsplit=1)[0]
            return SKIP if name in ("", "*") else self._external(name)
        return super().resolve(page, link)

    def file(self, page: str, path: str) -> Outcome:
        if path.endswith(".*"):
            # Sphinx's image wildcard: `name.*` is whichever `name.<ext>` the builder can show.
            for extension in WILDCARD_IMAGES:
                outcome = super().file(page, f"{path[:-2]}.{extension}")
                if outcome.ok or outcome.verdict is Verdict.OUTSIDE:
                    return outcome
        return super().file(page, path)

    def route(self, page: str, path: str) -> Outcome:
        if path.lower().endswith(".html"):
            outcome = self._document(page, path[: -len(".html")])
            if not outcome.ok and self._redirect_from(page, path[: -len(".html")]):
                return Outcome(Verdict.OK)  # sphinx-reredirects writes an HTML page there
            if not outcome.ok and self._additional_page(page, path[: -len(".html")]):
                return Outcome(Verdict.OK)
            return outcome
        outcome = (
            super().route(page, path)
            if not path.startswith("/")
            else self.landing(join(self.site.docs_root, path.lstrip("/")), path)
        )
        extension = posixpath.splitext(path)[1][1:].lower()
        if (
            outcome.verdict is Verdict.BROKEN
            and page.lower().endswith(".md")
            and "/" not in path
            and extension not in FILE_EXTENSIONS
        ):
            # MyST reads `[text](name)` that is no file as a cross-reference: a label, or an object of a domain
            # (`attrs.frozen`), which only the build knows; names that can only be labels are judged.
            if path.lower() in BUILTIN_LABELS:
                return SKIP
            label = self._label_page(path.lower())
            if label is not None:
                return Outcome(Verdict.OK, label)
            if "-" not in path or "." in path:
                return SKIP
            return Outcome(Verdict.BROKEN, reason=f"no file {path}, and no page defines the label `{path}`")
        return outcome

    def reference(self, page: str, link: Link) -> Outcome:
        outcome = self._reference(page, link)
        if (
            outcome.verdict is Verdict.BROKEN
            and link.kind is LinkKind.REF
            and self.site.routing.get("default_role") == "any"
            and self._document(page, link.target).ok
        ):
            return self._document(page, link.target)  # `any` also finds documents
        return outcome

    def _reference(self, page: str, link: Link) -> Outcome:
        if link.kind is LinkKind.OPTION:
            return self._option(link)
        inventory = self._inventory(link.target)
        if link.kind is LinkKind.DOC:
            if inventory is not None:
                return self._external(inventory)
            return self._document(page, link.target)
        label = link.target.lower()
        if label in BUILTIN_LABELS or self.site.routing.get("autosectionlabel"):
            return SKIP  # section titles are labels
        defined_in = self._label_page(label)
        if defined_in is not None:
            return Outcome(Verdict.OK, defined_in)
        if inventory is not None:
            return self._external(inventory)
        return Outcome(Verdict.BROKEN, reason="no page defines it with `.. _label:` or `(label)=`")

    def _option(self, link: Link) -> Outcome:
        keys = option_keys(link.program, link.target)
        for program, name in keys:
            defined_in = self._option_page(program, name)
            if defined_in is not None:
                return Outcome(Verdict.OK, defined_in)
        if self.site.routing.get("generated_options"):
            return unknown(GENERATED_OPTIONS)
        where = f"; the page's current program is `{link.program}`" if link.program else ""
        return Outcome(Verdict.BROKEN, reason=f"no `.. option::` defines `{link.target}`{where}")

    def _option_page(self, program: str, name: str) -> str | None:
        """The first page (in path order) with `.. option::` for `name` of `program`; only pages whose text holds
        the option string and an option directive are parsed, and of reST pages only those whose option
        signatures hold it."""
        if not hasattr(self, "_option_pages"):
            self._option_pages: dict[tuple[str, str], str | None] = {}
            self._option_holders = sorted(
                p for p in self.tree.files if self.site.is_page(p) and _OPTION_DIRECTIVE.search(self.tree.text(p) or "")
            )
            self._signatures: dict[str, str] = {}
        key = (program, name)
        if key not in self._option_pages:
            self._option_pages[key] = next(
                (
                    p
                    for p in self._option_holders
                    if self._may_define_option(p, name) and key in self.tree.page(p, self.site.page_mode(p)).options
                ),
                None,
            )
        return self._option_pages[key]

    def _may_define_option(self, path: str, name: str) -> bool:
        if name not in (self.tree.text(path) or ""):
            return False
        if self.site.page_mode(path) is not Mode.RST or self.tree.parsed(path, Mode.RST):
            return True
        from service.agent.docsite.rst import option_signatures  # docutils only where reST is read

        if path not in self._signatures:
            self._signatures[path] = option_signatures(self.tree.text(path) or "")
        return name in self._signatures[path]

    def _inventory(self, target: str) -> str | None:
        """The `name` of a target written `name:rest`, the way intersphinx names another project."""
        prefix, colon, rest = target.partition(":")
        return prefix if colon and prefix and rest and " " not in prefix else None

    def _external(self, inventory: str) -> Outcome:
        known = self.site.routing.get("inventories", None)
        if known is None or inventory in known:
            return SKIP  # another project's, by intersphinx (or conf.py computes its inventories)
        names = ", ".join(sorted(known)) or "none"
        return Outcome(
            Verdict.BROKEN,
            reason=f"`{inventory}` names no inventory in conf.py's `intersphinx_mapping` (it has: {names})",
        )

    def _docname(self, page: str, name: str) -> str | None:
        folder = self.site.docs_root if name.startswith("/") else posixpath.dirname(page)
        resolved = join(folder, name.lstrip("/"))
        root = self.site.docs_root
        if resolved is None or (root and not resolved.startswith(root + "/")):
            return None
        return resolved[len(root) + 1 :] if root else resolved

    def _additional_page(self, page: str, name: str) -> bool:
        # A page `html_additional_pages` renders from a template; any may be when conf.py computes them.
        pages = self.site.routing.get("additional_pages", frozenset())
        return pages is None or self._docname(page, name) in pages

    def _redirect_from(self, page: str, name: str) -> bool:
        docname = self._docname(page, name)
        return docname is not None and self.redirected(docname)

    def redirect_place(self) -> str | None:
        return None if self.site.routing.get("redirects") is None else f"`redirects` in {self.site.config_path}"

    def page_address(self, page: str) -> str | None:
        return posixpath.splitext(page[len(self.site.docs_root) + 1 :] if self.site.docs_root else page)[0]

    def redirected(self, address: str) -> bool:
        return any(fnmatch.fnmatchcase(address, source) for source in self.site.routing.get("redirects") or ())

    def _document(self, page: str, name: str) -> Outcome:
        folder = self.site.docs_root if name.startswith("/") else posixpath.dirname(page)
        resolved = join(folder, name.lstrip("/"))
        if resolved is None:
            return Outcome(Verdict.OUTSIDE)
        stem, suffix = posixpath.splitext(resolved)
        resolved = stem if suffix in DOCUMENT_SUFFIXES else resolved
        for candidate in (resolved + s for s in DOCUMENT_SUFFIXES):
            if self.tree.is_file(candidate):
                return Outcome(Verdict.OK, candidate)
        return Outcome(Verdict.BROKEN, reason=f"no document {resolved}")

    def _label_page(self, label: str) -> str | None:
        """The first page (in path order) that defines `label`. Only pages whose text holds every word of the label
        are parsed for it, and of reST pages only those whose target names could spell it: a cold check of one
        :ref: on a large site must not parse every page."""
        if not hasattr(self, "_label_pages"):
            self._label_pages: dict[str, str | None] = {}
            self._lowered: dict[str, str] = {}
            self._names_texts: dict[str, str] = {}
            self._pages = sorted(p for p in self.tree.files if self.site.is_page(p))
        if label not in self._label_pages:
            words = _WORDS.findall(label)
            self._label_pages[label] = next(
                (
                    path
                    for path in self._pages
                    if self._may_define(path, label, words)
                    and label in self.tree.page(path, self.site.page_mode(path)).labels
                ),
                None,
            )
        return self._label_pages[label]

    def _may_define(self, path: str, label: str, words: list[str]) -> bool:
        if path not in self._lowered:
            self._lowered[path] = (self.tree.text(path) or "").lower()
        if not all(word in self._lowered[path] for word in words):
            return False
        if self.site.page_mode(path) is not Mode.RST or self.tree.parsed(path, Mode.RST):
            return True
        from service.agent.docsite.rst import may_define, names_text  # docutils only where reST is read

        if path not in self._names_texts:
            self._names_texts[path] = names_text(self.tree.text(path) or "")
        return may_define(self._names_texts[path], label)


_WORDS = re.compile(r"[^\W_]+")  # a label's words: escapes and punctuation in its definition do not hide them
GENERATED_OPTIONS = (
    "`:option:` references to options that an extension generates (autoprogram, sphinx-click, "
    "sphinx-argparse) are not checked"
)
OPTION_EXTENSIONS = ("autoprogram", "sphinx_click", "sphinxarg")


def option_keys(program: str, target: str) -> list[tuple[str, str]]:
    """The (program, option) pairs an :option: reference may name, in the order Sphinx's std domain tries them:
    as written under the page's current program, without a value (`--level=3`, `--color[=WHEN]`, `-o out`), then
    with leading words as the program (`sphinx-build -b`, `git commit --amend`)."""
    target = target.strip()
    keys = [(program, target)]
    keys += [(program, target.partition(needle)[0]) for needle in ("=", "[=", " ") if needle in target]
    commands: list[str] = []
    rest = target
    while re.search(r"\s", rest):
        command, rest = re.split(r"\s+", rest, maxsplit=1)
        commands.append(command)
        keys.append(("-".join(commands), rest))
    return list(dict.fromkeys(keys))


def default_role_links(site: DocsSite, interpreted: list[Link], every: bool = False) -> list[Link]:
    """reST `text` written in conf.py's `default_role`, as the cross-references Sphinx resolves (and warns about):
    `doc` and `ref`; under `any`, only targets that cannot name a Python object (they hold `-` or `/`) unless
    `every` (for links that resolved at the start, whose loss is then known)."""
    role = (site.routing.get("default_role") or "").removeprefix("std:")
    kinds = {"doc": LinkKind.DOC, "ref": LinkKind.REF, "any": LinkKind.REF}
    if role not in kinds:
        return []
    found = []
    for link in interpreted:
        titled = _TITLED.match(link.target)
        target = (titled.group(2) if titled else link.target).strip().lstrip("~!")
        if role == "any" and (" " in target or not (every or any(c in target for c in "-/"))):
            continue
        found.append(Link(link.line, target, kinds[role]))
    return found


def router(site: DocsSite, tree: Tree) -> Router:
    """The router for links on this Sphinx site."""
    return SphinxRouter(site, tree)
