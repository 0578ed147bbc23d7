"""A commit's tree plus an in-memory overlay of writes, moves and deletes; nothing is checked out."""

import copy
import heapq
import io
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from service.workspace.catfile import CatFile, ObjectTooLarge, stream_blobs
from service.workspace.entries import (
    EntryKind,
    NotARegularFile,
    PathExists,
    PathNotFound,
    SearchMatch,
    WorkspaceError,
)
from service.workspace.git import Git, GitError
from service.workspace.globs import matches as glob_matches
from service.workspace.listings import MAX_DERIVED_CHANGES, TreeListing, load_listing
from service.workspace.pathruns import starting_with
from service.workspace.proc import popen
from service.workspace.textsearch import compile_pattern, matching_lines
from service.workspace.trees import TreeChange, diff_trees, object_id, parse_tree

_TREE, _SYMLINK, _GITLINK = 0o040000, 0o120000, 0o160000
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_LINK_TARGET = 4096  # PATH_MAX: a longer symlink "target" is not a path, just bytes to keep out of memory
_ALL_READ = "\0all"  # noted by a recording view that searched, i.e. read every file (no path holds a NUL)
BINARY_PROBE_BYTES = 8000  # git's own heuristic: a NUL byte in the first 8000 bytes means binary


class FileTooLarge(WorkspaceError):
    """A file past the workspace's size limit: it can be read in line ranges, never loaded whole or edited."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(
            f"{path} has {size:,} bytes, more than the {limit:,}-byte limit for files Copydesk loads "
            "whole; it cannot be edited, moved or searched (read_file still reads line ranges)"
        )
        self.path, self.size, self.limit = path, size, limit


def is_binary(head: bytes) -> bool:
    """Whether content starting with `head` is binary, by git's heuristic."""
    return b"\0" in head[:BINARY_PROBE_BYTES]


def kind_of_mode(mode: int) -> EntryKind:
    """The entry kind of a git tree mode."""
    if mode == _TREE:
        return EntryKind.DIRECTORY
    if mode == _SYMLINK:
        return EntryKind.SYMLINK
    if mode == _GITLINK:
        return EntryKind.SUBMODULE
    return EntryKind.EXECUTABLE if mode & 0o111 else EntryKind.FILE


def check_path(path: str) -> None:
    """Raise ValueError unless `path` is a normalised repository-relative POSIX path (the sandbox's job)."""
    parts = path.split("/")
    if not path or path.startswith("/") or "\0" in path or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a normalised repository path: {path!r}")


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


