"""Walking nested lists and dicts without recursion, so a deeply nested value cannot exhaust the stack."""

from collections.abc import Collection, Iterator


def containers(value) -> Iterator[tuple[int, Collection]]:
    """Each list and dict in `value`, `value` itself included, as (depth, children): depth 1 for `value`, one
    more per level below it; children are a dict's values or a list's items. Depth-first and lazy: a caller that
    stops early walks no further."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        yield depth, children
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
