"""What a docs site looks like: its framework, where pages and navigation live, and its navigation entries."""

import posixpath
import re
from dataclasses import dataclass, field
from functools import cached_property

from service.agent.docsite.frontmatter import FrontMatterError, parse_front_matter
from service.agent.docsite.pages import Mode
from service.workspace.entries import WorkspaceError
from service.workspace.globs import compile_glob, matches

FRAMEWORK_NAMES = {
    "mintlify": "Mintlify",
    "mkdocs": "MkDocs",
    "docusaurus": "Docusaurus",
    "sphinx": "Sphinx",
    "starlight": "Astro Starlight",
    "markdown": "plain Markdown (no docs framework detected)",
    "vitepress": "VitePress",
    "fumadocs": "Fumadocs",
    "hugo": "Hugo",
    "nextra": "Nextra",
    "gitbook": "GitBook",
}
MDX_FRAMEWORKS = (
    "docusaurus",
    "mintlify",
    "starlight",
    "fumadocs",
    "nextra",
)  # their .md pages go through the MDX compiler too
# Repository files that sit beside pages but are not pages of the site.
NOT_PAGES = (
    "README.md",
    "CONTRIBUTING.md",
    "CHANGELOG.md",
    "CODE_OF_CONDUCT.md",
    "LICENSE.md",
    "SECURITY.md",
    "AGENTS.md",
    "CLAUDE.md",
)
SKIPPED_FOLDERS = ("node_modules", "vendor", "site-packages")
_SKIPPED = frozenset(SKIPPED_FOLDERS)


