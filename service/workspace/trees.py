"""Tree objects: parsing them, and writing a tree with path changes applied, rewriting only the changed directories."""

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from service.workspace.catfile import CatFile
from service.workspace.entries import WorkspaceError
from service.workspace.git import GitError

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
        name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
        entries[name] = (int(data[i:space], 8), data[nul + 1 : nul + 1 + size].hex())
        i = nul + 1 + size
    return entries


def format_tree(entries: Mapping[str, tuple[int, str]]) -> bytes:
    """A raw tree object holding `entries`, in git's canonical order."""

    def order(item: tuple[str, tuple[int, str]]) -> bytes:
        name = item[0].encode("utf-8", "surrogateescape")
        return name + b"/" if item[1][0] == TREE_MODE else name  # git sorts a directory as if named "dir/"

    return b"".join(
        b"%o %s\0" % (mode, name.encode("utf-8", "surrogateescape")) + bytes.fromhex(oid)
        for name, (mode, oid) in sorted(entries.items(), key=order)
    )


@dataclass(frozen=True)
class TreeChange:
    """A non-directory entry that differs between two trees: (mode, object id) before and after, None if absent."""

    path: str
    old: tuple[int, str] | None
    new: tuple[int, str] | None


class TooManyChanges(Exception):
    """Two trees differ in more entries than the caller cares to handle one by one."""


def diff_trees(
    read_tree: Callable[[str], Mapping[str, tuple[int, str]]], old: str, new: str, *, limit: int
) -> list[TreeChange]:
    """The non-directory entries that differ between trees `old` and `new`, sorted by path.

    Only subtrees whose ids differ are read (`read_tree`: tree id -> entries), so the cost follows the change,
    not the tree; raises TooManyChanges past `limit` changes.
    """
    changes: list[TreeChange] = []

    def side(tree: str | None) -> Mapping[str, tuple[int, str]]:
        return read_tree(tree) if tree is not None else {}

    def walk(prefix: str, old_tree: str | None, new_tree: str | None) -> None:
        before, after = side(old_tree), side(new_tree)
        for name in sorted(before.keys() | after.keys()):
            was, now = before.get(name), after.get(name)
            if was == now:
                continue
            path = prefix + name
            was_tree = was is not None and was[0] == TREE_MODE
            now_tree = now is not None and now[0] == TREE_MODE
            if was_tree or now_tree:
                walk(path + "/", was[1] if was_tree else None, now[1] if now_tree else None)  # type: ignore[index]
            was_file, now_file = (None if was_tree else was), (None if now_tree else now)
            if was_file != now_file:
                changes.append(TreeChange(path, was_file, now_file))
                if len(changes) > limit:
                    raise TooManyChanges(f"more than {limit} entries differ")

    walk("", old, new)
    changes.sort(key=lambda change: change.path)
    return changes


@dataclass
class _Dir:
    original: str | None  # the directory's tree id in the base tree, None if it had none
    entries: dict[str, tuple[int, str]]
    dirty: bool = False


def plan_tree(
    cat: CatFile, base_tree: str, changes: Mapping[str, bytes | None]
) -> tuple[str, dict[str, tuple[str, bytes]]]:
    """The tree `base_tree` with `changes` (path -> content, None deletes) applied: its id, and the new blobs and
    trees it needs (id -> (kind, content)), none of them written yet; no objects when nothing changes.

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
        return base_tree, {}
    raw = format_tree(root.entries)
    root_id = object_id("tree", raw, fmt)
    trees[root_id] = raw
    objects = {oid: ("blob", data) for oid, data in blobs.items()}
    objects.update((oid, ("tree", data)) for oid, data in trees.items())
    return root_id, objects


def _read_tree(cat: CatFile, oid: str, fmt: str) -> dict[str, tuple[int, str]]:
    kind, data = cat.read(oid)
    if kind != "tree":
        raise GitError(["cat-file"], 1, f"{oid} is a {kind}, not a tree")
    return parse_tree(data, fmt)
