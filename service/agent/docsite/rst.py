"""reStructuredText pages through docutils, with Sphinx's roles and directives read but never run.

No `conf.py` is executed and no file is read: includes are recorded as links, not inserted.
"""

import io
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Directive, Parser, directives, roles, states
from docutils.parsers.rst.languages import en as english
from docutils.statemachine import string2lines
from docutils.utils import new_document

from service.agent.docsite.pages import Link, LinkKind, ParsedPage, Toctree, option_names

ROLE_KINDS = {"doc": LinkKind.DOC, "ref": LinkKind.REF, "numref": LinkKind.REF, "download": LinkKind.FILE}
# Sphinx directives whose body is reStructuredText: parsed so the links inside them count.
NESTED_DIRECTIVES = (
    "versionadded",
    "versionchanged",
    "deprecated",
    "versionremoved",
    "seealso",
    "only",
    "tab",
    "tabs",
    "tab-set",
    "tab-item",
    "card",
    "grid",
    "grid-item",
    "grid-item-card",
    "dropdown",
    "glossary",
    "hlist",
    "centered",
    "currentmodule",
    "module",
    "envvar",
    "describe",
    "object",
    "index",
    "highlight",
    "productionlist",
    "autosummary",
)
LITERAL_DIRECTIVES = (
    "code-block",
    "sourcecode",
    "jupyter-execute",
    "ipython",
    "doctest",
    "testcode",
    "testoutput",
    "autofunction",
    "autoclass",
    "automodule",
    "automethod",
    "autodata",
    "autoattribute",
    "autoexception",
    "click",
    "tabularcolumns",
    "graphviz",
    "mermaid",
    "plot",
    "math",
    "prompt",
    "plantuml",
    "uml",
    "tikz",
    "code-tab",
    "bokeh-plot",
    "exec",
    "runblock",
    "program-output",
    "command-output",
    "jinja",
    "raw",
    "kroki",
    "blockdiag",
    "seqdiag",
    "ditaa",
    "d2",
    "code-cell",
)
FILE_DIRECTIVES = ("include", "literalinclude")
OPTION_DIRECTIVES = ("option", "cmdoption", "std:option", "std:cmdoption")
OPTION_ROLES = ("option", "std:option")
_SPACES = re.compile(r"\s+")
_ESCAPE = re.compile(r"\\(.?)", re.DOTALL)
# An option directive as docutils reads one (name in any case; tabs and form feeds are spaces to it).
_OPTION_DIRECTIVE = re.compile(r"\.\.[ \t\v\f]+(?:std:)?(?:cmd)?option[ \t\v\f]*::(.*)", re.IGNORECASE)


class _LenientDirectives(dict):
    """docutils' directive table, answering every name it does not know (Sphinx's `.. data::`, `.. py:function::`,
    extensions' directives) with a directive whose body is parsed, so the links inside them count."""

    def __contains__(self, key) -> bool:
        return super().__contains__(key) or key not in english.directives  # those names load docutils' own

    def __missing__(self, key):
        return _Nested


class _AnyOptions(dict):
    """An option spec that accepts every option with any value."""

    def __bool__(self) -> bool:
        return True

    def __contains__(self, key) -> bool:
        return True

    def __getitem__(self, key):
        return directives.unchanged

    def get(self, key, default=None):
        return directives.unchanged


class _LazyStates(dict):
    """A docutils state machine's states, each made when first used. docutils makes all sixteen for every nested
    parse (each list, list item and directive body), a third of a page's parse, where one parse uses a few; a
    state is the same object whenever it is made, so the parse is unchanged."""

    def __init__(self, machine, state_classes) -> None:
        super().__init__()
        self.machine = machine
        self.classes = {state_class.__name__: state_class for state_class in state_classes}

    def __contains__(self, name) -> bool:
        return name in self.classes

    def __missing__(self, name):
        state = self[name] = self.classes[name](self.machine, self.machine.debug)
        if getattr(self.machine, "memo", None) is not None:
            state.runtime_init()  # made during a run: set up as the run's start set up the others
        return state


_plain = False  # within plain_docutils()
_inliners = threading.local()  # an inliner holds the document it is parsing: one per thread


def _inliner() -> states.Inliner:
    """This thread's docutils inline parser, with its patterns built once: docutils builds them again for every
    document (half a millisecond) from the settings, which never change here."""
    if not hasattr(_inliners, "inliner"):
        inliner = states.Inliner()
        inliner.init_customizations(_setup())
        # Not a subclass: docutils builds the patterns from the attributes of the inliner's exact class.
        inliner.init_customizations = lambda settings: None  # type: ignore[method-assign]
        _inliners.inliner = inliner
    return _inliners.inliner


