"""What a run works out from a whole tree (path policy, site, overview), kept by tree id: in memory and beside
the repository, since every run is a freshly forked process. A tree id names its content, so an entry never
goes stale; only a change to the code that computes it does, hence the code's fingerprint in every name.

A tree not seen before is usually the last one seen plus a few edits (the base branch moved by a commit or
two), so where the caller says how, its entry is derived from the last stored one and the entries that differ
between the two trees, which costs what changed rather than what the tree holds."""

import functools
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from service.workspace import kept
from service.workspace.mirror import TREE_CACHE_FOLDER
from service.workspace.trees import TooManyChanges, TreeChange

log = logging.getLogger(__name__)

T = TypeVar("T")
CACHE_FOLDER = TREE_CACHE_FOLDER  # inside the repository's git dir (a mirror's, for runs; its upkeep prunes it)
# What computes the entries: the agent's modules (site detection, overview, path policy) and git's name rules.
_CODE = (Path(__file__).parent, Path(__file__).parents[1] / "workspace" / "gitnames.py")
_IN_MEMORY = 64  # entries remembered per process
# Past this many changed entries between two trees, an entry is worked out whole rather than derived.
MAX_DERIVED_CHANGES = 2000
_remembered: OrderedDict[str, object] = OrderedDict()


Derive = Callable[[T, Sequence[TreeChange]], T | None]


def cached(workspace, name: str, compute: Callable[[], T], *, variant: str = "", derive: Derive | None = None) -> T:
    """`compute()` for the start tree of `workspace` (and `variant`, e.g. a docs root), worked out once per tree.

    With `derive`, a tree not seen yet first tries `derive(entry of the last stored tree, entries that differ
    from it)`, which returns the new entry, or None when it cannot tell (then `compute()` runs).
    Stored with pickle in the repository's own git dir, which only Copydesk writes (git writes objects and
    refs there, never files of this folder), so nothing a repository holds can plant an entry.
    """
    key = f"{code_fingerprint()}\0{name}\0{variant}"
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    tree = workspace.tree_id()
    entry = f"{name}-{digest}-{tree}"
    if entry in _remembered:
        _remembered.move_to_end(entry)
        return _remembered[entry]  # type: ignore[return-value]
    folder = Path(workspace.git_dir) / CACHE_FOLDER
    stored = folder / entry
    value = kept.read(stored)
    if value is _MISSING:
        latest = folder / f"{name}-{digest}-latest"
        if derive is not None:
            value = _derived(workspace, folder, f"{name}-{digest}", latest, derive)
        if value is _MISSING or value is None:
            value = compute()
        kept.write(stored, value)
        kept.write(latest, tree)
    _remembered[entry] = value
    while len(_remembered) > _IN_MEMORY:
        _remembered.popitem(last=False)
    return value  # type: ignore[return-value]


@functools.cache
def code_fingerprint() -> str:
    """A digest of the code that computes the entries, so an upgrade never reads what older code stored."""
    digest = hashlib.sha256()
    for root in _CODE:
        for source in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def _derived(workspace, folder: Path, prefix: str, latest: Path, derive: Derive) -> object:
    """The entry derived from the last stored tree's, or _MISSING / None when there is none or it cannot be."""
    previous = kept.read(latest)
    if not isinstance(previous, str) or previous == workspace.tree_id():
        return _MISSING
    earlier = kept.read(folder / f"{prefix}-{previous}")
    if earlier is _MISSING:
        return _MISSING  # pruned by upkeep
    try:
        changes = workspace.changes_since(previous, limit=MAX_DERIVED_CHANGES)
    except (TooManyChanges, KeyError):  # KeyError: the earlier tree's objects are gone from the repository
        return _MISSING
    return derive(earlier, changes)


def forget() -> None:
    """Drop what this process remembers (the copies beside the repositories stay)."""
    _remembered.clear()


_MISSING = kept.MISSING


def read_stored(stored: Path) -> object | None:
    """An entry kept by `write_stored` (None when it is absent or unreadable)."""
    value = kept.read(stored)
    return None if value is _MISSING else value


def write_stored(stored: Path, value: object) -> None:
    """Keep `value` at `stored` (a file inside a repository's cache folder), whole or not at all."""
    kept.write(stored, value)
