"""Markdown for the dashboard's pages, with raw HTML shown as text and unsafe link schemes refused."""

from markdown_it import MarkdownIt
from markupsafe import Markup

# CommonMark with tables and strikethrough; "html": False escapes every raw HTML block and inline tag, and
# markdown-it's own link validation drops javascript:, vbscript:, file: and data: URLs (bar safe images).
_RENDERER = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)


def render_markdown(text: str | None) -> Markup:
    """Safe HTML for `text`."""
    return Markup(_RENDERER.render(_without_comments(text or "")))


def _without_comments(text: str) -> str:
    """`text` without its closed HTML comments, hidden as GitHub hides them (Copydesk marks its part of a
    description with them); one pass of `find`, so no input makes it slower than linear."""
    kept, at = [], 0
    while (start := text.find("<!--", at)) != -1 and (end := text.find("-->", start + 4)) != -1:
        kept.append(text[at:start])
        at = end + 3
    kept.append(text[at:])
    return "".join(kept)
