"""JSX tags in MDX pages that are opened and never closed (or closed and never opened), outside code."""

import bisect
import re
from dataclasses import dataclass

from service.agent.docsite.markdown import prose_lines, strip_code_spans

VOID_ELEMENTS = frozenset("area base br col embed hr img input link meta param source track wbr".split())

_TAG_START = re.compile(r"<(/?)([A-Za-z][\w.:-]*)?")
_AUTOLINK = re.compile(r"<(?:[A-Za-z][A-Za-z0-9+.-]*:[^\s<>]*|[^\s@<>]+@[^\s@<>]+)>")
_ESM = re.compile(r"^(?:import|export)\s")
_COMMENT = re.compile(r"\{/\*.*?\*/\}|<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class TagProblem:
    line: int
    message: str


@dataclass(frozen=True)
class _Tag:
    name: str
    line: int
    closing: bool
    self_closing: bool


def tag_problems(text: str) -> list[TagProblem]:
    """Opening tags without a matching closing tag and closing tags without an opening one, in line order."""
    source = _prose_only(text)
    starts = [0] + [m.end() for m in re.finditer("\n", source)]
    open_tags: list[_Tag] = []
    problems = []
    for tag in _tags(source, starts, problems):
        if tag.self_closing or tag.name.lower() in VOID_ELEMENTS:
            continue
        if not tag.closing:
            open_tags.append(tag)
            continue
        depth = next((i for i in range(len(open_tags) - 1, -1, -1) if open_tags[i].name == tag.name), None)
        if depth is None:
            problems.append(TagProblem(tag.line, f"</{tag.name}> closes a tag that is not open: remove it "
                                                 f"or add the opening <{tag.name}> before it"))
            continue
        problems += [_unclosed(t) for t in open_tags[depth + 1:]]
        del open_tags[depth:]
    problems += [_unclosed(t) for t in open_tags]
    return sorted(problems, key=lambda p: p.line)


def _unclosed(tag: _Tag) -> TagProblem:
    name = tag.name
    return TagProblem(tag.line, f"<{name}> is never closed: add </{name}> after its content, or end the tag with "
                                "/> if it has none")


def _prose_only(text: str) -> str:
    # Code, front matter and ESM lines become blank so offsets still map to the page's line numbers.
    lines = text.splitlines()
    kept = [""] * len(lines)
    in_esm = False
    for number, line in prose_lines(text):
        if _ESM.match(line) or (in_esm and line.strip()):
            in_esm = True
            continue
        in_esm = False
        kept[number - 1] = strip_code_spans(line)
    joined = "\n".join(kept)
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), joined)


def _tags(source: str, starts: list[int], problems: list[TagProblem]):
    position = 0
    while (index := source.find("<", position)) != -1:
        autolink = _AUTOLINK.match(source, index)
        if autolink:
            position = autolink.end()
            continue
        match = _TAG_START.match(source, index)
        closing, name = match.group(1) == "/", match.group(2) or ""
        after = match.end()
        if not name and not source.startswith(">", after):
            position = index + 1  # a lone "<", as in `a < b`
            continue
        end, self_closing = _tag_end(source, after)
        line = bisect.bisect_right(starts, index)
        if end is None:
            problems.append(TagProblem(line, f"the tag <{closing * '/'}{name} never ends: finish it with > or />"))
            return
        yield _Tag(name, line, closing, self_closing)
        position = end


def _tag_end(source: str, index: int) -> tuple[int | None, bool]:
    # Skips attribute strings and {expressions}, where ">" does not end the tag.
    while index < len(source):
        char = source[index]
        if source.startswith("/>", index):
            return index + 2, True
        if char == ">":
            return index + 1, False
        if char in "\"'":
            close = source.find(char, index + 1)
            index = len(source) if close == -1 else close + 1
        elif char == "{":
            index = _skip_braces(source, index)
        elif char == "<":
            return None, False  # a new tag starts before this one ended
        else:
            index += 1
    return None, False


def _skip_braces(source: str, index: int) -> int:
    depth = 0
    while index < len(source):
        char = source[index]
        if char in "\"'`":
            close = source.find(char, index + 1)
            index = len(source) if close == -1 else close + 1
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        index += 1
        if depth == 0:
            return index
    return index
