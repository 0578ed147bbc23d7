"""Reading Markdown/MDX source: the front matter block between the leading `---` lines."""

import re
from dataclasses import dataclass

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
