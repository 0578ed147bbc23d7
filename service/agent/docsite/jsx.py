"""A tolerant tokenizer of HTML and JSX tags in page text: names, attributes and lines, never executing anything."""

import bisect
import re
from dataclasses import dataclass, field

from service.agent.docsite.limits import MAX_DEPTH, Uncheckable

_TAG_START = re.compile(r"<(/?)([A-Za-z][\w.:-]*)?")
_AUTOLINK = re.compile(r"<(?:[A-Za-z][A-Za-z0-9+.-]*:[^\s<>]*|[^\s@<>]+@[^\s@<>]+)>")
_ATTR_NAME = re.compile(r"[^\s=/>{}\"']+")
_SPACE = re.compile(r"\s*")
_LITERAL_EXPRESSION = re.compile(r"""\{\s*(?:"([^"\\]*)"|'([^'\\]*)'|`([^`$\\]*)`)\s*\}\Z""")


@dataclass(frozen=True)
class Tag:
    name: str  # "" for a fragment <> or </>
    line: int  # 1-based, where the tag starts
    closing: bool
    self_closing: bool
    attrs: dict[str, str | None] = field(default_factory=dict)  # literal values; None for expressions and flags


@dataclass(frozen=True)
class Unfinished:
    """A tag that never ends (`<Card title="x"` and then the text goes on)."""

    name: str
    line: int
    closing: bool


def scan_tags(source: str, first_line: int = 1) -> tuple[list[Tag], Unfinished | None]:
    """The tags in `source` in order, stopping at the first tag that never ends; lone `<` and autolinks are text."""
    starts = [0] + [m.end() for m in re.finditer("\n", source)]
    tags: list[Tag] = []
    position = 0
    while (index := source.find("<", position)) != -1:
        autolink = _AUTOLINK.match(source, index)
        if autolink:
            position = autolink.end()
            continue
        match = _TAG_START.match(source, index)
        assert match is not None  # "<" alone matches: the name is optional
        closing, name = match.group(1) == "/", match.group(2) or ""
        after = match.end()
        if not name and not source.startswith(">", after):
            position = index + 1  # a lone "<", as in `a < b`
            continue
        line = first_line + bisect.bisect_right(starts, index) - 1
        end, self_closing, attrs = _tag_body(source, after)
        if end is None:
            return tags, Unfinished(name, line, closing)
        tags.append(Tag(name, line, closing, self_closing, attrs))
        position = end
    return tags, None


def _skip_space(source: str, index: int) -> int:
    match = _SPACE.match(source, index)
    assert match is not None  # \s* matches the empty string too
    return match.end()


def _tag_body(source: str, index: int) -> tuple[int | None, bool, dict[str, str | None]]:
    # Attributes up to the tag's end; ">" inside attribute strings and {expressions} does not end it.
    attrs: dict[str, str | None] = {}
    while index < len(source):
        index = _skip_space(source, index)
        if source.startswith("/>", index):
            return index + 2, True, attrs
        if index >= len(source):
            break
        char = source[index]
        if char == ">":
            return index + 1, False, attrs
        if char == "<":
            return None, False, attrs  # a new tag starts before this one ended
        if char == "{":
            index = _skip_braces(source, index)  # a spread {...props}
            continue
        if char in "\"'/":
            index += 1
            continue
        name_match = _ATTR_NAME.match(source, index)
        if name_match is None:  # a stray "=" or "}" where a name should be
            index += 1
            continue
        name = name_match.group()
        index = _skip_space(source, name_match.end())
        value = None
        if source.startswith("=", index):
            index = _skip_space(source, index + 1)
            value, index = _attr_value(source, index)
        attrs.setdefault(name.lower() if name.isascii() else name, value)
    return None, False, attrs


def _attr_value(source: str, index: int) -> tuple[str | None, int]:
    if index >= len(source):
        return None, index
    char = source[index]
    if char in "\"'":
        close = source.find(char, index + 1)
        if close == -1:
            return None, len(source)
        return source[index + 1 : close], close + 1
    if char == "{":
        end = _skip_braces(source, index)
        literal = _LITERAL_EXPRESSION.match(source[index:end])
        return (next(g for g in literal.groups() if g is not None) if literal else None), end
    match = re.compile(r"[^\s>]+").match(source, index)
    if match is None:
        return None, index
    value = match.group()
    if value.endswith("/") and source.startswith(">", match.end()):
        value = value[:-1]
        return value, match.end() - 1
    return value, match.end()


def _skip_braces(source: str, index: int) -> int:
    depth = 0
    while index < len(source):
        char = source[index]
        if char in "\"'`":
            close = source.find(char, index + 1)
            index = len(source) if close == -1 else close + 1
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth > MAX_DEPTH:
            raise Uncheckable(f"JSX expressions nested deeper than {MAX_DEPTH} levels")
        index += 1
        if depth == 0:
            return index
    return index
