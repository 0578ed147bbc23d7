"""Tree objects: parsing them, and writing a tree with path changes applied, rewriting only the changed directories."""

import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from service.workspace.catfile import CatFile
from service.workspace.entries import WorkspaceError
from service.workspace.git import Git, GitError

TREE_MODE = 0o040000
REGULAR_MODE = 0o100644


def object_id(kind: str, data: bytes, object_format: str = "sha1") -> str:
    """The id git gives an object of `kind` ("blob", "tree", ...) holding `data`."""
    return hashlib.new(object_format, b"%s %d\0" % (kind.encode(), len(data)) + data).hexdigest()


def parse_tree(data: bytes, object_format: str = "sha1") -> dict[str, tuple[int, str]]:
    """The entries of a raw tree object: name -> (mode, object id)."""
    size = 32 if object_format == "sha256" else 20
    entries, i = {}, 0
    while i < len(data):
        space = data.index(b" ", i)
        nul = data.index(b"\0", space)
        name = data[space + 1:nul].decode("utf-8", "surrogateescape")
        entries[name] = (int(data[i:space], 8), data[nul + 1:nul + 1 + size].hex())
        i = nul + 1 + size
    return entries


def format_tree(entries: Mapping[str, tuple[int, str]]) -> bytes:
    """A raw tree object holding `entries`, in git's canonical order."""

    def order(item: tuple[str, tuple[int, str]]) -> bytes:
        name = item[0].encode("utf-8", "surrogateescape")
        return name + b"/" if item[1][0] == TREE_MODE else name  # git sorts a directory as if named "dir/"

    return b"".join(b"%o %s\0" % (mode, name.encode("utf-8", "surrogateescape")) + bytes.fromhex(oid)
                    for name, (mode, oid) in sorted(entries.items(), key=order))


@dataclass
class _Dir:
    original: str | None  # the directory's tree id in the base tree, None if it had none
    entries: dict[str, tuple[int, str]]
    dirty: bool = False


def write_tree(git: Git, git_dir: Path | str, cat: CatFile, base_tree: str,
               changes: Mapping[str, bytes | None]) -> str:
    """Write the tree `base_tree` with `changes` (path -> content, None deletes) applied; return its id.

    Only the directories on the changed paths are read and rewritten, so the cost follows the change, not
    the repository. A changed file keeps its mode (an executable stays executable); a new one is 100644.
    """
    fmt = "sha256" if len(base_tree) == 64 else "sha1"
    dirs: dict[str, _Dir] = {"": _Dir(base_tree, _read_tree(cat, base_tree, fmt))}

    def load(path: str) -> _Dir:
        # Loads every directory from the base tree before any change is applied, so none sees a half-edited parent.
        if path not in dirs:
            parent, _, name = path.rpartition("/")
            entry = load(parent).entries.get(name)
            tree = entry[1] if entry and entry[0] == TREE_MODE else None
            dirs[path] = _Dir(tree, _read_tree(cat, tree, fmt) if tree else {})
        return dirs[path]

    for path in changes:
        parent, _, name = path.rpartition("/")
        entry = load(parent).entries.get(name)
        if entry is not None and entry[0] == TREE_MODE:
            load(path)  # a directory deleted or replaced by a file

    blobs: dict[str, bytes] = {}
    # Deletions first, so a deleted directory is emptied before anything new is written into it.
    for path, data in sorted(changes.items(), key=lambda item: item[1] is not None):
        parent, _, name = path.rpartition("/")
        folder = dirs[parent]
        old = folder.entries.get(name)
        if data is None:
            new = None
            if path in dirs and dirs[path].entries:
                dirs[path].entries.clear()
                dirs[path].dirty = True
        else:
            oid = object_id("blob", data, fmt)
            blobs[oid] = data
            keeps_mode = old is not None and old[0] & 0o170000 == 0o100000
            new = (old[0] if old is not None and keeps_mode else REGULAR_MODE, oid)
        if new != old:
            folder.dirty = True
            if new is None:
                del folder.entries[name]
            else:
                folder.entries[name] = new

    trees: dict[str, bytes] = {}
    for path in sorted((p for p in dirs if p), key=lambda p: -p.count("/")):
        folder = dirs[path]
        tree = folder.original
        if folder.dirty:
            tree = None
            if folder.entries:
                raw = format_tree(folder.entries)
                tree = object_id("tree", raw, fmt)
                trees[tree] = raw
        parent, _, name = path.rpartition("/")
        up = dirs[parent]
        current = up.entries.get(name)
        if current is not None and current[0] != TREE_MODE:
            if tree is not None:
                raise WorkspaceError(f"{path} would be both a file and a directory")
            continue
        if tree is None and current is not None:
            del up.entries[name]
            up.dirty = True
        elif tree is not None and current != (TREE_MODE, tree):
            up.entries[name] = (TREE_MODE, tree)
            up.dirty = True

    root = dirs[""]
    if not root.dirty:
        return base_tree
    raw = format_tree(root.entries)
    root_id = object_id("tree", raw, fmt)
    trees[root_id] = raw
    _write_objects(git, git_dir, "blob", blobs)
    _write_objects(git, git_dir, "tree", trees)
    return root_id


def _read_tree(cat: CatFile, oid: str, fmt: str) -> dict[str, tuple[int, str]]:
    kind, data = cat.read(oid)
    if kind != "tree":
        raise GitError(["cat-file"], 1, f"{oid} is a {kind}, not a tree")
    return parse_tree(data, fmt)


def _write_objects(git: Git, git_dir: Path | str, kind: str, objects: Mapping[str, bytes]) -> None:
    """Store objects whose ids are already known with one `git hash-object` call, checking the ids agree."""
    if not objects:
        return
    with tempfile.TemporaryDirectory(prefix="copydesk-objects-") as tmp:
        paths = []
        for n, data in enumerate(objects.values()):
            path = os.path.join(tmp, str(n))
            with open(path, "wb") as fh:
                fh.write(data)
            paths.append(path)
        out = git.out("hash-object", "-w", "--no-filters", "-t", kind, "--stdin-paths", git_dir=git_dir,
                      input="".join(p + "\n" for p in paths).encode())
    if out.split() != list(objects):
        raise GitError(["hash-object"], 1, f"git computed different {kind} ids than Copydesk")
