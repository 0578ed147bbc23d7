"""Parsed reStructuredText pages kept beside the repository by blob id, so a run (a freshly forked process) reads
what an earlier run parsed instead of running docutils again: a blob id names its content, so an entry never goes
stale; only a change to the parsing code or to docutils does, hence both in every name."""

import functools
import hashlib
from importlib import metadata
from pathlib import Path

from service.agent.docsite.pages import Mode, ParsedPage
from service.agent.tree_cache import CACHE_FOLDER, code_fingerprint, read_stored, write_stored

# Only parses that cost more than reading a file back (docutils takes 5 to 30 ms a page; Markdown a millisecond).
STORED_MODES = frozenset({Mode.RST})


@functools.cache
def _fingerprint() -> str:
    digest = hashlib.sha256(code_fingerprint().encode())
    for package in ("docutils", "markdown-it-py", "mdit-py-plugins"):
        try:
            digest.update(f"{package}={metadata.version(package)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{package}=none".encode())
    return digest.hexdigest()[:16]


def _stored(git_dir, blob: str, mode: Mode) -> Path:
    return Path(git_dir) / CACHE_FOLDER / f"page-{_fingerprint()}-{mode.value}-{blob}"


def load(git_dir, blob: str, mode: Mode) -> ParsedPage | None:
    """The page parsed from `blob` by an earlier run on this repository, or None."""
    if mode not in STORED_MODES:
        return None
    found = read_stored(_stored(git_dir, blob, mode))
    return found if isinstance(found, ParsedPage) else None


def keep(git_dir, blob: str, mode: Mode, page: ParsedPage) -> None:
    """Keep the page parsed from `blob` for later runs on this repository (modes worth it only)."""
    if mode in STORED_MODES:
        write_stored(_stored(git_dir, blob, mode), page)


def forget_all(git_dir) -> int:
    """Delete every stored page of the repository at `git_dir` (benches measuring a truly cold check); how many."""
    stored = list((Path(git_dir) / CACHE_FOLDER).glob("page-*"))
    for path in stored:
        path.unlink(missing_ok=True)
    return len(stored)