class Workspace:
    """The tree of `start_commit` with the agent's changes held in memory; use as a context manager."""

    def __init__(
        self, git: Git, git_dir: Path | str, start_commit: str, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    ) -> None:
        self.git = git
        self.git_dir = git_dir
        self.start_commit = start_commit
        self.max_file_bytes = max_file_bytes
        self._object_format = "sha256" if len(start_commit) == 64 else "sha1"
        self._cat = CatFile(git, git_dir)
        self._owns_cat = True  # False for a start_view, which borrows its workspace's process
        self._overlay: dict[str, bytes | None] = {}  # path -> new content, or None for deleted
        self._trees: dict[str, dict[str, tuple[int, str]]] = {}  # tree id -> name -> (mode, id)
        self._root: str | None = None
        self._listing: TreeListing | None = None  # every non-tree entry of the start tree
        # commit -> listing, shared with every view, so one `ls-tree` serves them all
        self._listings: dict[str, TreeListing] = {}
        # Paths whose content a recording view handed out (None: not recording); see `recording_view`.
        self._reads: set[str] | None = None

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the background `git cat-file` process (a start view leaves its workspace's running)."""
        if self._owns_cat:
            self._cat.close()

    def start_view(self) -> "Workspace":
        """The start tree without this run's changes, read through this workspace's process and tree cache."""
        view = copy.copy(self)
        view._overlay = {}
        view._owns_cat = False
        return view

    def view_of(self, commit: str) -> "Workspace":
        """The tree of another commit of the same repository, read-only in spirit, through this workspace's
        process and tree cache (tree objects are immutable, so the cache is shared safely)."""
        if commit == self.start_commit:
            return self.start_view()
        view = self.start_view()
        view.start_commit = commit
        view._root, view._listing = None, None
        return view

    def recording_view(self) -> "Workspace":
        """A start view that notes every path whose content it hands out (`content_read`), so a result worked out
        from it can be reused for a tree that differs only in files it never read."""
        view = self.start_view()
        view._reads = set()
        return view

    def content_read(self) -> frozenset[str] | None:
        """The paths a recording view read content of; None when it searched (read every file) or is not one."""
        if self._reads is None or _ALL_READ in self._reads:
            return None
        return frozenset(self._reads)

    def changes_since(self, tree: str, *, limit: int) -> list[TreeChange]:
        """The non-directory entries of the start tree that differ from tree `tree` of the same repository,
        reading only the subtrees that differ; TooManyChanges past `limit`."""
        return diff_trees(self._tree, tree, self._root_tree(), limit=limit)

    # Queries

    def kind(self, path: str) -> EntryKind | None:
        """What `path` is now (overlay first, then the start tree), or None if absent or deleted."""
        check_path(path)
        if path in self._overlay:
            if self._overlay[path] is None:
                return None
            entry = self._entry(path)
            return EntryKind.EXECUTABLE if entry and kind_of_mode(entry[0]) is EntryKind.EXECUTABLE else EntryKind.FILE
        prefix = path + "/"
        if any(p.startswith(prefix) and data is not None for p, data in self._overlay.items()):
            return EntryKind.DIRECTORY
        entry = self._entry(path)
        if entry is None:
            return None
        kind = kind_of_mode(entry[0])
        if kind is EntryKind.DIRECTORY and any(p.startswith(prefix) for p in self._overlay):
            if not any(p not in self._overlay for p in self._tree_paths_under(path)):
                return None  # everything under it was deleted
        return kind

    def read(self, path: str) -> bytes:
        """The current content of the regular file at `path`; symlinks, submodules and directories are refused,
        and so is a file past `max_file_bytes` (FileTooLarge)."""
        data = self._overlay.get(path)
        if data is not None:
            return data
        oid = self._regular_blob(path)
        try:
            return self._blob(oid, max_size=self.max_file_bytes)
        except ObjectTooLarge as exc:
            raise FileTooLarge(path, exc.size, self.max_file_bytes) from None

    def size(self, path: str) -> int:
        """The size in bytes of the regular file at `path`, without reading it."""
        data = self._overlay.get(path)
        if data is not None:
            return len(data)
        return self._cat.size(self._regular_blob(path))[1]

    @contextmanager
    def open(self, path: str) -> Iterator[IO[bytes]]:
        """The regular file at `path` as a stream of bytes, read from git as it is consumed, whatever its size."""
        data = self._overlay.get(path)
        if data is not None:
            yield io.BytesIO(data)
            return
        proc = popen(self.git, "cat-file", "blob", self._regular_blob(path), git_dir=self.git_dir)
        assert proc.stdout is not None
        try:
            yield proc.stdout
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()

    def blob_id(self, path: str) -> str | None:
        """The object id of the regular file at `path` while this run has not changed it, else None."""
        check_path(path)
        if path in self._overlay:
            return None
        if self._reads is not None:
            self._reads.add(path)
        entry = self._entry(path)
        if entry is None or kind_of_mode(entry[0]) not in (EntryKind.FILE, EntryKind.EXECUTABLE):
            return None
        return entry[1]

    def entries(self) -> dict[str, EntryKind]:
        """Every file, executable, symlink and submodule path with its kind, sorted by path."""
        listing = self._tree_listing()
        overlay = self._overlay
        # The start tree's paths come sorted already; only the run's own (few) are sorted and merged in.
        kept = (
            (p, kind_of_mode(mode)) for p, mode in zip(listing.paths, listing.modes, strict=True) if p not in overlay
        )
        written = []
        for path, data in overlay.items():
            if data is not None:
                tree = listing.get(path)
                exec_ = tree is not None and kind_of_mode(tree[0]) is EntryKind.EXECUTABLE
                written.append((path, EntryKind.EXECUTABLE if exec_ else EntryKind.FILE))
        return dict(heapq.merge(kept, sorted(written), key=lambda item: item[0]))

    def tree_id(self) -> str:
        """The id of the start commit's root tree (what caches of the start tree are keyed by)."""
        return self._root_tree()

    def in_start_tree(self, path: str) -> bool:
        """Whether `path` is a non-directory entry of the start tree (changed or not by this run)."""
        return path in self._tree_listing()

    def start_files(self) -> list[str]:
        """Every non-directory path of the start tree, sorted, without this run's changes."""
        return list(self._tree_listing().paths)

    def added_files(self) -> list[str]:
        """The paths this run wrote that are not entries of the start tree, sorted."""
        listing = self._tree_listing()
        return sorted(p for p, data in self._overlay.items() if data is not None and p not in listing)

    def list_files(self, prefix: str = "") -> list[str]:
        """Every non-directory path (files, executables, symlinks, submodules), sorted; with `prefix`, only the
        paths that start with it, found by bisection, so they cost what they are, not what the tree holds."""
        start = starting_with(self._tree_listing().paths, prefix)
        if not self._overlay:
            return start
        overlay = self._overlay
        kept = (p for p in start if p not in overlay)
        written = sorted(p for p, data in overlay.items() if data is not None and p.startswith(prefix))
        return list(heapq.merge(kept, written))

    def search(
        self, pattern: str, *, globs: list[str] | None = None, ignore_case: bool = False, max_matches: int = 200
    ) -> list[SearchMatch]:
        """RE2 matches in text files, line by line, sorted by path and line, at most `max_matches`.

        `globs` (gitignore-style, see `service.workspace.globs`) limit the paths searched. Binary files and
        files past `max_file_bytes` are skipped. RE2 runs in time linear in the text, whatever the pattern.
        """
        regex = compile_pattern(pattern, ignore_case=ignore_case)
        if self._reads is not None:
            self._reads.add(_ALL_READ)
        selected = (lambda p: True) if not globs else (lambda p: glob_matches(globs, p))
        found = self._search_tree(regex, selected, max_matches)
        for path, data in self._overlay.items():
            if data is None or not selected(path) or is_binary(data) or len(data) > self.max_file_bytes:
                continue
            found += [SearchMatch(path, number, _decode(text)) for number, text in matching_lines(regex, data)]
        found.sort(key=lambda m: (m.path, m.line))
        return found[:max_matches]

    def changes(self) -> dict[str, bytes | None]:
        """Net changes against the start tree: path -> new content, or None for a deleted entry."""
        result: dict[str, bytes | None] = {}
        for path, data in sorted(self._overlay.items()):
            entry = self._entry(path)
            if data is None:
                if entry is not None:
                    result[path] = None
            elif entry is None or entry[0] == _TREE or entry[1] != object_id("blob", data, self._object_format):
                result[path] = data
        return result

    # Changes, in memory only

    def write(self, path: str, data: bytes) -> None:
        """Create or replace the regular file at `path`."""
        kind = self.kind(path)
        if kind is EntryKind.DIRECTORY:
            raise WorkspaceError(f"{path} is a directory")
        if kind in (EntryKind.SYMLINK, EntryKind.SUBMODULE):
            raise NotARegularFile(path, kind)
        if kind is None:
            self._check_parents(path)
        self._overlay[path] = bytes(data)

    def delete(self, path: str) -> None:
        """Delete the entry at `path`, or every entry under it if it is a directory."""
        kind = self.kind(path)
        if kind is None:
            raise PathNotFound(f"{path} does not exist")
        targets = self._files_under(path) if kind is EntryKind.DIRECTORY else [path]
        for target in targets:
            self._remove(target)

    def move(self, path: str, new_path: str) -> None:
        """Move a regular file, or a directory of regular files, to `new_path`, which must not exist."""
        kind = self.kind(path)
        if kind is None:
            raise PathNotFound(f"{path} does not exist")
        if self.kind(new_path) is not None:
            raise PathExists(f"{new_path} already exists")
        if new_path.startswith(path + "/"):
            raise WorkspaceError(f"cannot move {path} into itself")
        self._check_parents(new_path)
        sources = self._files_under(path) if kind is EntryKind.DIRECTORY else [path]
        contents = {src: self.read(src) for src in sources}  # refuses symlinks and submodules before changing anything
        for src in sources:
            self._remove(src)
        for src, data in contents.items():
            self._overlay[new_path + src[len(path) :]] = data

    # Internals

    def _remove(self, path: str) -> None:
        if self._entry(path) is not None:
            self._overlay[path] = None
        else:
            self._overlay.pop(path, None)

    def _check_parents(self, path: str) -> None:
        parts = path.split("/")
        for n in range(1, len(parts)):
            parent = "/".join(parts[:n])
            kind = self.kind(parent)
            if kind not in (None, EntryKind.DIRECTORY):
                raise WorkspaceError(f"{parent} is a {kind.value}, not a directory")

    def _files_under(self, path: str) -> list[str]:
        prefix = path + "/"
        paths = {p for p in self._tree_paths_under(path) if p not in self._overlay}
        paths.update(p for p, data in self._overlay.items() if data is not None and p.startswith(prefix))
        return sorted(paths)

    def _entry(self, path: str) -> tuple[int, str] | None:
        """The (mode, object id) of `path` in the start tree, walking tree objects through cat-file."""
        found = self._listing.get(path) if self._listing is not None else None
        if found is not None:
            return found
        mode, oid = _TREE, self._root_tree()
        for part in path.split("/"):
            if mode != _TREE:
                return None
            found = self._tree(oid).get(part)
            if found is None:
                return None
            mode, oid = found
        return mode, oid

    def _root_tree(self) -> str:
        if self._root is None:
            try:
                kind, data = self._cat.read(self.start_commit)
            except KeyError:
                kind, data = "missing", b""
            if kind != "commit" or not data.startswith(b"tree "):
                raise GitError(["cat-file"], 128, f"{self.start_commit} is not a commit in this repository ({kind})")
            self._root = data[5 : data.index(b"\n")].decode("ascii")
        return self._root

    def _tree(self, oid: str) -> dict[str, tuple[int, str]]:
        if oid not in self._trees:
            _, data = self._cat.read(oid)
            self._trees[oid] = parse_tree(data, self._object_format)
        return self._trees[oid]

    def _blob(self, oid: str, max_size: int | None = None) -> bytes:
        kind, data = self._cat.read(oid, max_size=max_size)
        assert kind == "blob"
        return data

    def _regular_blob(self, path: str) -> str:
        """The blob id of the start tree's regular file at `path` (not in the overlay), or the error saying why not."""
        kind = self.kind(path)
        if kind is None:
            raise PathNotFound(f"{path} does not exist")
        if self._reads is not None:
            self._reads.add(path)
        entry = self._entry(path)
        assert entry is not None  # kind() found it
        if kind is EntryKind.SYMLINK:
            try:
                target = _decode(self._blob(entry[1], max_size=MAX_LINK_TARGET))
            except ObjectTooLarge:
                target = f"a target of more than {MAX_LINK_TARGET} bytes"
            raise NotARegularFile(path, kind, target)
        if kind not in (EntryKind.FILE, EntryKind.EXECUTABLE):
            raise NotARegularFile(path, kind)
        return entry[1]

    def _tree_listing(self) -> TreeListing:
        if self._listing is None:
            if self.start_commit not in self._listings:
                root = self._root_tree()
                self._listings[self.start_commit] = load_listing(
                    self.git_dir,
                    root,
                    self._list_whole,
                    lambda earlier: diff_trees(self._tree, earlier, root, limit=MAX_DERIVED_CHANGES),
                )
            self._listing = self._listings[self.start_commit]
        return self._listing

    def _list_whole(self) -> TreeListing:
        out = self.git.run("ls-tree", "-r", "-z", "--full-tree", self.start_commit, git_dir=self.git_dir).stdout
        # Decoded once, whole: "<mode> <type> <id>\t<path>" records; ids and modes are ASCII.
        listing = {}
        for record in _decode(out).split("\0"):
            if record:
                meta, _, path = record.partition("\t")
                mode, _, oid = meta.rpartition(" ")
                listing[path] = (int(mode.partition(" ")[0], 8), oid)
        return TreeListing.from_entries(listing, 32 if self._object_format == "sha256" else 20)

    def _tree_paths_under(self, path: str) -> list[str]:
        return starting_with(self._tree_listing().paths, path + "/")

    def _search_tree(self, regex, selected, limit: int) -> list[SearchMatch]:
        """Matches in the start tree's text files that the overlay leaves as they are, in path order."""
        listing = self._tree_listing()
        chosen = [
            i
            for i, (p, mode) in enumerate(zip(listing.paths, listing.modes, strict=True))
            if p not in self._overlay and selected(p) and kind_of_mode(mode) in (EntryKind.FILE, EntryKind.EXECUTABLE)
        ]
        paths = [listing.paths[i] for i in chosen]
        matches: list[SearchMatch] = []
        ids = (listing.entry(i)[1] for i in chosen)
        blobs = stream_blobs(self.git, self.git_dir, ids, max_size=self.max_file_bytes)
        try:
            for path, (_, data) in zip(paths, blobs, strict=False):
                if data is None or is_binary(data):
                    continue
                lines = itertools.islice(matching_lines(regex, data), limit - len(matches))
                matches += [SearchMatch(path, number, _decode(text)) for number, text in lines]
                if len(matches) >= limit:
                    break
        finally:
            blobs.close()
        return matches
