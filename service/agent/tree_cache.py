"""What a run works out from a whole tree (path policy, site, overview), kept by tree id: in memory and beside
the repository, since every run is a freshly forked process. A tree id names its content, so an entry never
goes stale; only a change to the code that computes it does, hence the code's fingerprint in every name."""

import functools
import hashlib
import logging
import os
import pickle
import tempfile
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from service.workspace.mirror import TREE_CACHE_FOLDER

log = logging.getLogger(__name__)

T = TypeVar("T")
CACHE_FOLDER = TREE_CACHE_FOLDER  # inside the repository's git dir (a mirror's, for runs; its upkeep prunes it)
# What computes the entries: the agent's modules (site detection, overview, path policy) and git's name rules.
_CODE = (Path(__file__).parent, Path(__file__).parents[1] / "workspace" / "gitnames.py")
_IN_MEMORY = 64  # entries remembered per process
_remembered: OrderedDict[str, object] = OrderedDict()


def cached(workspace, name: str, compute: Callable[[], T], *, variant: str = "") -> T:
    """`compute()` for the start tree of `workspace` (and `variant`, e.g. a docs root), worked out once per tree.

    Stored with pickle in the repository's own git dir, which only Copydesk writes (git writes objects and
    refs there, never files of this folder), so nothing a repository holds can plant an entry.
    """
    key = f"{code_fingerprint()}\0{name}\0{variant}"
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    entry = f"{name}-{digest}-{workspace.tree_id()}"
    if entry in _remembered:
        _remembered.move_to_end(entry)
        return _remembered[entry]  # type: ignore[return-value]
    stored = Path(workspace.git_dir) / CACHE_FOLDER / entry
    value = _read(stored)
    if value is _MISSING:
        value = compute()
        _write(stored, value)
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


def forget() -> None:
    """Drop what this process remembers (the copies beside the repositories stay)."""
    _remembered.clear()


_MISSING = object()


def _read(stored: Path) -> object:
    try:
        with open(stored, "rb") as source:
            return pickle.load(source)
    except FileNotFoundError:
        return _MISSING
    except Exception:  # a torn or outdated entry: worked out again and rewritten
        log.warning("the tree cache entry %s is unreadable; working it out again", stored.name)
        return _MISSING


def _write(stored: Path, value: object) -> None:
    # Written whole under a temporary name, then renamed: a concurrent run reads the old entry or the new one.
    try:
        stored.parent.mkdir(exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=stored.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, stored)
    except OSError:
        log.warning("could not keep a tree cache entry beside %s", stored.parent.parent, exc_info=True)