@dataclass
class DocsSite:
    """A repository's docs site as the agent should see it; `describe()` is the system prompt's paragraph."""

    framework: str  # a key of FRAMEWORK_NAMES: "mintlify", "mkdocs", …, or "markdown" when none is known
    config_path: str | None
    docs_root: str  # the folder that holds the pages, "" for the repository root
    nav_files: list[str] = field(default_factory=list)
    page_extensions: list[str] = field(default_factory=list)  # seen, most used first
    front_matter_keys: list[str] = field(default_factory=list)  # most used first, from a sample of pages
    page_count: int = 0
    nav_hint: str = ""  # how navigation works here and where new pages go, one or two sentences
    page_suffixes: tuple[str, ...] = (".md", ".mdx")  # what the framework renders as pages
    ignored: tuple[str, ...] = ()  # globs (repository paths) of files under docs_root that are not pages
    unlisted_ok: tuple[str, ...] = ()  # globs of pages that need no navigation entry
    explicit_nav: bool = False  # whether navigation lists pages, so a new page must be added to it
    unlisted_keys: tuple[str, ...] = ()  # front matter keys (or reST fields) that, when true, leave a page unlisted
    routing: dict = field(default_factory=dict)  # what the framework's router needs from the config
    languages: list["Language"] = field(default_factory=list)  # the default language first; [] when one language
    # Folders of older docs versions (Docusaurus `versioned_docs/version-x`): their files are pages of the site
    # too, but the overview and page counts describe the current docs only.
    versioned_roots: tuple[str, ...] = ()
    # Folders of further docs instances (Docusaurus `plugin-content-docs` with its own `path`): current pages too.
    extra_roots: tuple[str, ...] = ()
    # What identified the framework (a config file, a folder), and whether that is a guess rather than a config
    # the framework cannot run without: the overview tells the model how sure the check is.
    detected_from: str = ""
    guessed: bool = False

    def page_mode(self, path: str) -> Mode:
        """How a page at `path` is parsed on this site."""
        lower = path.lower()
        if lower.endswith(".rst"):
            return Mode.RST
        if lower.endswith(".mdx") or self.framework in MDX_FRAMEWORKS:
            return Mode.MDX
        return Mode.MYST if self.framework == "sphinx" else Mode.MARKDOWN

    def language_of(self, path: str) -> "Language | None":
        """The translation that holds `path` (None for the default language or a one-language site)."""
        return next((lang for lang in self.languages[1:] if lang.holds(path)), None)

    @cached_property
    def _versioned(self) -> frozenset[str]:
        return frozenset(self.versioned_roots)

    @cached_property
    def _roots(self) -> frozenset[str]:
        return frozenset(self.versioned_roots) | frozenset(self.extra_roots)

    def root_of(self, path: str) -> str | None:
        """The folder of pages that holds `path`: a versioned or further root, else the docs root; None when
        none does."""
        if self._roots:
            folder = posixpath.dirname(path)
            while folder:  # the deepest first, for a docs root that is the repository root
                if folder in self._roots:
                    return folder
                folder = posixpath.dirname(folder)
        return self.docs_root if _inside(path, self.docs_root) else None

    def is_versioned(self, path: str) -> bool:
        """Whether `path` lies in an older version's folder rather than the current docs."""
        root = self.root_of(path) if self.versioned_roots else None
        return root is not None and root in self._versioned

    def is_page(self, path: str) -> bool:
        """Whether `path` is a page of this site (by folder, extension and the framework's exclusions)."""
        # The suffix first: it turns most files of a large tree away before their folder is looked up.
        if not path.lower().endswith(self.page_suffixes):
            return False
        root = self.root_of(path)
        if root is None:
            return False
        relative = path[len(root) + 1 :] if root else path
        parts = relative.split("/")
        # Two whole-path tests rather than one per part: this runs for every file of a large tree.
        if "/." in "/" + relative or not _SKIPPED.isdisjoint(parts):
            return False
        if len(parts) == 1 and parts[0] in NOT_PAGES:
            return False
        return not (self.ignored and matches(list(self.ignored), path))

    def needs_nav_entry(self, path: str, text: str) -> bool:
        """Whether the page at `path` (with content `text`) must be listed in the navigation for readers to find it."""
        if not self.explicit_nav or not self.is_page(path):
            return False
        if self.unlisted_ok and matches(list(self.unlisted_ok), path):
            return False
        return not any(_flag_set(text, key) for key in self.unlisted_keys)

    def _identified(self) -> str:
        if self.framework == "markdown":
            return "Docs site: no known docs framework; guessed plain Markdown."
        evidence = self.detected_from or self.config_path
        how = "guessed" if self.guessed else "detected"
        return (
            f"Docs site: {FRAMEWORK_NAMES[self.framework]} ({how} from {evidence})."
            if evidence
            else f"Docs site: {FRAMEWORK_NAMES[self.framework]}."
        )

    def describe(self) -> str:
        """A short paragraph for the system prompt: framework, where pages and navigation live, conventions."""
        where = f"{self.docs_root}/" if self.docs_root else "the repository root"
        parts = [self._identified()]
        extensions = ", ".join(self.page_extensions[:3]) or ", ".join(self.page_suffixes)
        parts.append(f"Pages live under {where} ({self.page_count} pages; file types: {extensions}).")
        if self.front_matter_keys:
            parts.append("Front matter keys in use: " + ", ".join(self.front_matter_keys[:8]) + ".")
        if self.nav_hint:
            parts.append(self.nav_hint)
        if len(self.languages) > 1:
            others = ", ".join(f"{lang.code} ({lang.where})" for lang in self.languages[1:])
            parts.append(
                f"Default language: {self.languages[0].code}; translations: {others}. Edit the default "
                "language unless asked otherwise."
            )
        return " ".join(parts)


@dataclass(frozen=True)
class Language:
    """One language of a multi-language site and the folder its pages live in."""

    code: str
    folder: str
    # Set when translations sit beside the default pages as `page.<suffix>.md` (mkdocs-static-i18n's suffix
    # structure) rather than in a folder of their own.
    suffix: str = ""

    def holds(self, path: str) -> bool:
        """Whether `path` is one of this language's files."""
        if not _inside(path, self.folder):
            return False
        return not self.suffix or posixpath.splitext(posixpath.splitext(path)[0])[1] == f".{self.suffix}"

    @property
    def where(self) -> str:
        """Where this language's pages are, as the model reads it: `fr/` or `docs/**/*.fr.md`."""
        if self.suffix:
            return f"{self.folder}/**/*.{self.suffix}.*" if self.folder else f"**/*.{self.suffix}.*"
        return f"{self.folder}/" if self.folder else "the repository root"


