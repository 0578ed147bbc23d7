"""Whole-tree listings (every non-directory entry) kept beside the repository by tree id, so a run does not
list a tree git has listed before; a new tree's is derived from the last one kept and the entries that differ,
which costs what changed, not what the tree holds. A derived tree keeps only those entries (a delta on the last
whole listing kept) until they grow past MAX_DELTA, so a run does not rewrite a listing of every file either.

A listing is kept compact (its paths as one string, modes and binary ids packed in arrays) and looked up by
bisection, so loading one builds no dictionary of every path: at 50,000 files it loads in a fraction of the
time a pickled dictionary takes.
"""

import bisect
import logging
from array import array
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from service.workspace import kept
from service.workspace.trees import TooManyChanges, TreeChange

log = logging.getLogger(__name__)

FOLDER = "copydesk-tree-cache"  # inside the repository's git dir, which only Copydesk writes files into
_FORMAT = "listing-v3"  # change when what is stored changes
MAX_DERIVED_CHANGES = 2000
MAX_DELTA = 2000  # entries a tree's delta holds before its listing is kept whole (a new base) instead
_MODES = "I"  # array type code of the modes: unsigned, at least 32 bits (git modes fit in 17)


class TreeListing:
    """Every non-directory entry of a tree: `paths` sorted, and each one's mode and binary object id at the same
    index of `modes` and `ids` (`width` bytes an id)."""

    def __init__(self, paths: list[str], modes: array, ids: bytearray, width: int) -> None:
        self.paths, self.modes, self.ids, self.width = paths, modes, ids, width

    @classmethod
    def from_entries(cls, entries: Mapping[str, tuple[int, str]], width: int) -> "TreeListing":
        """The listing of `entries` (path -> (mode, hex object id)); ids are `width` bytes."""
        paths = sorted(entries)
        modes = array(_MODES, (entries[path][0] for path in paths))
        ids = bytearray(bytes.fromhex("".join(entries[path][1] for path in paths)))
        return cls(paths, modes, ids, width)

    def __len__(self) -> int:
        return len(self.paths)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self.index(path) is not None

    def __getitem__(self, path: str) -> tuple[int, str]:
        found = self.get(path)
        if found is None:
            raise KeyError(path)
        return found

    def index(self, path: str) -> int | None:
        """Where `path` is in `paths`, or None."""
        i = bisect.bisect_left(self.paths, path)
        return i if i < len(self.paths) and self.paths[i] == path else None

    def get(self, path: str) -> tuple[int, str] | None:
        """The (mode, hex object id) of `path`, or None."""
        i = self.index(path)
        return None if i is None else self.entry(i)

    def entry(self, i: int) -> tuple[int, str]:
        """The (mode, hex object id) of the `i`th path."""
        return self.modes[i], self.ids[i * self.width : (i + 1) * self.width].hex()

    def items(self) -> Iterator[tuple[str, tuple[int, str]]]:
        """(path, (mode, hex object id)) for every entry, in path order."""
        return ((path, self.entry(i)) for i, path in enumerate(self.paths))

    def apply(self, changes: Mapping[str, tuple[int, str] | None]) -> None:
        """Apply `changes` (path -> entry, None where the path is gone) in place. Changed entries are rewritten
        where they are; added and removed ones are spliced in one pass that copies runs of untouched entries
        whole, so even a delta of thousands costs little next to listing the tree again."""
        spliced: list[tuple[int, int, str, int, bytes]] = []  # (index, 0 add before it / 1 remove it, ...)
        for path, entry in changes.items():
            i = bisect.bisect_left(self.paths, path)
            present = i < len(self.paths) and self.paths[i] == path
            if entry is None:
                if present:
                    spliced.append((i, 1, path, 0, b""))
            elif present:
                self.modes[i] = entry[0]
                self.ids[i * self.width : (i + 1) * self.width] = bytes.fromhex(entry[1])
            else:
                spliced.append((i, 0, path, entry[0], bytes.fromhex(entry[1])))
        if spliced:
            self._splice(sorted(spliced))

    def _splice(self, spliced: list[tuple[int, int, str, int, bytes]]) -> None:
        width = self.width
        paths: list[str] = []
        modes = array(_MODES)
        ids = bytearray()
        start = 0
        for i, removes, path, mode, raw in spliced:
            paths += self.paths[start:i]
            modes += self.modes[start:i]
            ids += self.ids[start * width : i * width]
            start = i
            if removes:
                start = i + 1
            else:
                paths.append(path)
                modes.append(mode)
                ids += raw
        paths += self.paths[start:]
        modes += self.modes[start:]
        ids += self.ids[start * width :]
        self.paths, self.modes, self.ids = paths, modes, ids

    # Pickled as one string of paths: one object to load instead of one per path; split on loading.
    def __getstate__(self) -> tuple[str, bytes, bytes, int]:
        return "\0".join(self.paths), self.modes.tobytes(), bytes(self.ids), self.width

    def __setstate__(self, state: tuple[str, bytes, bytes, int]) -> None:
        joined, modes, ids, width = state
        self.paths = joined.split("\0") if joined else []
        self.modes = array(_MODES)
        self.modes.frombytes(modes)
        self.ids, self.width = bytearray(ids), width


@dataclass(frozen=True)
class _Delta:
    """A tree's listing kept as the entries that differ from the whole listing kept for `base`."""

    base: str
    changes: dict[str, tuple[int, str] | None]  # path -> entry, None where the tree has no such file


def load_listing(
    git_dir: Path | str,
    tree: str,
    list_whole: Callable[[], TreeListing],
    changes_since: Callable[[str], list[TreeChange]],
) -> TreeListing:
    """The listing of `tree`: kept, else derived from the last kept (`changes_since(old tree)`, TooManyChanges
    or KeyError when it cannot tell), else `list_whole()`; then kept for the next run."""
    folder = Path(git_dir) / FOLDER
    found = _resolve(folder, tree)
    if found is not None:
        return found[0]
    latest = _read(folder / f"{_FORMAT}-latest")
    derived = _derived(folder, tree, latest, changes_since) if isinstance(latest, str) and latest != tree else None
    if derived is None:
        derived = list_whole(), None
    result, delta = derived
    _keep(folder, tree, result, delta, latest if isinstance(latest, str) else None)
    return result


def _resolve(folder: Path, tree: str) -> tuple[TreeListing, _Delta | None] | None:
    """`tree`'s listing as kept (whole, or its base's with its delta applied) and its delta; None when not kept."""
    stored = _read(folder / f"{_FORMAT}-{tree}")
    if not isinstance(stored, _Delta):
        return (stored, None) if isinstance(stored, TreeListing) else None
    base = _read(folder / f"{_FORMAT}-{stored.base}")
    if not isinstance(base, TreeListing):
        return None  # the base was replaced meanwhile
    base.apply(stored.changes)
    return base, stored


def _derived(folder: Path, tree: str, latest: str, changes_since) -> tuple[TreeListing, _Delta | None] | None:
    found = _resolve(folder, latest)
    if found is None:
        return None
    try:
        changes = {change.path: change.new for change in changes_since(latest)}
    except (TooManyChanges, KeyError):
        return None
    listing, delta = found
    listing.apply(changes)
    merged = _Delta(delta.base, {**delta.changes, **changes}) if delta is not None else _Delta(latest, changes)
    return listing, merged


def _keep(folder: Path, tree: str, result: TreeListing, delta: _Delta | None, latest: str | None) -> None:
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
