"""Whole-tree listings (every non-directory entry) kept beside the repository by tree id, so a run does not
list a tree git has listed before; a new tree's is derived from the last one kept and the entries that differ,
which costs what changed, not what the tree holds. A derived tree keeps only those entries (a delta on the last
whole listing kept) until they grow past MAX_DELTA, so a run does not rewrite a listing of every file either.
"""

import bisect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from service.workspace import kept
from service.workspace.trees import TooManyChanges, TreeChange

log = logging.getLogger(__name__)

FOLDER = "copydesk-tree-cache"  # inside the repository's git dir, which only Copydesk writes files into
_FORMAT = "listing-v2"  # change when what is stored changes
MAX_DERIVED_CHANGES = 2000
MAX_DELTA = 2000  # entries a tree's delta holds before its listing is kept whole (a new base) instead

Listing = dict[str, tuple[int, str]]  # path -> (mode, object id)
Sorted = tuple[Listing, list[str]]  # a listing and its paths sorted


@dataclass(frozen=True)
class _Delta:
    """A tree's listing kept as the entries that differ from the whole listing kept for `base`."""

    base: str
    changes: dict[str, tuple[int, str] | None]  # path -> entry, None where the tree has no such file


def load_listing(
    git_dir: Path | str, tree: str, list_whole: Callable[[], Listing], changes_since: Callable[[str], list[TreeChange]]
) -> Sorted:
    """The listing of `tree` and its paths sorted: kept, else derived from the last kept (`changes_since(old
    tree)`, TooManyChanges or KeyError when it cannot tell), else `list_whole()`; then kept for the next run."""
    folder = Path(git_dir) / FOLDER
    found = _resolve(folder, tree)
    if found is not None:
        return found[0]
    latest = _read(folder / f"{_FORMAT}-latest")
    derived = _derived(folder, tree, latest, changes_since) if isinstance(latest, str) and latest != tree else None
    if derived is None:
        listing = list_whole()
        derived = (listing, sorted(listing)), None
    result, delta = derived
    _keep(folder, tree, result, delta, latest if isinstance(latest, str) else None)
    return result


def _resolve(folder: Path, tree: str) -> tuple[Sorted, _Delta | None] | None:
    """`tree`'s listing as kept (whole, or its base's with its delta applied) and its delta; None when not kept."""
    stored = _read(folder / f"{_FORMAT}-{tree}")
    if not isinstance(stored, _Delta):
        return (stored, None) if stored is not None else None
    base = _read(folder / f"{_FORMAT}-{stored.base}")
    if base is None or isinstance(base, _Delta):
        return None  # the base was replaced meanwhile
    listing, paths = base
    _apply(listing, paths, stored.changes)
    return (listing, paths), stored


def _derived(folder: Path, tree: str, latest: str, changes_since) -> tuple[Sorted, _Delta | None] | None:
    found = _resolve(folder, latest)
    if found is None:
        return None
    try:
        changes = {change.path: change.new for change in changes_since(latest)}
    except (TooManyChanges, KeyError):
        return None
    (listing, paths), delta = found
    _apply(listing, paths, changes)
    merged = _Delta(delta.base, {**delta.changes, **changes}) if delta is not None else _Delta(latest, changes)
    return (listing, paths), merged


def _apply(listing: Listing, paths: list[str], changes: dict[str, tuple[int, str] | None]) -> None:
    """Apply `changes` to a listing and its sorted paths, in place; a few hundred changes cost little next to
    sorting 50,000 paths again."""
    for path, entry in changes.items():
        if entry is None:
            if listing.pop(path, None) is not None:
                del paths[bisect.bisect_left(paths, path)]
        else:
            if path not in listing:
                bisect.insort(paths, path)
            listing[path] = entry


def _keep(folder: Path, tree: str, result: Sorted, delta: _Delta | None, latest: str | None) -> None:
    """Keep `tree`'s listing (its delta while small, else whole), point `latest` at it, and drop what no later
    tree derives from: the previous delta, or on a new whole listing the previous one and its base."""
    if delta is not None and len(delta.changes) <= MAX_DELTA:
        kept.write(folder / f"{_FORMAT}-{tree}", delta)
        obsolete = {latest} - {delta.base}
    else:
        # A listing is large (a few MB at 50,000 files): one whole is kept, beside the deltas on it.
        kept.write(folder / f"{_FORMAT}-{tree}", result)
        obsolete = {latest, delta.base if delta is not None else None}
    kept.write(folder / f"{_FORMAT}-latest", tree)
    for old in obsolete - {tree, None}:
        (folder / f"{_FORMAT}-{old}").unlink(missing_ok=True)


def _read(stored: Path):
    value = kept.read(stored)
    return None if value is kept.MISSING else value
