"""What a page says, parsed once: its links, anchors, labels, front matter, toctrees and JSX tag problems.

Markdown goes through markdown-it-py (CommonMark, with mdit-py-plugins for front matter, footnotes and MyST);
MDX's JSX through the tolerant tag tokenizer in `jsx`; reStructuredText through docutils (see `rst`).
"""

import enum
import re
from dataclasses import dataclass, field
from functools import cache

from markdown_it import MarkdownIt
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.myst_blocks import myst_block_plugin
from mdit_py_plugins.myst_role import myst_role_plugin

from service.agent.docsite.anchors import anchor_set, github_slug, includes_other_content, split_explicit_id
from service.agent.docsite.blocks import open_containers
from service.agent.docsite.frontmatter import FrontMatterError, parse_front_matter
from service.agent.docsite.jsx import Tag, scan_tags
from service.agent.docsite.limits import MAX_PAGE_BYTES, Uncheckable, check_size
from service.agent.docsite.mdx import TagProblem, blank_comments, esm_end, unbalanced_tags


class Mode(str, enum.Enum):
    """How a page is parsed."""

    MARKDOWN = "md"  # CommonMark with raw HTML (MkDocs, plain Markdown)
    MDX = "mdx"  # MDX: JSX components, no indented code (Docusaurus, Mintlify, Starlight)
    MYST = "myst"  # MyST Markdown (Sphinx): roles, targets and directives in fences
    RST = "rst"  # reStructuredText (Sphinx)
    FRONT_MATTER = "front-matter"  # the front matter alone (a cache entry, not a page parse)


class LinkKind(str, enum.Enum):
    URL = "url"  # a Markdown link, image or HTML/JSX href/src: resolved by the framework's routing
    DOC = "doc"  # a Sphinx document name ({doc}, :doc:, toctree-free cross-reference)
    REF = "ref"  # a Sphinx label (:ref:, {ref})
    FILE = "file"  # a file a directive reads or links (image, include, download), relative to the page
    OPTION = "option"  # a Sphinx command-line option (:option:), named by program and option string


@dataclass(frozen=True)
class Link:
    line: int
    target: str
    kind: LinkKind = LinkKind.URL
    # For an :option: reference, the program `.. program::` had set where it is written ("" for none).
    program: str = ""


@dataclass(frozen=True)
class Toctree:
    line: int
    entry: str  # as written
    glob: bool


@dataclass
class ParsedPage:
    """Everything the docs check needs from one page; `uncheckable` says why the page could not be read."""

    links: list[Link] = field(default_factory=list)
    anchors: frozenset[str] = frozenset()
    labels: frozenset[str] = frozenset()  # Sphinx labels the page defines, lowercased
    includes: bool = False  # pulls in content at build time, so its anchors cannot all be known
    front_matter: dict = field(default_factory=dict)
    front_matter_error: FrontMatterError | None = None
    tag_problems: list[TagProblem] = field(default_factory=list)
    toctrees: list[Toctree] = field(default_factory=list)
    uncheckable: str | None = None
    unknown_names: list[tuple[int, str]] = field(default_factory=list)  # reST `Name`_ the page does not define
    interpreted: list[Link] = field(default_factory=list)  # reST `text` in the default role (conf.py's `default_role`)
    options: frozenset[tuple[str, str]] = frozenset()  # Sphinx `.. option::` targets: (program or "", option)


LINK_ATTRIBUTES = ("href", "src", "to")  # <a href>, <img src>, Docusaurus <Link to>
ID_ATTRIBUTES = ("id", "name")
# Components (Mintlify, Docusaurus, Starlight) that render their title or name as an anchor.
TITLE_ATTRIBUTES = ("title", "name", "param", "path", "query", "body", "header", "field")
_ATTR_LIST_ID = re.compile(r"""\{:?[ \t]*(?:[^{}\n]*?[ \t])?(?:#|id=["']?)([^\s{}#"']+)[^{}\n]*\}""")
_ESM = re.compile(r"^(?:import|export)\s")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>|<>|</>")
_TITLED = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.DOTALL)
_DIRECTIVE_INFO = re.compile(r"^\{([\w:-]+)\}\s*(.*)$")
_FILE_DIRECTIVES = ("include", "literalinclude", "image", "figure")
# Sphinx's Cmdoption: an option string, then its arguments (`-o FILE`, `--level=N`, `--color[=WHEN]`).
_OPTION_DESC = re.compile(r"((?:/|--|-|\+)?[^\s=]+)(=?\s*.*)")
# MyST directives whose body is not Markdown (code, math, diagrams, data).
_LITERAL_MYST = frozenset(
    {
        "code",
        "code-block",
        "code-cell",
        "sourcecode",
        "literalinclude",
        "include",
        "math",
        "mermaid",
        "graphviz",
        "raw",
        "csv-table",
        "jupyter-execute",
        "ipython",
        "doctest",
        "testcode",
        "testoutput",
        "plot",
        "autofunction",
        "autoclass",
        "automodule",
        "prompt",
        "plantuml",
        "bibliography",
        "autosummary",
        "automethod",
        "autodata",
        "autoattribute",
        "exec",
        "program-output",
        "command-output",
        "literal",
    }
)


