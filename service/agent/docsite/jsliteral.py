"""The literal value a small JavaScript/TypeScript/JSON config exports; anything computed becomes `OPAQUE`.

It reads object, array and string literals and the `const` names they refer to; it never runs code.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

from service.agent.docsite.limits import MAX_CONFIG_BYTES, MAX_DEPTH, Uncheckable, check_size

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<template>`(?:[^`\\]|\\.)*`)
  | (?P<word>[A-Za-z_$][\w$]*|\d[\w.]*)
  | (?P<spread>\.\.\.)
  | (?P<punct>\S)
""",
    re.DOTALL | re.VERBOSE,
)
_CLOSERS = {"{": "}", "[": "]", "(": ")"}
MAX_RESOLVED = 200_000
_CONSTANTS = {"true": True, "false": False, "null": None, "undefined": None}


@dataclass(frozen=True)
class Str:
    """A string literal and the line it is on."""

    value: str
    line: int


class _Opaque:
    def __repr__(self) -> str:
        return "OPAQUE"


OPAQUE = _Opaque()  # a value the reader cannot know without running the code


@dataclass(frozen=True)
class _Name:
    name: str


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    line: int


@dataclass
class Module:
    """What a module's top level says literally: its export, its `const` bindings and its calls' first arguments."""

    exported: object
    bindings: dict
    calls: dict  # callee name -> the literal first argument of its first call
    imports: dict  # name -> the module specifier it is imported from

    def import_of(self, value) -> str | None:
        """The specifier a name in a call argument was imported from, if `value` is such a name."""
        return self.imports.get(value.name) if isinstance(value, _Name) else None

    def call_argument(self, callee: str):
        """The first argument of the first `callee(...)` call, names resolved, else OPAQUE."""
        return _resolve(self.calls.get(callee, OPAQUE), self.bindings, depth=0)

    def binding(self, name: str):
        """The value of the top-level `const name` (exported or not), names resolved, else OPAQUE."""
        return _resolve(self.bindings.get(name, OPAQUE), self.bindings, depth=0)


def exported_value(source: str):
    """The value a module exports (`module.exports =`, `export default`) or a JSON document is, else OPAQUE.

    Raises Uncheckable for a source over the size cap or literals nested past MAX_DEPTH.
    """
    return read_module(source).exported


def read_module(
    source: str,
    load_import: Callable[[str], object] | None = None,
    callees: tuple[str, ...] = (),
    load_named: Callable[[str, str], object] | None = None,
) -> Module:
    """The module's literal top level and the first argument of the first call to each of `callees`;
    `load_import(specifier)` gives the value of `import name from 'x.json'` (and `require('x')`),
    `load_named(specifier, name)` that of `import { name } from 'x'`."""
    check_size(source, MAX_CONFIG_BYTES)
    tokens = _tokenize(source)
    bindings: dict[str, object] = {}
    calls: dict[str, object] = {}
    imports: dict[str, str] = {}
    exported: object = OPAQUE
    if tokens and tokens[0].text in "{[":
        exported, _ = _Parser(tokens).value(0)
    index = 0
    while index < len(tokens):
        parser = _Parser(tokens)
        if _texts(tokens, index, 3) == ["module", ".", "exports"] and _text(tokens, index + 3) == "=":
            exported, index = parser.value(index + 4)
        elif _texts(tokens, index, 2) == ["export", "default"]:
            exported, index = parser.value(index + 2)
        elif (
            _text(tokens, index) == "import"
            and _kind(tokens, index + 1) == "word"
            and _text(tokens, index + 2) == "from"
            and _kind(tokens, index + 3) == "string"
        ):
            specifier = _unescape(tokens[index + 3].text[1:-1])
            imports[tokens[index + 1].text] = specifier
            bindings[tokens[index + 1].text] = load_import(specifier) if load_import else OPAQUE
            index += 4
        elif _text(tokens, index) == "import" and (
            _text(tokens, index + 1) == "{" or (_kind(tokens, index + 1) == "word" and _text(tokens, index + 2) == ",")
        ):
            index = _named_import(tokens, index + 1, bindings, imports, load_import, load_named)
        elif (
            _text(tokens, index) in ("const", "let", "var")
            and _text(tokens, index + 1) == "{"
            and (end := _skip_balanced(tokens, index + 1)) > index
            and _text(tokens, end) == "="
            and _texts(tokens, end + 1, 2) == ["require", "("]
            and _kind(tokens, end + 3) == "string"
        ):
            specifier = _unescape(tokens[end + 3].text[1:-1])
            for name, local in _destructured(tokens, index + 2, end - 1):
                imports[local] = specifier
                bindings[local] = load_named(specifier, name) if load_named else OPAQUE
            index = end + 4
        elif (
            _text(tokens, index) in ("const", "let", "var")
            and _text(tokens, index + 2) == "="
            and _texts(tokens, index + 3, 2) == ["require", "("]
            and _kind(tokens, index + 5) == "string"
        ):
            specifier = _unescape(tokens[index + 5].text[1:-1])
            bindings[tokens[index + 1].text] = load_import(specifier) if load_import else OPAQUE
            index += 6
        elif _text(tokens, index) in ("const", "let", "var") and _kind(tokens, index + 1) == "word":
            name, index = tokens[index + 1].text, _skip_type(tokens, index + 2)
            if _text(tokens, index) == "=":
                bindings[name], index = parser.value(index + 1)
        elif _text(tokens, index) == "(" and _texts(tokens, index + 1, 3) == ["module", ".", "exports"]:
            index += 1  # `(module.exports = {...});`, the Docusaurus 2 beta template's form
        elif _text(tokens, index) in _CLOSERS:
            index = _skip_balanced(tokens, index)
        else:
            index += 1
    for index, token in enumerate(tokens):
        if token.text in callees and token.text not in calls and _text(tokens, index + 1) == "(":
            calls[token.text], _ = _Parser(tokens).value(index + 2)
    return Module(_resolve(exported, bindings, depth=0), bindings, calls, imports)


