"""The raw content of a commit object, with author and committer lines formatted as `git commit-tree` does."""

import time
from dataclasses import dataclass

from service.workspace.entries import WorkspaceError


@dataclass(frozen=True)
class Identity:
    name: str
    email: str


# What git's ident code strips from both ends of a name or email ("crud"); `\n`, `<` and `>` go everywhere.
_CRUD = frozenset(chr(c) for c in range(33)) | frozenset(".,:;<>\"\\'")


def _without_crud(text: str) -> str:
    start, end = 0, len(text)
    while start < end and text[start] in _CRUD:
        start += 1
    while end > start and text[end - 1] in _CRUD:
        end -= 1
    return "".join(c for c in text[start:end] if c not in "\n<>")


def ident_line(who: Identity, when: int, utc_offset: int) -> bytes:
    """`Name <email> seconds +hhmm`, as git writes an author or committer; WorkspaceError for a name that is
    empty once cleaned (git refuses those too)."""
    name = _without_crud(who.name)
    if not name:
        raise WorkspaceError(f"the identity name {who.name!r} is empty once cleaned up as git does")
    sign = "+" if utc_offset >= 0 else "-"
    minutes = abs(utc_offset) // 60
    return f"{name} <{_without_crud(who.email)}> {when} {sign}{minutes // 60:02d}{minutes % 60:02d}".encode()


def commit_object(
    tree: str,
    parents: list[str],
    message: str,
    author: Identity,
    committer: Identity,
    when: int | None = None,
    utc_offset: int | None = None,
) -> bytes:
    """A commit's raw content, by default dated now in the local time zone (as `git commit-tree` dates it)."""
    when = int(time.time()) if when is None else when
    utc_offset = time.localtime(when).tm_gmtoff if utc_offset is None else utc_offset
    lines = [b"tree " + tree.encode("ascii")] + [b"parent " + parent.encode("ascii") for parent in parents]
    lines += [
        b"author " + ident_line(author, when, utc_offset),
        b"committer " + ident_line(committer, when, utc_offset),
    ]
    return b"\n".join(lines) + b"\n\n" + message.encode("utf-8")