def _add_states_lazily(machine, state_classes) -> None:
    machine.states = _LazyStates(machine, state_classes)


@contextmanager
def plain_docutils() -> Iterator[None]:
    """docutils as released: every state made up front, inline patterns built for each document (the parity test
    and bench compare the two)."""
    global _plain
    _setup()
    states.RSTState.nested_sm_cache.clear()  # pooled nested machines hold lazy states
    del states.RSTStateMachine.add_states
    _plain = True
    try:
        yield
    finally:
        _plain = False
        states.RSTState.nested_sm_cache.clear()
        states.RSTStateMachine.add_states = _add_states_lazily  # type: ignore[method-assign,assignment]


class _Recorded(nodes.Inline, nodes.TextElement):
    """A cross-reference or file the page names: `kind` and `target` attributes, with the line."""


class _Nested(Directive):
    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions()

    def run(self):
        node = nodes.container()
        for argument in self.arguments:  # `.. versionadded:: 2.0 text` takes inline markup in its argument
            node += self.state.inline_text(argument, self.lineno)[0]
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


class _Literal(_Nested):
    def run(self):
        return []


class _File(_Nested):
    def run(self):
        node = _Recorded(kind=LinkKind.FILE.value, target=" ".join(self.arguments).strip())
        node.line = self.lineno
        return [node]


class _Toctree(_Nested):
    def run(self):
        node = nodes.container(classes=["copydesk-toctree"], glob="glob" in self.options)
        node["entries"] = [
            (self.content_offset + 1 + index, line.strip()) for index, line in enumerate(self.content) if line.strip()
        ]
        return [node]


class _OptionTarget(nodes.Inline, nodes.TextElement):
    """The options one `.. option::` defines: a `program` ("" for none) and its `names`."""


class _Program(Directive):
    """`.. program:: name` sets the program of the options and :option: references after it in the page."""

    required_arguments = 1
    final_argument_whitespace = True

    def run(self):
        name = _SPACES.sub("-", self.arguments[0].strip())
        self.state.document.copydesk_program = "" if name == "None" else name
        return []


class _Option(_Nested):
    """`.. option:: -o FILE, --output FILE`, one signature a line: each option string is a target of the
    current program, as Sphinx's std domain records it."""

    def run(self):
        names = option_names("\n".join(self.arguments))
        target = _OptionTarget(program=getattr(self.state.document, "copydesk_program", ""), names=names)
        target.line = self.lineno
        node = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, node)
        return [target, node]


def _option_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    target = nodes.unescape(text)
    if target.endswith(">") and "<" in target:
        target = target[target.rindex("<") + 1 : -1]
    if target.startswith("!"):
        return [], []  # written not to link
    node = _Recorded(
        rawtext,
        text,
        kind=LinkKind.OPTION.value,
        target=target.strip().lstrip("~"),
        program=getattr(inliner.document, "copydesk_program", ""),
    )
    node.line = lineno
    return [node], []


def _role(name, rawtext, text, lineno, inliner, options=None, content=None):
    target = nodes.unescape(text)
    if target.endswith(">") and "<" in target:
        target = target[target.rindex("<") + 1 : -1]
    node = _Recorded(rawtext, text, kind=ROLE_KINDS[name.split(":")[-1]].value, target=target.strip().lstrip("~!"))
    node.line = lineno
    return [node], []


@cache
def _setup():
    for name in ROLE_KINDS:
        roles.register_local_role(name, _role)
        roles.register_local_role(f"std:{name}", _role)
    for name in NESTED_DIRECTIVES:
        directives.register_directive(name, _Nested)
    for name in LITERAL_DIRECTIVES:
        directives.register_directive(name, _Literal)
    for name in FILE_DIRECTIVES:
        directives.register_directive(name, _File)
    directives.register_directive("toctree", _Toctree)
    for name in ("program", "std:program"):
        directives.register_directive(name, _Program)
    for name in OPTION_DIRECTIVES:
        directives.register_directive(name, _Option)
    for name in OPTION_ROLES:
        roles.register_local_role(name, _option_role)
    table = getattr(directives, "_directives", None)
    if isinstance(table, dict) and not isinstance(table, _LenientDirectives):
        # docutils looks its table up by module global; there is no public hook for unknown directives.
        directives._directives = _LenientDirectives(table)
    # No public hook either for how a state machine makes its states; only this module parses reST in the service.
    states.RSTStateMachine.add_states = _add_states_lazily
    settings = get_default_settings(Parser)
    settings.report_level = 5
    settings.halt_level = 5
    settings.warning_stream = io.StringIO()
    settings.file_insertion_enabled = False
    settings.raw_enabled = False
    settings.character_level_inline_markup = False
    return settings


