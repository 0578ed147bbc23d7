"""YAML loading for docs configs and front matter: accepts any tag (`!ENV`, `!!python/name:`) instead of failing,
and refuses what would not fit in time or memory (deep nesting, alias bombs, cycles) before anything walks it."""

from typing import TYPE_CHECKING

import yaml

from service.agent.docsite.limits import MAX_CONFIG_BYTES, MAX_DEPTH, MAX_YAML_NODES, Uncheckable, check_size

YAMLError = yaml.YAMLError


# libyaml's loader when PyYAML was built with it: composing a 20,000-entry nav is several times faster.
if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
PARSER_DEPTH = 2_000  # nesting the parser is given at most (libyaml handles 10,000); the tree is then held to MAX_DEPTH


class _TolerantLoader(_SafeLoader):
    """A safe loader that builds plain values for tags it does not know; it never runs or imports anything."""


def _construct_untagged(loader, node: yaml.Node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_scalar(node)


_TolerantLoader.add_constructor(None, _construct_untagged)


def load_yaml(text: str, *, max_bytes: int = MAX_CONFIG_BYTES):
    """The value of a YAML document; raises YAMLError when it does not parse, Uncheckable past a cap."""
    node = compose_yaml(text, max_bytes=max_bytes)
    if node is None:
        return None
    loader = _TolerantLoader("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


def compose_yaml(text: str, *, max_bytes: int = MAX_CONFIG_BYTES) -> yaml.Node | None:
    """The node tree of a YAML document (values with line numbers); raises YAMLError when it does not parse.

    Raises Uncheckable for a document over `max_bytes`, nested past MAX_DEPTH, with an alias that refers to
    itself, or whose aliases expand past MAX_YAML_NODES nodes: walking the tree is then bounded.
    """
    check_size(text, max_bytes)
    # libyaml recurses once per nesting level and overflows the C stack on tens of thousands: measure first.
    if _nesting_bound(text) > PARSER_DEPTH:
        raise Uncheckable(f"nested deeper than {MAX_DEPTH} levels")
    try:
        node = yaml.compose(text, Loader=_TolerantLoader)
    except RecursionError:
        raise Uncheckable(f"nested deeper than {MAX_DEPTH} levels") from None
    if node is not None:
        expanded_size(node)
    return node


def expanded_size(root: yaml.Node, budget: int = MAX_YAML_NODES) -> int:
    """How many nodes walking `root` visits with every alias expanded; Uncheckable for cycles or past `budget`.

    Aliases share node objects, so sizes are computed once per object (a DAG) and never by expanding.
    """
    sizes: dict[int, int] = {}
    depths: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            depths[key] = 1 + max((depths[id(child)] for child in children), default=0)
            if sizes[key] > budget:
                raise Uncheckable(f"its aliases expand to more than {budget:,} entries")
            if depths[key] > MAX_DEPTH:
                raise Uncheckable(f"nested deeper than {MAX_DEPTH} levels")
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise Uncheckable("an alias refers to the list or mapping that contains it")
        on_path.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                raise Uncheckable("an alias refers to the list or mapping that contains it")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _nesting_bound(text: str) -> int:
    """An upper bound of the document's nesting: flow brackets open at once, plus block levels on any line."""
    depth = deepest = 0
    block = 0
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        block = max(block, len(line) - len(stripped) + stripped.count("- ") + stripped.count("? "))
        quote = None
        for index, char in enumerate(stripped):
            if quote:
                quote = None if char == quote else quote
            elif char in "\"'" and (index == 0 or not stripped[index - 1].isalnum()):
                quote = char
            elif char == "#" and (index == 0 or stripped[index - 1] in " \t"):
                break
            elif char in "[{":
                depth += 1
                deepest = max(deepest, depth)
            elif char in "]}" and depth:
                depth -= 1
    return deepest + block


def error_line(error: YAMLError, first_line: int = 1) -> int:
    """The 1-based line a YAML error points to, counting the document's first line as `first_line`."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    return first_line + (mark.line if mark is not None else 0)


def error_text(error: YAMLError) -> str:
    """A one-line description of a YAML error, without PyYAML's position lines."""
    problem = getattr(error, "problem", None)
    context = getattr(error, "context", None)
    if problem:
        return f"{context}: {problem}" if context else problem
    return str(error).splitlines()[0]


def mapping_value(node: yaml.Node | None, key: str) -> yaml.Node | None:
    """The value node under `key` in a mapping node, or None."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return value_node
    return None
