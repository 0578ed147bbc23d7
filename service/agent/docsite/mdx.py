"""JSX tags in MDX pages that are opened and never closed (or closed and never opened)."""

import re
from dataclasses import dataclass

from service.agent.docsite.jsx import VOID_ELEMENTS, Tag, Unfinished


@dataclass(frozen=True)
class TagProblem:
    line: int
    message: str


def unbalanced_tags(tags: list[Tag], unfinished: Unfinished | None) -> list[TagProblem]:
    """Opening tags without a matching closing tag, closing tags without an opening one and a tag that never
    ends, in line order; `tags` come from `jsx.scan_tags` over the page's prose."""
    open_tags: list[Tag] = []
    problems = []
    for tag in tags:
        if tag.self_closing or tag.name.lower() in VOID_ELEMENTS:
            continue
        if not tag.closing:
            open_tags.append(tag)
            continue
        depth = next((i for i in range(len(open_tags) - 1, -1, -1) if open_tags[i].name == tag.name), None)
        if depth is None:
            problems.append(
                TagProblem(
                    tag.line,
                    f"</{tag.name}> closes a tag that is not open: remove it or add the opening <{tag.name}> before it",
                )
            )
            continue
        problems += [_unclosed(t) for t in open_tags[depth + 1 :]]
        del open_tags[depth:]
    problems += [_unclosed(t) for t in open_tags]
    if unfinished is not None:
        problems.append(
            TagProblem(
                unfinished.line,
                f"the tag <{unfinished.closing * '/'}{unfinished.name} never ends: finish it with > or />",
            )
        )
    return sorted(problems, key=lambda p: p.line)


def _unclosed(tag: Tag) -> TagProblem:
    name = tag.name
    return TagProblem(
        tag.line, f"<{name}> is never closed: add </{name}> after its content, or end the tag with /> if it has none"
    )


_COMMENT = re.compile(r"\{/\*.*?\*/\}|<!--.*?-->", re.DOTALL)  # MDX comments; Docusaurus reads `<!-- -->` as one
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_BRACKETS = re.compile(r"""[(\[{)\]}"'`]|//[^\n]*|/\*.*?\*/""", re.DOTALL)


def blank_comments(text: str, code_lines: set[int]) -> str:
    """`text` with its comments (outside code) turned into spaces, line breaks kept: the build never reads
    what they hold, links included."""
    lines = text.split("\n")
    masked = "\n".join(
        " " * len(line) if number in code_lines else _CODE_SPAN.sub(lambda m: " " * len(m.group()), line)
        for number, line in enumerate(lines)
    )
    chars = list(text)
    for match in _COMMENT.finditer(masked):
        for index in range(match.start(), match.end()):
            if chars[index] != "\n":
                chars[index] = " "
    return "".join(chars)


def esm_end(lines: list[str], start: int, end: int) -> int:
    """Where an `import`/`export` block that starts at line `start` ends (exclusive): after `end`, the end of its
    paragraph, while its brackets are still open (MDX reads a statement on across blank lines), else `end`."""
    depth = 0
    for number in range(start, len(lines)):
        depth = _bracket_depth(lines[number], depth)
        if number + 1 >= end and depth <= 0:
            return number + 1
    return end  # never closed: a broken block, read as the paragraph it is


def _bracket_depth(line: str, depth: int) -> int:
    # Strings and comments are skipped; an apostrophe after a letter is JSX text (`<p>Don't</p>`), not a string.
    position = 0
    while match := _BRACKETS.search(line, position):
        char, index = match.group(), match.start()
        position = match.end()
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char in '"`' or (char == "'" and not (index and line[index - 1].isalnum())):
            close = line.find(char, index + 1)
            position = len(line) if close == -1 else close + 1
    return depth
