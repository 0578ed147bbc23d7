"""Links in Markdown/MDX pages: finding them outside code and resolving relative ones to repository paths."""

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

from service.agent.docsite.markdown import prose_lines, strip_code_spans

_INLINE_LINK = re.compile(r"\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+[\"'(][^)\n]*)?\s*\)")
_REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]\n]+\]:\s*(<[^>\n]*>|\S+)")
_HREF = re.compile(r"<a\s[^>]*?\bhref\s*=\s*(?:\"([^\"]*)\"|'([^']*)')", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Link:
    line: int
    target: str


def extract_links(text: str) -> list[Link]:
    """The link targets in a Markdown/MDX page (inline, reference definitions, `<a href>`), outside code."""
    links = []
    for number, line in prose_lines(text):
        line = strip_code_spans(line)
        targets = [m.group(1) for m in _INLINE_LINK.finditer(line)]
        targets += [m.group(1) for m in _REFERENCE_DEF.finditer(line)]
        targets += [m.group(1) if m.group(1) is not None else m.group(2) for m in _HREF.finditer(line)]
        links += [Link(number, t.strip("<>")) for t in targets]
    return links


def resolve(page: str, target: str) -> str | None:
    """The repository path a relative link on `page` points to; "" for the root, None outside the repository.

    Raises ValueError for links the check does not follow (external, site-absolute, anchors, templates).
    """
    if not target or _SCHEME.match(target) or target.startswith(("#", "/")) or "{" in target:
        raise ValueError(target)
    path = unquote(re.split(r"[#?]", target, maxsplit=1)[0])
    if not path or "\0" in path:
        raise ValueError(target)
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
    if joined == ".." or joined.startswith("../"):
        return None
    return "" if joined == "." else joined


def fragment(target: str) -> str | None:
    """The anchor a link target names after `#` (decoded), or None when it names none or a text fragment."""
    if "#" not in target or "{" in target:
        return None
    anchor = unquote(target.split("#", 1)[1])
    if not anchor or anchor.startswith(":~:"):
        return None
    return anchor


def is_external(target: str) -> bool:
    """Whether a link or navigation target is a URL (with a scheme or protocol-relative) rather than a path."""
    return bool(_SCHEME.match(target)) or target.startswith("//")
