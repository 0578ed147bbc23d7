"""Sorted path lists read by bisection: the paths under a folder are one run of the list, so a folder's files are
counted, skipped or picked out at the cost of its boundaries, not of each path."""

import bisect
from collections.abc import Iterator


def run_end(paths: list[str], prefix: str, lo: int = 0, hi: int | None = None) -> int:
    """Where the run of sorted `paths` starting at `lo` whose paths start with `prefix` ends (before `hi`)."""
    end = len(paths) if hi is None else hi
    return bisect.bisect_left(paths, True, lo=lo, hi=end, key=lambda path: not path.startswith(prefix))


def starting_with(paths: list[str], prefix: str) -> list[str]:
    """The sorted `paths` that start with `prefix` (a new list)."""
    start = bisect.bisect_left(paths, prefix)
    return paths[start : run_end(paths, prefix, start)]


def entries_below(paths: list[str], inside: str, lo: int = 0, hi: int | None = None) -> Iterator[tuple[str, int, int]]:
    """What lies directly in the folder `inside` ("" or a folder and "/") in sorted `paths`, from the first path
    under it at or after `lo`, before `hi`: (name, start, end) per file (its own index, end = start + 1) and per
    subfolder (its name with "/", and the run of its paths)."""
    end = len(paths) if hi is None else hi
    i = bisect.bisect_left(paths, inside, lo=lo, hi=end)
    while i < end and paths[i].startswith(inside):
        name, sep, _ = paths[i][len(inside) :].partition("/")
        after = run_end(paths, f"{inside}{name}/", i, end) if sep else i + 1
        yield name + sep, i, after
        i = after