def parse_page(text: str, mode: Mode) -> ParsedPage:
    """Parse one page; a page past a cap comes back with `uncheckable` set instead of raising."""
    try:
        check_size(text, MAX_PAGE_BYTES)
        if mode is Mode.RST:
            from service.agent.docsite.rst import parse_rst  # docutils is imported only for Sphinx sites

            return parse_rst(text)
        return _parse_markdown(text, mode)
    except Uncheckable as exc:
        return ParsedPage(uncheckable=str(exc))
    except RecursionError:
        return ParsedPage(uncheckable="too complex to check (nested too deeply)")


@cache
def _parser(mode: Mode) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": mode is not Mode.MDX}).enable(["table", "strikethrough"])
    md.use(front_matter_plugin).use(footnote_plugin)
    if mode is Mode.MDX:
        md.disable("code")  # MDX has no indented code: indented text inside components is Markdown
    if mode is Mode.MYST:
        md.use(myst_role_plugin).use(myst_block_plugin).use(colon_fence_plugin)
    md.normalizeLink = lambda url: url  # type: ignore[method-assign]  # targets as written (not percent-encoded), so reports quote the page
    return md


@dataclass
class _Context:
    """What earlier text of a MyST page sets for later text: the program `{program}` names."""

    program: str = ""


def _parse_markdown(text: str, mode: Mode, context: _Context | None = None) -> ParsedPage:
    page = ParsedPage(includes=includes_other_content(text))
    context = context or _Context()
    try:
        page.front_matter = parse_front_matter(text)
    except FrontMatterError as exc:
        page.front_matter_error = exc
    tokens = _parser(mode).parse(open_containers(text) if mode is Mode.MARKDOWN else text)
    if mode is Mode.MDX:
        # MDX reads the Markdown inside indented JSX components as if it were not indented.
        # Comments are dropped first: links inside them are never built.
        code = _code_lines(tokens)
        lines = blank_comments(text, code).split("\n")
        tokens = _parser(mode).parse("\n".join(line if n in code else line.lstrip() for n, line in enumerate(lines)))
    headings: list[tuple[str, str | None]] = []
    ids: set[str] = set()
    labels: set[str] = set()
    code_lines: set[int] = set()
    for index, token in enumerate(tokens):
        if token.type in ("fence", "code_block", "colon_fence", "front_matter", "math_block") and token.map:
            code_lines.update(range(token.map[0], token.map[1]))
            if token.type == "fence" and mode is Mode.MARKDOWN:  # superfences: ``` { .sh #id }
                ids.update(m.group(1).lower() for m in _ATTR_LIST_ID.finditer(token.info))
            if token.type in ("fence", "colon_fence") and mode is Mode.MYST:
                labels |= _myst_directive(page, token, context)
        elif token.type == "myst_target":
            labels.add(token.content.strip().lower())
        elif token.type == "html_block" and token.map:
            _html(page, ids, scan_tags(token.content, token.map[0] + 1)[0])
        elif token.type == "heading_open":
            headings.append(split_explicit_id(_inline_text(tokens[index + 1])))
        elif (
            token.type == "paragraph_open"
            and mode is Mode.MDX
            and token.level == 0
            and token.map
            and _ESM.match(tokens[index + 1].content)
        ):
            code_lines.update(range(token.map[0], esm_end(lines, token.map[0], token.map[1])))
        if token.type == "inline":
            _inline(page, ids, labels, token, context)
    if mode is Mode.MDX:
        tags, unfinished = scan_tags(_prose(text, code_lines), expressions=True)
        _html(page, ids, tags)
        page.tag_problems = unbalanced_tags(tags, unfinished)
    page.anchors = anchor_set(headings, ids)
    page.labels = frozenset(labels)
    return page


def _code_lines(tokens) -> set[int]:
    return {n for t in tokens if t.type in ("fence", "front_matter") and t.map for n in range(*t.map)}


def _inline(page: ParsedPage, ids: set[str], labels: set[str], token, context: _Context) -> None:
    line = token.map[0] + 1 if token.map else 1
    for child in token.children or []:
        if child.type in ("softbreak", "hardbreak"):
            line += 1
        elif child.type == "link_open" and child.markup != "linkify":
            page.links.append(Link(line, str(child.attrs.get("href", ""))))
        elif child.type == "image":
            page.links.append(Link(line, str(child.attrs.get("src", ""))))
        elif child.type == "html_inline":
            _html(page, ids, scan_tags(child.content, line)[0])
            line += child.content.count("\n")
        elif child.type == "text":
            ids.update(m.group(1).lower() for m in _ATTR_LIST_ID.finditer(child.content))
            line += child.content.count("\n")
        elif child.type == "myst_role":
            _myst_role(page, child.meta.get("name", ""), child.content, line, context.program)


def _inline_text(token) -> str:
    # The text a heading renders: text (JSX tags in MDX text dropped) and code as written, not images or raw HTML.
    return "".join(
        _TAG.sub("", c.content) if c.type == "text" else c.content
        for c in token.children or []
        if c.type in ("text", "code_inline")
    )


