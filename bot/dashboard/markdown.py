"""Markdown for the dashboard's pages, with raw HTML shown as text and unsafe link schemes refused."""

from markdown_it import MarkdownIt
from markupsafe import Markup

# CommonMark with tables and strikethrough; "html": False escapes every raw HTML block and inline tag, and
# markdown-it's own link validation drops javascript:, vbscript:, file: and data: URLs (bar safe images).
_RENDERER = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"])


def render_markdown(text: str | None) -> Markup:
    """Safe HTML for `text`."""
    return Markup(_RENDERER.render(text or ""))
