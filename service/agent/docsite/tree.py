"""One state of the repository as the docs check reads it: its files, folders and parsed pages."""

import hashlib
import posixpath
import threading
from collections import OrderedDict
from functools import cached_property

from service.agent.docsite import page_store
from service.agent.docsite.frontmatter import FrontMatterError, parse_front_matter
from service.agent.docsite.pages import Mode, ParsedPage, parse_page
from service.agent.docsite.site import read_text

CACHE_ENTRIES = 20_000  # parsed pages kept per process, least recently used dropped first


class ParseCache:
    """Parsed pages by (content id, mode): a blob is parsed once however many runs and checks read it."""

    def __init__(self, max_entries: int = CACHE_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, Mode], ParsedPage] = OrderedDict()
        self._lock = threading.Lock()
        self.misses = 0

    def get(self, key: tuple[str, Mode]) -> ParsedPage | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple[str, Mode], page: ParsedPage) -> None:
        with self._lock:
            self.misses += 1
            self._entries[key] = page
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)


PAGE_CACHE = ParseCache()


class Tree:
    """The workspace (or its start view) with file and folder sets and cached page parses."""

    def __init__(self, workspace, cache: ParseCache = PAGE_CACHE) -> None:
        self.workspace = workspace
        self.cache = cache
        # A Tree is one state of the repository: each path's text, and so its cache key, is read once and kept.
        self._texts: dict[str, str | None] = {}
        self._keys: dict[str, tuple[str | None, bool]] = {}  # path -> (cache key, whether it is the blob id)

    @cached_property
    def files(self) -> set[str]:
        return set(self.workspace.list_files())

    @cached_property
    def folders(self) -> set[str]:
        found = {""}
        for path in self.files:
            folder = posixpath.dirname(path)
            while folder not in found:
                found.add(folder)
                folder = posixpath.dirname(folder)
        return found

    def is_file(self, path: str) -> bool:
        return path in self.files

    def is_folder(self, path: str) -> bool:
        return path in self.folders

    def text(self, path: str) -> str | None:
        """The file's text, or None when it is absent or not a regular file."""
        if path not in self._texts:
            self._texts[path] = read_text(self.workspace, path) if path in self.files else None
        return self._texts[path]

    def parsed(self, path: str, mode: Mode) -> bool:
        """Whether the page's parse is cached."""
        key, from_blob = self._keyed(path)
        return from_blob and key is not None and self.cache.get((key, mode)) is not None

    def front_matter(self, path: str, mode: Mode) -> dict:
        """The page's front matter ({} when it has none or it does not parse), without parsing the whole page
        unless that parse is cached already."""
        key = self._key(path)
        if key is None:
            return {}
        parsed = self.cache.get((key, mode))
        if parsed is not None:
            return parsed.front_matter
        found = self.cache.get((key, Mode.FRONT_MATTER))
        if found is None:
            try:
                front = parse_front_matter(self.text(path) or "")
            except FrontMatterError:
                front = {}
            found = ParsedPage(front_matter=front)
            self.cache.put((key, Mode.FRONT_MATTER), found)
        return found.front_matter

    def _key(self, path: str) -> str | None:
        """The page's cache key: its blob id while unchanged, else a hash of its text (None when it is absent)."""
        return self._keyed(path)[0]

    def _keyed(self, path: str) -> tuple[str | None, bool]:
        """The page's cache key and whether that key is its blob id, worked out once per path."""
        if path not in self._keys:
            blob = self.workspace.blob_id(path) if path in self.files else None
            if blob is not None:
                self._keys[path] = (blob, True)
            else:
                text = self.text(path)
                digest = (
                    None
                    if text is None
                    else "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
                )
                self._keys[path] = (digest, False)
        return self._keys[path]

    def page(self, path: str, mode: Mode) -> ParsedPage:
        """The parsed page at `path` (an empty page when it is absent), from the cache when its blob was parsed."""
        blob, from_blob = self._keyed(path)
        if blob is None:
            return ParsedPage()
        key = (blob, mode)
        found = self.cache.get(key)
        if found is None:
            # Kept beside the repository by blob id only: a text's digest names an edit of this run alone.
            git_dir = getattr(self.workspace, "git_dir", None) if from_blob else None
            found = page_store.load(git_dir, blob, mode) if git_dir else None
            if found is None:
                found = parse_page(self.text(path) or "", mode)
                if git_dir:
                    page_store.keep(git_dir, blob, mode, found)
            self.cache.put(key, found)
        return found