@dataclass(frozen=True)
class NavEntry:
    """One page reference in a navigation file, with the page files it may stand for."""

    file: str
    line: int
    ref: str  # as written
    targets: tuple[str, ...]  # repository paths the entry may stand for, most likely first
    found: bool  # whether the page it names exists now


@dataclass(frozen=True)
class NavError:
    """A navigation file the framework could not read (invalid JSON or YAML)."""

    file: str
    line: int
    message: str


@dataclass
class Navigation:
    """The navigation of a site: its entries, and which pages it lists (by path or by folder/glob)."""

    entries: list[NavEntry] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)  # globs over page paths without extension, listed wholesale
    complete: bool = True  # False when part of it could not be read: no page is then reported as missing
    errors: list[NavError] = field(default_factory=list)
    # Entries that could not be read (a computed value) and were skipped; the rest still counts.
    unreadable: list[NavError] = field(default_factory=list)

    def lists(self, page: str) -> bool:
        """Whether the navigation lists `page`, by an entry or a folder/glob."""
        if any(page in entry.targets for entry in self.entries if entry.found):
            return True
        stem = posixpath.splitext(page)[0]
        return any(compile_glob(pattern).fullmatch(stem) for pattern in self.patterns)


def _flag_set(text: str, key: str) -> bool:
    # `key: true` in front matter, or a reST field list line `:key:` at the top of the page.
    if re.match(rf"\A(?:\s*:[\w-]+:.*\n)*\s*:{re.escape(key)}:", text):
        return True
    try:
        value = parse_front_matter(text).get(key)
    except FrontMatterError:
        return False
    return value is True or str(value).lower() in ("true", "yes")


def _inside(path: str, folder: str) -> bool:
    return not folder or path.startswith(folder + "/")


def in_folder(path: str, folder: str) -> bool:
    """Whether `path` is `folder` itself or under it (every path is under the root, "")."""
    return not folder or path == folder or path.startswith(folder + "/")


def child_path(folder: str, name: str) -> str:
    """`name` inside `folder` ("" for the root), as is: not normalised."""
    return f"{folder}/{name}" if folder else name


def normal_join(folder: str, path: str) -> str:
    """`path` joined to `folder` and normalised; "" for the root (unlike `routing.join`, a path that leaves the
    repository is returned as it normalises, starting with `..`)."""
    joined = posixpath.normpath(posixpath.join(folder, path))
    return "" if joined == "." else joined


def ignore_globs(text: str, root: str) -> tuple[str, ...]:
    """gitignore-style lines relative to `root` (`.mintignore`, MkDocs `exclude_docs`) as repository globs for
    `matches`; a pattern excludes what is under it too. Negations (`!`) are not followed."""
    prefix = f"/{root}" if root else ""
    globs = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        anchored = line.startswith("/") or "/" in line.rstrip("/")
        pattern = line.strip("/")
        globs.append(f"{prefix}/{pattern}" if anchored else f"{prefix}/**/{pattern}")
        globs.append(globs[-1] + "/**")
    return tuple(globs)


def read_text(workspace, path: str) -> str | None:
    """The text of the regular file at `path`, or None when it is absent, a symlink or a submodule."""
    try:
        return workspace.read(path).decode("utf-8", "replace")
    except (WorkspaceError, ValueError):
        return None


def page_targets(folder: str, ref: str, suffixes: tuple[str, ...]) -> tuple[str, ...]:
    """The files a navigation reference to `ref` (relative to `folder`) may stand for; () outside the repository."""
    path = posixpath.normpath(posixpath.join(folder, ref.strip("/")))
    if path == ".." or path.startswith("../"):
        return ()
    path = "" if path == "." else path
    if path.lower().endswith(suffixes):
        return (path,)
    return tuple(path + suffix for suffix in suffixes) + tuple(
        posixpath.join(path, "index" + suffix) for suffix in suffixes
    )
