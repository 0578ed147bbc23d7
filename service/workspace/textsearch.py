"""Line-by-line regular-expression search in linear time, with RE2: the one dialect of every search."""

from collections.abc import Iterator

import re2

from service.workspace.entries import WorkspaceError

MAX_PATTERN_CHARS = 2_000
_PROGRAM_MEMORY = 8 << 20  # RE2's compiled-program budget; patterns that need more are refused


class InvalidPattern(WorkspaceError):
    """A pattern RE2 refuses (bad syntax, back-references, look-around, too large)."""


def compile_pattern(pattern: str, *, ignore_case: bool = False):
    """The RE2 program for `pattern`, matched per line over bytes; raise InvalidPattern if RE2 refuses it.

    `never_nl` keeps every match inside one line, as `grep` does, and `(?m)` makes `^` and `$` mean the
    line's start and end, so a whole file can be searched in one pass.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidPattern(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
    options = re2.Options()
    options.never_nl = True
    options.case_sensitive = not ignore_case
    options.log_errors = False
    options.max_mem = _PROGRAM_MEMORY
    try:
        encoded = pattern.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise InvalidPattern(f"the pattern is not valid Unicode text: {exc.reason} at character {exc.start}") from None
    try:
        return re2.compile(b"(?m)" + encoded, options)
    except re2.error as exc:
        raise InvalidPattern(
            f"invalid regular expression (RE2 syntax: no back-references or look-around): {_reason(exc)}"
        ) from None


def matching_lines(regex, data: bytes) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line without its end of line) of each line of `data` where `regex` matches."""
    pos, line, size = 0, 1, len(data)
    while pos <= size:
        found = regex.search(data, pos)
        if found is None:
            return
        start = data.rfind(b"\n", 0, found.start()) + 1
        line += data.count(b"\n", pos, start)
        end = data.find(b"\n", start)
        end = size if end < 0 else end
        if start < size or found.start() < size:
            yield line, data[start:end].removesuffix(b"\r")
        pos, line = end + 1, line + 1


def _reason(exc: Exception) -> str:
    text = exc.args[0] if exc.args else str(exc)
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
