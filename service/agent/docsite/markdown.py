"""Reading Markdown/MDX source: the front matter block and the lines that are prose rather than code."""

import re
from dataclasses import dataclass
from typing import Iterator

# Any indentation: fences inside list items and JSX components are indented past CommonMark's three spaces.
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_FRONT_MATTER_OPEN = re.compile(r"^---[ \t]*$")
_FRONT_MATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$")


@dataclass(frozen=True)
class FrontMatterBlock:
    """The YAML between a page's leading `---` lines; `end_line` is None when the block is never closed."""

    text: str
    start_line: int  # the line of the opening `---`
    end_line: int | None


def front_matter_block(text: str) -> FrontMatterBlock | None:
    """The page's front matter block, or None when the page does not start with `---`."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or not _FRONT_MATTER_OPEN.match(lines[0]):
        return None
    for index in range(1, len(lines)):
        if _FRONT_MATTER_CLOSE.match(lines[index]):
            return FrontMatterBlock("\n".join(lines[1:index]), 1, index + 1)
    return FrontMatterBlock("\n".join(lines[1:]), 1, None)


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based number, line) for every line outside front matter and fenced code blocks."""
    block = front_matter_block(text)
    skip_until = block.end_line if block and block.end_line else 0
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        if number <= skip_until:
            continue
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
                    and not opened.group(2).strip():
                fence = None
            continue
        if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence = opened.group(1)
            continue
        yield number, line


def strip_code_spans(line: str) -> str:
    """The line with inline code spans removed."""
    return _CODE_SPAN.sub("", line)