def parse_rst(text: str) -> ParsedPage:
    """Parse a reStructuredText page (raises RecursionError for absurd nesting, which the caller reports)."""
    settings = _setup()
    settings.warning_stream = io.StringIO()
    document = new_document("<page>", settings)
    Parser(inliner=None if _plain else _inliner()).parse(text, document)
    page = ParsedPage()
    labels: set[str] = set()
    anchors: set[str] = set()
    names: set[str] = set()
    named_references: list[tuple[int, str]] = []
    options: set[tuple[str, str]] = set()
    for node in document.findall(nodes.Element):
        names.update(node.get("names", ()))
        if isinstance(node, nodes.reference) and node.get("refname") and not node.get("refuri"):
            named_references.append((_line(node), node["refname"]))
        if isinstance(node, _Recorded):
            page.links.append(Link(_line(node), node["target"], LinkKind(node["kind"]), node.get("program", "")))
        elif isinstance(node, _OptionTarget):
            options.update((node["program"], name) for name in node["names"])
        elif isinstance(node, nodes.title_reference):
            page.interpreted.append(Link(_line(node), node.astext().strip()))
        elif isinstance(node, nodes.reference) and node.get("refuri"):
            page.links.append(Link(_line(node), node["refuri"]))
        elif isinstance(node, nodes.image) and node.get("uri"):
            page.links.append(Link(_line(node), node["uri"], LinkKind.FILE))
        elif isinstance(node, nodes.target) and not node.get("refuri") and node.get("names"):
            labels.update(name.lower() for name in node["names"])
        elif isinstance(node, nodes.container) and "copydesk-toctree" in node["classes"]:
            page.toctrees += [Toctree(line, entry, node["glob"]) for line, entry in node["entries"]]
        elif isinstance(node, nodes.section):
            anchors.update(node["ids"])
    page.labels = frozenset(labels)
    page.options = frozenset(options)
    page.anchors = frozenset(anchors | labels)
    if not any(
        link.kind is LinkKind.FILE and link.target.endswith((".rst", ".txt", ".inc", ".rest")) for link in page.links
    ):
        # `Title`_ resolves within the page; an included file could define the name, so pages with one are not judged.
        page.unknown_names = [(line, name) for line, name in named_references if name not in names]
    page.front_matter = _fields(document)
    return page


def names_text(text: str) -> str:
    """The page's text as docutils reads target names: its lines as docutils splits them (tabs expanded),
    backslash escapes undone (an escaped space or line end dropped), in `name_form`; see `may_define`."""
    lines = string2lines(text, tab_width=_setup().tab_width, convert_whitespace=True)
    return name_form(_ESCAPE.sub(_unescaped, "\n".join(lines)))


def may_define(names: str, label: str) -> bool:
    """Whether a page whose `names_text` is `names` may define `label` (lowercase), so that it is worth parsing.
    A label is the name of a target without a URI, and docutils makes those of `.. _name:` and `.. _`name`:`,
    inline `_`name``, and `` `name <alias_>`_ `` or `` `<name_>`_ ``; a reference (`:ref:`name``, `pytest_name`)
    is none."""
    form = name_form(label)
    return any(written in names for written in (f".. _{form}", f"_`{form}", f"`{form} <", f"`<{form}"))


def option_signatures(text: str) -> str:
    """The signatures of the page's option directives: the rest of each `.. option::` line and the lines after it
    up to a blank line, where docutils takes a directive's arguments from. Every option string the page defines is
    written there, so a page where the option is not need not be parsed for it."""
    found = []
    lines = text.splitlines()  # the lines as docutils splits them
    for index, line in enumerate(lines):
        match = _OPTION_DIRECTIVE.search(line)
        if match:
            found.append(match.group(1))
            for following in lines[index + 1 :]:
                if not following.strip():
                    break
                found.append(following)
    return "\n".join(found)


def name_form(name: str) -> str:
    """A name lowercased with whitespace runs made one space, as docutils names targets; final sigma made plain,
    the one letter whose lowercase depends on the letters around it."""
    return nodes.fully_normalize_name(name).replace("ς", "σ")


def _unescaped(match: re.Match) -> str:
    return "" if match.group(1) in (" ", "\n") else match.group(1)


def _fields(document) -> dict:
    # Page-wide metadata (`:orphan:`, `:nosearch:`) is a field list at the top, which docutils makes a docinfo.
    found = {}
    for node in document.findall(nodes.field):
        if (
            node.parent is document
            or isinstance(node.parent, nodes.docinfo)
            or (isinstance(node.parent, nodes.field_list) and node.parent.parent is document)
        ):
            found[node[0].astext().strip().lower()] = node[1].astext().strip() or True
    return found


def _line(node) -> int:
    while node is not None:
        if node.line:
            return node.line
        node = node.parent
    return 1
