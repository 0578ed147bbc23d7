"""The anchors a page offers: heading slugs in the styles docs sites use, explicit `{#id}`s and HTML/JSX ids."""

import html
import re
import unicodedata
from collections import Counter

from service.agent.docsite.markdown import prose_lines

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_EXPLICIT_ID = re.compile(r"\s*\{:?\s*[^}]*?#([^\s}]+)[^}]*\}\s*$")
_ATTR_ID = re.compile(r"\b(?:id|name)\s*=\s*(?:\"([^\"]+)\"|'([^']+)')")
# Components (Mintlify, Docusaurus) that render their title or name as an anchor.
_COMPONENT_TITLE = re.compile(r"<[A-Z][\w.]*\s[^>]*?\b(?:title|param|path|query|body|header|field)"
                              r"\s*=\s*(?:\"([^\"]+)\"|'([^']+)')")
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])?")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_EMPHASIS = re.compile(r"\*\*|__|~~|[*`]")
# Content pulled in at build time (mkdocstrings, pymdownx.snippets, MDX imports, Jinja/Sphinx includes) brings
# anchors the page's own text does not show.
_INCLUDES = re.compile(r"^(?::::\s|.*--8<--|.*\{%\s*include|\.\.\s+include::"
                       r"|import\s.*\bfrom\s+['\"][^'\"]+\.mdx?['\"])", re.MULTILINE)
_NOT_PARAGRAPH = ("-", "*", ">", "<", "|")  # a setext underline only makes a heading of a paragraph line


def github_slug(text: str) -> str:
    """GitHub's (and github-slugger's: Docusaurus, Mintlify) slug: lowercase, punctuation dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def python_markdown_slug(text: str, *, keep_unicode: bool = False) -> str:
    """Python-Markdown's `toc` slug (MkDocs): ASCII-folded unless `keep_unicode`, runs of spaces and - to one -."""
    if not keep_unicode:
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def heading_text(raw: str) -> str:
    """The text a heading renders: links and images become their text, tags, code marks and emphasis go."""
    text = _IMAGE_OR_LINK.sub(lambda m: m.group(1), raw)
    text = _TAG.sub("", text)
    return html.unescape(_EMPHASIS.sub("", text)).strip()


def headings(text: str) -> list[tuple[str, str | None]]:
    """(heading text, explicit id or None) for each ATX and setext heading outside code, in order."""
    found, previous = [], None
    for _number, line in prose_lines(text):
        atx = _ATX.match(line)
        setext = _SETEXT.match(line)
        if atx:
            found.append(_split_explicit_id(atx.group(2) or ""))
            previous = None
            continue
        if setext and previous is not None and previous.strip() and not previous.lstrip().startswith(_NOT_PARAGRAPH):
            found.append(_split_explicit_id(previous.strip()))
            previous = None
            continue
        previous = line
    return found


def anchor_ids(text: str) -> set[str]:
    """Every anchor the page offers, lowercased: each heading slug style with its duplicate suffixes, and ids."""
    ids: set[str] = set()
    styles = (
        (github_slug, "-"),
        (lambda t: python_markdown_slug(t), "_"),
        (lambda t: python_markdown_slug(t, keep_unicode=True), "_"),
        (lambda t: github_slug(t.replace("_", " ").strip()).strip("-"), "-"),  # `_word_` rendered as emphasis
    )
    parsed = headings(text)
    for slugify, separator in styles:
        seen: Counter[str] = Counter()
        for raw, explicit in parsed:
            if explicit:
                ids.add(explicit.lower())
                continue
            slug = slugify(heading_text(raw))
            ids.add(f"{slug}{separator}{seen[slug]}" if seen[slug] else slug)
            seen[slug] += 1
    for _number, line in prose_lines(text):
        ids |= {(m.group(1) or m.group(2)).lower() for m in _ATTR_ID.finditer(line)}
        ids |= {github_slug(m.group(1) or m.group(2)) for m in _COMPONENT_TITLE.finditer(line)}
        explicit = _EXPLICIT_ID.search(line)
        if explicit:
            ids.add(explicit.group(1).lower())
    return ids


def includes_other_content(text: str) -> bool:
    """Whether the page pulls in content at build time, so its anchors cannot all be known from its text."""
    return _INCLUDES.search(text) is not None


def _split_explicit_id(raw: str) -> tuple[str, str | None]:
    match = _EXPLICIT_ID.search(raw)
    if match is None:
        return raw, None
    return raw[:match.start()], match.group(1)