def _destructured(tokens: list[_Token], start: int, end: int) -> list[tuple[str, str]]:
    """(name, local) of `a, b: c` between `start` and `end` (a `require` destructuring)."""
    found, index = [], start
    while index < end:
        if _kind(tokens, index) == "word":
            renamed = _text(tokens, index + 1) == ":" and _kind(tokens, index + 2) == "word"
            found.append((tokens[index].text, tokens[index + 2].text if renamed else tokens[index].text))
            index += 3 if renamed else 1
        else:
            index += 1
    return found


def _named_import(
    tokens: list[_Token],
    index: int,
    bindings: dict,
    imports: dict,
    load_import: Callable[[str], object] | None,
    load_named: Callable[[str, str], object] | None,
) -> int:
    """Read `[default,] { a, b as c } from 'x'` from `index`; return the index after it."""
    default = None
    if _kind(tokens, index) == "word":
        default, index = tokens[index].text, index + 2
    end = _skip_balanced(tokens, index)
    names, inner = [], index + 1
    while inner < end - 1:
        if _kind(tokens, inner) == "word" and tokens[inner].text != "type":
            local = tokens[inner + 2].text if _text(tokens, inner + 1) == "as" else tokens[inner].text
            names.append((tokens[inner].text, local))
            inner = inner + 3 if _text(tokens, inner + 1) == "as" else inner + 1
        else:
            inner += 1
    if _text(tokens, end) != "from" or _kind(tokens, end + 1) != "string":
        return end
    specifier = _unescape(tokens[end + 1].text[1:-1])
    if default is not None:
        imports[default] = specifier
        bindings[default] = load_import(specifier) if load_import else OPAQUE
    for name, local in names:
        imports[local] = specifier
        bindings[local] = load_named(specifier, name) if load_named else OPAQUE
    return end + 2


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.depth = 0

    def value(self, index: int):
        """Parse one value at `index`; return it and the index after it (and after trailing `as`/`satisfies`)."""
        value, index = self._primary(index)
        end = self._expression_end(index)
        trailing = [t.text for t in self.tokens[index:end]]
        if trailing and trailing[0] not in ("as", "satisfies"):
            value = OPAQUE  # an expression such as `[...].concat(x)` or `a || b`
        return value, end

    def _primary(self, index: int):
        token = self.tokens[index] if index < len(self.tokens) else None
        if token is None:
            return OPAQUE, index
        if token.kind == "string":
            return Str(_unescape(token.text[1:-1]), token.line), index + 1
        if token.kind == "template":
            return (OPAQUE if "${" in token.text else Str(token.text[1:-1], token.line)), index + 1
        if token.text in "{[":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise Uncheckable(f"literals nested deeper than {MAX_DEPTH} levels")
            try:
                return self._object(index + 1) if token.text == "{" else self._array(index + 1)
            finally:
                self.depth -= 1
        if token.text == "(":  # `module.exports = ({...})`, the Docusaurus 2 template's form
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise Uncheckable(f"literals nested deeper than {MAX_DEPTH} levels")
            try:
                inner, end = self.value(index + 1)
            finally:
                self.depth -= 1
            if _text(self.tokens, end) == ")":
                return inner, end + 1
            return OPAQUE, _skip_balanced(self.tokens, index)  # a sequence expression or arrow parameters
        if token.kind == "word":
            path = _path_call(self.tokens, index)
            if path is not None:
                return path
            if token.text in _CONSTANTS:
                return _CONSTANTS[token.text], index + 1
            if token.text[0].isdigit():
                return token.text, index + 1
            if _text(self.tokens, index + 1) in (".", "(", "["):
                return OPAQUE, index + 1  # a call or member access: left to _expression_end
            return _Name(token.text), index + 1
        return OPAQUE, index + 1

    def _object(self, index: int):
        result: dict = {}
        while index < len(self.tokens) and self.tokens[index].text != "}":
            token = self.tokens[index]
            if token.kind == "spread":
                _, index = self.value(index + 1)
                result[OPAQUE] = OPAQUE
            elif token.kind == "word" and _text(self.tokens, index + 1) in (",", "}"):
                result[token.text] = _Name(token.text)  # the shorthand `{sidebar}`
                index += 1
            elif token.kind in ("string", "word") and _text(self.tokens, index + 1) == ":":
                key = _unescape(token.text[1:-1]) if token.kind == "string" else token.text
                result[key], index = self.value(index + 2)
            else:
                index = self._expression_end(index)  # a method, shorthand or computed key
                result[OPAQUE] = OPAQUE
            if _text(self.tokens, index) in (",", ";", "]", ")"):  # stray closers in broken code are skipped
                index += 1
        return result, index + 1

    def _array(self, index: int):
        result: list = []
        while index < len(self.tokens) and self.tokens[index].text != "]":
            if self.tokens[index].kind == "spread":
                _, index = self.value(index + 1)
                result.append(OPAQUE)
            else:
                item, index = self.value(index)
                result.append(item)
            if _text(self.tokens, index) == ",":
                index += 1
            elif _text(self.tokens, index) != "]":
                index = self._expression_end(index) + 1
        return result, index + 1

    def _expression_end(self, index: int) -> int:
        # The index of the next `,`, `;` or closing bracket at this depth.
        while index < len(self.tokens):
            text = self.tokens[index].text
            if text in ",;}])":
                return index
            index = _skip_balanced(self.tokens, index) if text in _CLOSERS else index + 1
        return index


