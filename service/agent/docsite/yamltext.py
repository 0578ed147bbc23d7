"""YAML loading for docs configs and front matter that accepts any tag (`!ENV`, `!!python/name:`) instead of failing."""

import yaml

YAMLError = yaml.YAMLError


# libyaml's loader when PyYAML was built with it: composing a 20,000-entry nav is several times faster.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _TolerantLoader(_SafeLoader):
    """A safe loader that builds plain values for tags it does not know; it never runs or imports anything."""


def _construct_untagged(loader, node: yaml.Node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_scalar(node)


_TolerantLoader.add_constructor(None, _construct_untagged)


def load_yaml(text: str):
    """The value of a YAML document; raises YAMLError when it does not parse."""
    return yaml.load(text, Loader=_TolerantLoader)


def compose_yaml(text: str) -> yaml.Node | None:
    """The node tree of a YAML document (values with line numbers); raises YAMLError when it does not parse."""
    return yaml.compose(text, Loader=_TolerantLoader)


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
