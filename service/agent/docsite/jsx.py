"""A tolerant tokenizer of HTML and JSX tags in page text: names, attributes and lines, never executing anything."""

import bisect
import re
from dataclasses import dataclass, field

from service.agent.docsite.limits import MAX_DEPTH, Uncheckable

_TAG_START = re.compile(r"<(/?)([A-Za-z][\w.:-]*)?")
_AUTOLINK = re.compile(r"<(?:[A-Za-z][A-Za-z0-9+.-]*:[^\s<>]*|[^\s@<>]+@[^\s@<>]+)>")
_ATTR_NAME = re.compile(r"[^\s=/>{}\"']+")
_SPACE = re.compile(r"\s*")
_TAG_STOPS = re.compile("<")
_TEXT_STOPS = re.compile("[<{]")  # MDX text: tags and expressions
_EXPRESSION_STOPS = re.compile("[<{}\"'`]")  # inside an expression: JSX, nested braces, strings
# Elements without children (the void elements of HTML): never closed, inside an expression or not.
VOID_ELEMENTS = frozenset("area base br col embed hr img input link meta param source track wbr".split())
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


def scan_tags(source: str, first_line: int = 1, expressions: bool = False) -> tuple[list[Tag], Unfinished | None]:
    """The tags in `source` in order, stopping at the first tag that never ends; lone `<` and autolinks are text.

    With `expressions` (MDX prose), `{…}` are JavaScript expressions: there a `<` opens JSX only where an
    expression may start (after `(`, `=>`, `&&`, `?`, …), as in `{items.map(x => <Card/>)}`; elsewhere it is a
    comparison or a type argument (`i < max`, `Array<string>`), and quotes there delimit strings.
    """
    starts = [0] + [m.end() for m in re.finditer("\n", source)]
    tags: list[Tag] = []
    # Open expressions (None) and, inside them, the JSX elements whose children are being read (their names).
    stack: list[str | None] = []
    position = 0
    while True:
        in_expression = bool(stack) and stack[-1] is None
        stop = (_EXPRESSION_STOPS if in_expression else _TEXT_STOPS if expressions else _TAG_STOPS).search(
            source, position
        )
        if stop is None:
            if None in stack:  # a `{` never closed: not MDX after all (or a broken page), so braces are text
                return scan_tags(source, first_line)
            return tags, None
        index, char = stop.start(), stop.group()
        position = index + 1
        if char == "{":
            stack.append(None)
            if len(stack) > MAX_DEPTH:
                raise Uncheckable(f"JSX expressions nested deeper than {MAX_DEPTH} levels")
            continue
        if char == "}":
            stack.pop()
            continue
        if char != "<":
            position = _string_end(source, index)
            continue
        if in_expression and not _expression_may_start(source, index):
            continue  # `a < b`, `Array<string>`
        autolink = _AUTOLINK.match(source, index)
        if autolink and not in_expression:
            position = autolink.end()
            continue
        match = _TAG_START.match(source, index)
        assert match is not None  # "<" alone matches: the name is optional
        closing, name = match.group(1) == "/", match.group(2) or ""
        after = match.end()
        if not name and not source.startswith(">", after):
            continue  # a lone "<", as in `a < b`
        line = first_line + bisect.bisect_right(starts, index) - 1
        end, self_closing, attrs = _tag_body(source, after)
        if end is None:
            return tags, Unfinished(name, line, closing)
        tags.append(Tag(name, line, closing, self_closing, attrs))
        position = end
        if stack and not self_closing:
            _children(stack, name, closing)


def _children(stack: list[str | None], name: str, closing: bool) -> None:
    # Inside an expression, an element's children are JSX text until its closing tag; void elements have none.
    if not closing:
        if name.lower() not in VOID_ELEMENTS:
            stack.append(name)
    elif stack[-1] == name:
        stack.pop()


def _expression_may_start(source: str, index: int) -> bool:
    before = source[max(0, index - 200) : index].rstrip()
    return not before or before[-1] in "([{,?:=>&|!;" or before.endswith("return")


def _string_end(source: str, index: int) -> int:
    close = source.find(source[index], index + 1)
    return len(source) if close == -1 else close + 1


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
        if char in "\"'`" and not (char == "'" and index and source[index - 1].isalnum()):
            # An apostrophe after a letter is JSX text (`<p>Don't</p>` in an attribute), not a string.
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
