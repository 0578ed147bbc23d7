"""Gitignore-style path globs, matched with RE2 (linear time, like every pattern from the model)."""

import functools
import re
from collections.abc import Callable

import re2

# Rules: `*` and `?` stay within one path segment, `**` spans segments, a pattern without `/` matches
# at any depth (`*.md`), a leading `/` anchors it to the root, and a pattern that matches a directory
# matches everything under it (`docs`, `guides/*`).


def anchored(pattern: str) -> str:
    """`pattern` relative to the root: a leading `/` dropped, `**/` put before a pattern without `/`."""
    if pattern.startswith("/"):
        return pattern.lstrip("/")
    return pattern if "/" in pattern.rstrip("/") else "**/" + pattern


@functools.lru_cache(maxsize=256)
def compile_glob(pattern: str):
    """An RE2 program that fully matches the paths (files or directories) `pattern` names."""
    body = anchored(pattern).rstrip("/")
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if body.startswith("**/", i) and (i == 0 or body[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i) and (i == 0 or body[i - 1] == "/") and i + 2 == len(body):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (end := body.find("]", i + 2)) != -1:
            inner = body[i + 1 : end]
            negate = inner[0] in "!^"
            inner = "".join("\\" + ch if ch in "[]\\&~|^" else ch for ch in inner[negate:])
            out.append("[" + "^" * negate + inner + "]")
            i = end + 1
        elif c == "\\" and i + 1 < len(body):
            out.append(re.escape(body[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    options = re2.Options()
    options.log_errors = False
    options.dot_nl = True  # a path may hold a newline; `**` spans it like any other character
    try:
        return re2.compile("".join(out), options)
    except re2.error as exc:
        raise ValueError(f"not a usable glob: {pattern!r}") from exc


# A pattern of the commonest shape, `docs/**/*.md`, `*.md` or `docs/*.md` (literal folders, then `**/` or not,
# then `*` and a literal end), is tested with string methods: calling RE2 from Python costs more than the match.
_SIMPLE = re.compile(r"((?:[^*?\[\\/]*/)*)(\*\*/)?\*([^*?\[\\/]*)")


def matches(patterns: list[str], path: str) -> bool:
    """Whether `path` or one of its leading directories matches any of `patterns`."""
    return matcher(tuple(patterns))(path)


@functools.lru_cache(maxsize=256)
def matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """A test of whether a path or one of its leading directories matches any of `patterns` (as `matches`)."""
    if not patterns:
        return lambda path: False
    simple = _SIMPLE.fullmatch(anchored(patterns[0]).rstrip("/")) if len(patterns) == 1 else None
    if simple is not None:
        compile_glob(patterns[0])  # refused as it would be otherwise
        return _simple_matcher(simple[1], bool(simple[2]), simple[3])
    # One RE2 program per call instead of one per pattern and leading directory: a pattern matches the path or
    # a leading directory exactly when it matches the part before some `/` (or the whole path).
    bodies = "|".join(f"(?:{compile_glob(pattern).pattern})" for pattern in patterns)
    options = re2.Options()
    options.log_errors = False
    options.dot_nl = True
    try:
        program = re2.compile(f"(?:{bodies})(?:/.*)?", options)
    except re2.error as exc:
        raise ValueError(f"not usable globs: {patterns!r}") from exc
    return lambda path: program.fullmatch(path) is not None


def _simple_matcher(folders: str, deep: bool, end: str) -> Callable[[str], bool]:
    """The test of `folders` + (`**/` when `deep`) + `*` + `end`: the path (or a leading directory) starts with
    `folders`, and then, deep, some name (the path's last or a directory's) ends with `end`; else the very next
    name does."""
    start = len(folders)
    if deep:
        below = end + "/"
        return lambda path: (
            path.startswith(folders)
            and ((path.endswith(end) and len(path) - start >= len(end)) or path.find(below, start) != -1)
        )

    def next_name_ends(path: str) -> bool:
        if not path.startswith(folders):
            return False
        slash = path.find("/", start)
        return path.endswith(end, start, slash if slash != -1 else len(path))

    return next_name_ends


def literal_prefix(pattern: str) -> str:
    """What every path `pattern` matches starts with (the anchored pattern up to its first wildcard or escape),
    so a sorted listing is searched from there rather than whole."""
    body = anchored(pattern).rstrip("/")
    cut = min((i for i in (body.find(c) for c in "*?[\\") if i != -1), default=len(body))
    return body[:cut]