def _html(page: ParsedPage, ids: set[str], tags: list[Tag]) -> None:
    for tag in tags:
        if tag.closing:
            continue
        for name in LINK_ATTRIBUTES:
            value = tag.attrs.get(name)
            if value and (name != "to" or tag.name[:1].isupper()):
                page.links.append(Link(tag.line, value.strip()))
        ids.update(value.lower() for name in ID_ATTRIBUTES if (value := tag.attrs.get(name)))
        if tag.name[:1].isupper():
            titles = [value for name in TITLE_ATTRIBUTES if (value := tag.attrs.get(name))]
            # Mintlify's fields also answer to their dotted names with dashes (`api.params` -> #api-params).
            ids.update(github_slug(t) for title in titles for t in (title, title.replace(".", "-")))


def _prose(text: str, code_lines: set[int]) -> str:
    # Code, front matter and ESM become blank lines, so tag lines still match the page's.
    lines = blank_comments(text, code_lines).split("\n")
    return "\n".join("" if number in code_lines else _CODE_SPAN.sub("", line) for number, line in enumerate(lines))


def _myst_role(page: ParsedPage, name: str, content: str, line: int, program: str) -> None:
    name = name.split(":")[-1] if name.startswith("std:") else name
    titled = _TITLED.match(content)
    written = (titled.group(2) if titled else content).strip()
    target = written.lstrip("~!")
    if name == "doc":
        page.links.append(Link(line, target, LinkKind.DOC))
    elif name in ("ref", "numref"):
        page.links.append(Link(line, target, LinkKind.REF))
    elif name == "download":
        page.links.append(Link(line, target, LinkKind.FILE))
    elif name in ("option", "cmdoption") and not written.startswith("!"):  # `!` writes it without a link
        page.links.append(Link(line, target, LinkKind.OPTION, program))


def _myst_directive(page: ParsedPage, token, context: _Context) -> set[str]:
    """Record what a MyST directive links to; its body, when it is Markdown (`{note}`, `{glossary}`, tabs,
    dropdowns, …), is parsed like the page. Returns the labels the body defines."""
    match = _DIRECTIVE_INFO.match(token.info.strip())
    if not match:
        return set()
    name, argument = match.group(1), match.group(2).strip()
    first = token.map[0] + 1
    if name in _FILE_DIRECTIVES and argument:
        page.links.append(Link(first, argument, LinkKind.FILE))
    if name == "toctree":
        page.toctrees += myst_toctree(token.content, first + 1)
        return set()
    if name.removeprefix("std:") == "program":  # as `.. program::`: the program of the options after it
        context.program = "" if argument == "None" else re.sub(r"\s+", "-", argument)
        return set()
    if name.removeprefix("std:") in ("option", "cmdoption"):
        page.options |= {(context.program, option) for option in option_names(argument)}
    if name in _LITERAL_MYST or name.split(":")[-1] in _LITERAL_MYST:
        return set()
    if name == "eval-rst":
        from service.agent.docsite.rst import parse_rst

        inner = parse_rst(token.content)
    else:
        inner = _parse_markdown(_without_options(token.content), Mode.MYST, context)
        page.options |= inner.options
    page.links += [Link(link.line + first, link.target, link.kind, link.program) for link in inner.links]
    page.toctrees += [Toctree(entry.line + first, entry.entry, entry.glob) for entry in inner.toctrees]
    return set(inner.labels)


def option_names(signatures: str) -> list[str]:
    """The option strings `.. option::` (or MyST's `{option}`) defines: one signature a line, each a list of
    `-o FILE, --output FILE`; `--color[=WHEN]` defines `--color`, as Sphinx's std domain records them."""
    names = []
    for signature in signatures.split("\n"):
        for written in signature.split(", "):
            match = _OPTION_DESC.match(written.strip())
            if match:
                name, rest = match.groups()
                names.append(name[:-1] if name.endswith("[") and rest.endswith("]") else name)
    return names


def _without_options(body: str) -> str:
    # A directive's options (`:key: value` lines or a `---` YAML block at its top) become blank lines.
    lines = body.split("\n")
    index = 0
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is not None:
            return "\n" * (end + 1) + "\n".join(lines[end + 1 :])
    while index < len(lines) and re.match(r"^\s*:[\w-]+:", lines[index]):
        index += 1
    return "\n" * index + "\n".join(lines[index:])


def myst_toctree(body: str, first_line: int) -> list[Toctree]:
    """The entries of a MyST toctree's body (options as `:key: value` lines or a `---` YAML block)."""
    entries, in_yaml, glob, seen_content = [], False, False, False
    for offset, raw in enumerate(body.split("\n")):
        stripped = raw.strip()
        if stripped == "---" and (in_yaml or not seen_content):
            in_yaml = not in_yaml
            seen_content = True
            continue
        if not stripped:
            continue
        seen_content = True
        option = stripped if stripped.startswith(":") else f":{stripped}" if in_yaml else None
        if option is not None:
            glob = glob or option.replace(" ", "") in (":glob:", ":glob:true")
            continue
        entries.append((first_line + offset, stripped))
    return [Toctree(line, entry, glob) for line, entry in entries]
