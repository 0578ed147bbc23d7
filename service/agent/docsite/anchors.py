"""The anchors a page offers: heading slugs in the styles docs sites use, explicit `{#id}`s and ids."""

import html
import re
import unicodedata
from collections import Counter

_BRACKET_ID = re.compile(r"\s*\[#([\w-]+)\]\s*$")
# `{#id}`, attr_list's `{ #id .class }` and its key form `{ id=value }` / `{ id="value" }`.
_EXPLICIT_ID = re.compile(r"""\s*\{:?\s*[^}]*?(?:#|(?<![\w-])id=["']?)([^\s}"']+)[^}]*\}\s*$""")
# Content pulled in at build time (mkdocstrings, pymdownx.snippets, MDX imports, Jinja/Sphinx includes) brings
# anchors the page's own text does not show.
# `<include>` is Fumadocs' remark-include; `{{< readfile` / `{{% include` Hugo shortcodes.
_INCLUDES = re.compile(
    r"^(?::::\s|.*--8<--|.*\{%\s*include|\.\.\s+include::|\s*<include[\s>]"
    r"|.*\{\{[<%]\s*(?:readfile|include)\b"
    r"|import\s.*\bfrom\s+['\"][^'\"]+\.mdx?['\"])",
    re.MULTILINE,
)


def github_slug(text: str) -> str:
    """GitHub's (and github-slugger's: Docusaurus, Mintlify) slug: lowercase, punctuation dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def mintlify_slug(text: str) -> str:
    """Mintlify's heading ids as its own links use them: dots become -, `:` and `$` are kept."""
    return re.sub(r"[^\w\-:$]", "", text.strip().lower().replace(".", "-").replace(" ", "-"))


_VITEPRESS_SPECIAL = re.compile(r"[\s~`!@#$%^&*()\-_+=\[\]{}|\\;:\"'\u201c\u201d\u2018\u2019<>,.?/]+")


def vitepress_slug(text: str) -> str:
    """VitePress's (@mdit-vue) heading ids: accents and controls dropped, runs of punctuation and spaces to one -,
    a leading digit prefixed with _."""
    text = re.sub(r"[\u0300-\u036f]", "", unicodedata.normalize("NFKD", text))
    text = _VITEPRESS_SPECIAL.sub("-", re.sub(r"[\x00-\x1f]", "", text)).strip("-")
    return re.sub(r"^(\d)", r"_\1", text).lower()


def python_markdown_slug(text: str, *, keep_unicode: bool = False) -> str:
    """Python-Markdown's `toc` slug (MkDocs): ASCII-folded unless `keep_unicode`, runs of spaces and - to one -."""
    if not keep_unicode:
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchor_set(headings: list[tuple[str, str | None]], ids: set[str]) -> frozenset[str]:
    """Every anchor a page offers, lowercased: each heading slug style with its duplicate suffixes, and `ids`.

    `headings` are (text as rendered, explicit id or None) in page order.
    """
    anchors: set[str] = set(ids)
    styles = (
        (github_slug, "-"),
        (lambda t: python_markdown_slug(t), "_"),
        (lambda t: python_markdown_slug(t, keep_unicode=True), "_"),
        (lambda t: github_slug(t.replace("_", " ").strip()).strip("-"), "-"),  # `_word_` rendered as emphasis
        (mintlify_slug, "-"),
        (vitepress_slug, "-"),
    )
    for slugify, separator in styles:
        seen: Counter[str] = Counter()
        for raw, explicit in headings:
            if explicit:
                anchors.add(explicit.lower())
                continue
            slug = slugify(html.unescape(raw).strip())
            anchors.add(f"{slug}{separator}{seen[slug]}" if seen[slug] else slug)
            seen[slug] += 1
    return frozenset(anchors)


def includes_other_content(text: str) -> bool:
    """Whether the page pulls in content at build time, so its anchors cannot all be known from its text."""
    return _INCLUDES.search(text) is not None


def split_explicit_id(raw: str) -> tuple[str, str | None]:
    """A heading's text and its explicit id (`## Title {#id}`, attr_list's `{ #id .class }`, Fumadocs'
    `## Title [#id]`), if any."""
    match = _EXPLICIT_ID.search(raw) or _BRACKET_ID.search(raw)
    if match is None:
        return raw, None
    return raw[: match.start()], match.group(1)