def _path_call(tokens: list[_Token], index: int) -> tuple[Str, int] | None:
    """`require.resolve('./x')` and `path.resolve(__dirname, './x')` (or `path.join`) at `index`: the path they
    name, relative to the config's folder, and the index after them; None for anything else."""
    texts = _texts(tokens, index, 4)
    if texts == ["require", ".", "resolve", "("]:
        start = index + 4
    elif (
        texts[:3] in (["path", ".", "resolve"], ["path", ".", "join"])
        and texts[3:] == ["("]
        and _texts(tokens, index + 4, 2) == ["__dirname", ","]
    ):
        start = index + 6
    else:
        return None
    if _kind(tokens, start) != "string" or _text(tokens, start + 1) != ")":
        return None
    return Str(_unescape(tokens[start].text[1:-1]), tokens[start].line), start + 2


def _resolve(value, bindings: dict, depth: int, budget: list[int] | None = None):
    # `budget` counts values built: names that repeat other names would otherwise expand exponentially.
    budget = [MAX_RESOLVED] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        raise Uncheckable(f"its constants expand to more than {MAX_RESOLVED:,} values")
    if depth > MAX_DEPTH:
        return OPAQUE
    if isinstance(value, _Name):
        return _resolve(bindings.get(value.name, OPAQUE), bindings, depth + 1, budget)
    if isinstance(value, list):
        return [_resolve(item, bindings, depth + 1, budget) for item in value]
    if isinstance(value, dict):
        return {key: _resolve(item, bindings, depth + 1, budget) for key, item in value.items()}
    return value


def _tokenize(source: str) -> list[_Token]:
    tokens, line = [], 1
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup or ""  # every alternative of _TOKEN is a named group
        if kind not in ("space", "comment"):
            tokens.append(_Token(kind, match.group(), line))
        line += match.group().count("\n")
    return tokens


def _skip_balanced(tokens: list[_Token], index: int) -> int:
    stack = []
    while index < len(tokens):
        text = tokens[index].text
        if text in _CLOSERS:
            stack.append(_CLOSERS[text])
        elif stack and text == stack[-1]:
            stack.pop()
            if not stack:
                return index + 1
        index += 1
    return index


def _skip_type(tokens: list[_Token], index: int) -> int:
    # `const sidebars: SidebarsConfig = {...}`: skip the annotation up to `=`.
    if _text(tokens, index) != ":":
        return index
    while index < len(tokens) and tokens[index].text not in ("=", ";"):
        index = _skip_balanced(tokens, index) if tokens[index].text in _CLOSERS else index + 1
    return index


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _text(tokens: list[_Token], index: int) -> str | None:
    return tokens[index].text if index < len(tokens) else None


def _kind(tokens: list[_Token], index: int) -> str | None:
    return tokens[index].kind if index < len(tokens) else None


def _texts(tokens: list[_Token], index: int, count: int) -> list[str]:
    return [t.text for t in tokens[index : index + count]]
