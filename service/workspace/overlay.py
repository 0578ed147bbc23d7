"""A commit's tree plus an in-memory overlay of writes, moves and deletes; nothing is checked out."""

import bisect
import copy
import re
import tempfile
from pathlib import Path

from service.workspace.catfile import CatFile
from service.workspace.entries import (
    EntryKind,
    NotARegularFile,
    PathExists,
    PathNotFound,
    SearchMatch,
    WorkspaceError,
)
from service.workspace.git import Git
from service.workspace.globs import matches as glob_matches
from service.workspace.globs import pathspecs as glob_pathspecs
from service.workspace.proc import popen
from service.workspace.trees import object_id, parse_tree

_TREE, _SYMLINK, _GITLINK = 0o040000, 0o120000, 0o160000


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

    def __init__(self, git: Git, git_dir: Path | str, start_commit: str) -> None:
        self.git = git
        self.git_dir = git_dir
        self.start_commit = start_commit
        self._object_format = "sha256" if len(start_commit) == 64 else "sha1"
        self._cat = CatFile(git, git_dir)
        self._owns_cat = True  # False for a start_view, which borrows its workspace's process
        self._overlay: dict[str, bytes | None] = {}  # path -> new content, or None for deleted
        self._trees: dict[str, dict[str, tuple[int, str]]] = {}  # tree id -> name -> (mode, id)
        self._root: str | None = None
        self._listing: dict[str, tuple[int, str]] | None = None  # every non-tree entry of the start tree
        self._sorted: list[str] = []

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
        """The current content of the regular file at `path`; symlinks, submodules and directories are refused."""
        kind = self.kind(path)
        data = self._overlay.get(path)
        if data is not None:
            return data
        if kind is None:
            raise PathNotFound(f"{path} does not exist")
        entry = self._entry(path)
        if kind is EntryKind.SYMLINK:
            raise NotARegularFile(path, kind, _decode(self._blob(entry[1])))
        if kind not in (EntryKind.FILE, EntryKind.EXECUTABLE):
            raise NotARegularFile(path, kind)
        return self._blob(entry[1])

    def entries(self) -> dict[str, EntryKind]:
        """Every file, executable, symlink and submodule path with its kind, sorted by path."""
        listing = self._tree_listing()
        result = {p: kind_of_mode(mode) for p, (mode, _) in listing.items() if p not in self._overlay}
        for path, data in self._overlay.items():
            if data is not None:
                tree = listing.get(path)
                exec_ = tree is not None and kind_of_mode(tree[0]) is EntryKind.EXECUTABLE
                result[path] = EntryKind.EXECUTABLE if exec_ else EntryKind.FILE
        return dict(sorted(result.items()))

    def list_files(self) -> list[str]:
        """Every non-directory path (files, executables, symlinks, submodules), sorted."""
        return list(self.entries())

    def search(self, pattern: str, *, globs: list[str] | None = None, ignore_case: bool = False,
               max_matches: int = 200) -> list[SearchMatch]:
        """Regex matches in text files, sorted by path and line, at most `max_matches`.

        `globs` (gitignore-style, see `service.workspace.globs`) limit the paths searched.
        """
        try:
            regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise WorkspaceError(f"invalid regular expression: {exc}") from None
        selected = (lambda p: True) if not globs else (lambda p: glob_matches(globs, p))
        found = [m for m in self._grep_tree(pattern, globs, ignore_case, max_matches) if selected(m.path)]
        for path, data in self._overlay.items():
            if data is None or not selected(path) or b"\0" in data[:8000]:
                continue
            for number, line in enumerate(data.split(b"\n"), 1):
                text = _decode(line).removesuffix("\r")
                if regex.search(text):
                    found.append(SearchMatch(path, number, text))
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
            self._overlay[new_path + src[len(path):]] = data

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
        if self._listing is not None and path in self._listing:
            return self._listing[path]
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
            kind, data = self._cat.read(self.start_commit)
            assert kind == "commit" and data.startswith(b"tree ")
            self._root = data[5:data.index(b"\n")].decode("ascii")
        return self._root

    def _tree(self, oid: str) -> dict[str, tuple[int, str]]:
        if oid not in self._trees:
            _, data = self._cat.read(oid)
            self._trees[oid] = parse_tree(data, self._object_format)
        return self._trees[oid]

    def _blob(self, oid: str) -> bytes:
        kind, data = self._cat.read(oid)
        assert kind == "blob"
        return data

    def _tree_listing(self) -> dict[str, tuple[int, str]]:
        if self._listing is None:
            out = self.git.run("ls-tree", "-r", "-z", "--full-tree", self.start_commit, git_dir=self.git_dir).stdout
            listing = {}
            for record in out.split(b"\0"):
                if record:
                    meta, _, path = record.partition(b"\t")
                    mode, _, oid = meta.split(b" ")
                    listing[_decode(path)] = (int(mode, 8), oid.decode("ascii"))
            self._listing = listing
            self._sorted = sorted(listing)
        return self._listing

    def _tree_paths_under(self, path: str) -> list[str]:
        self._tree_listing()
        prefix = path + "/"
        start = bisect.bisect_left(self._sorted, prefix)
        end = bisect.bisect_left(self._sorted, path + "0")  # "0" is the character after "/"
        return self._sorted[start:end]

    def _grep_tree(self, pattern: str, globs: list[str] | None, ignore_case: bool, limit: int) -> list[SearchMatch]:
        for engine in ("-P", "-E"):
            matches, stderr, code = self._run_grep(engine, pattern, globs, ignore_case, limit)
            if code in (0, 1) or len(matches) >= limit:
                return matches
            if engine == "-P" and "USE_LIBPCRE" in stderr:
                continue  # git built without PCRE: extended regexes are the nearest
            raise WorkspaceError(f"search failed: {stderr.strip()[:300]}")
        raise AssertionError("unreachable")

    def _run_grep(self, engine: str, pattern: str, globs: list[str] | None, ignore_case: bool,
                  limit: int) -> tuple[list[SearchMatch], str, int]:
        specs = [spec for glob in globs or [] for spec in glob_pathspecs(glob)]
        args = ["grep", "-I", "-n", "-z", "--full-name", "--no-color", "--no-textconv", engine]
        args += ["-i"] if ignore_case else []
        args += ["-e", pattern, self.start_commit, "--", *specs]
        skip = len(self.start_commit) + 1  # each path is printed as "<commit>:<path>"
        matches: list[SearchMatch] = []
        with tempfile.TemporaryFile() as err:
            proc = popen(self.git, *args, git_dir=self.git_dir, stderr=err)
            assert proc.stdout is not None
            with proc.stdout:
                while len(matches) < limit:
                    record = proc.stdout.readline()
                    while record and record.count(b"\0") < 2:  # a newline inside a path
                        more = proc.stdout.readline()
                        if not more:
                            break
                        record += more
                    if not record:
                        break
                    path, number, text = record.rstrip(b"\n").split(b"\0", 2)
                    path_s = _decode(path[skip:])
                    if path_s not in self._overlay:
                        matches.append(SearchMatch(path_s, int(number), _decode(text).removesuffix("\r")))
            if len(matches) >= limit and proc.poll() is None:
                proc.kill()
            code = proc.wait()
            err.seek(0)
            return matches, err.read().decode("utf-8", "replace"), code
