"""Whole-tree listings (every non-directory entry) kept beside the repository by tree id, so a run does not
list a tree git has listed before; a new tree's is derived from the last one kept and the entries that differ,
which costs what changed, not what the tree holds."""

import logging
from collections.abc import Callable
from pathlib import Path

from service.workspace import kept
from service.workspace.trees import TooManyChanges, TreeChange

log = logging.getLogger(__name__)

FOLDER = "copydesk-tree-cache"  # inside the repository's git dir, which only Copydesk writes files into
_FORMAT = "listing-v1"  # change when what is stored changes
MAX_DERIVED_CHANGES = 2000

Listing = dict[str, tuple[int, str]]  # path -> (mode, object id)


def load_listing(
    git_dir: Path | str, tree: str, list_whole: Callable[[], Listing], changes_since: Callable[[str], list[TreeChange]]
) -> tuple[Listing, list[str]]:
    """The listing of `tree` and its paths sorted: kept, else derived from the last kept (`changes_since(old
    tree)`, TooManyChanges or KeyError when it cannot tell), else `list_whole()`; then kept for the next run."""
    folder = Path(git_dir) / FOLDER
    stored = _read(folder / f"{_FORMAT}-{tree}")
    if stored is not None:
        return stored
    previous = _read(folder / f"{_FORMAT}-latest")
    result = _derived(folder, tree, previous, changes_since) if isinstance(previous, str) else None
    if result is None:
        listing = list_whole()
        result = (listing, sorted(listing))
    kept.write(folder / f"{_FORMAT}-{tree}", result)
    kept.write(folder / f"{_FORMAT}-latest", tree)
    if isinstance(previous, str) and previous != tree:
        # A listing is large (a few MB at 50,000 files) and the next tree derives from this one: one is kept.
        (folder / f"{_FORMAT}-{previous}").unlink(missing_ok=True)
    return result


def _derived(folder: Path, tree: str, previous: str, changes_since) -> tuple[Listing, list[str]] | None:
    if previous == tree:
        return None
    earlier = _read(folder / f"{_FORMAT}-{previous}")
    if earlier is None:
        return None
    try:
        changes = changes_since(previous)
    except (TooManyChanges, KeyError):
        return None
    listing, paths = earlier
    came_or_went = False
    for change in changes:
        if change.new is None:
            listing.pop(change.path, None)
            came_or_went = True
        else:
            came_or_went = came_or_went or change.old is None
            listing[change.path] = change.new
    return listing, sorted(listing) if came_or_went else paths


def _read(stored: Path):
    value = kept.read(stored)
    return None if value is kept.MISSING else value
