"""Files Copydesk keeps in a repository's cache folder (per-tree results, listings, parsed pages): written whole or
not at all, and read back as MISSING when absent or unreadable, so a torn entry is worked out again."""

import logging
import os
import pickle
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

MISSING = object()  # what `read` gives for an entry that is not there (or cannot be read)


def read(stored: Path) -> object:
    """The value kept at `stored`, or MISSING."""
    try:
        with open(stored, "rb") as source:
            return pickle.load(source)
    except FileNotFoundError:
        return MISSING
    except Exception:  # a torn or outdated entry: worked out again and rewritten
        log.warning("the kept entry %s is unreadable; working it out again", stored.name)
        return MISSING


def write(stored: Path, value: object) -> None:
    """Keep `value` at `stored`; a failure to write is logged, never raised (the entry is only a cache)."""
    # Written whole under a temporary name, then renamed: a concurrent run reads the old entry or the new one.
    try:
        stored.parent.mkdir(exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=stored.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, stored)
    except OSError:
        log.warning("could not keep an entry beside %s", stored.parent.parent, exc_info=True)
