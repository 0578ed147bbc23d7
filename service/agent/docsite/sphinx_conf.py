"""What a Sphinx `conf.py` sets, read as Python literals through `ast` (the file is never run): intersphinx
inventory names, `sphinx-reredirects` redirects, MyST heading anchors, the default role and extra HTML pages."""

import ast
import re
from dataclasses import dataclass

from docutils.nodes import fully_normalize_name

from service.agent.docsite.limits import MAX_CONFIG_BYTES, Uncheckable, check_size

_TARGET_NAME = re.compile(r"^\.\.[ \t]+_`?([^`:\n]+)`?:", re.MULTILINE)


@dataclass(frozen=True)
class SphinxConf:
    """The settings the docs check needs; None where the file computes them (and so they cannot be known)."""

    inventories: frozenset[str] | None = frozenset()  # `intersphinx_mapping` keys
    redirects: tuple[str, ...] | None = None  # `redirects` keys (docnames, `*` wildcards); None without any
    heading_anchors: int = 0  # `myst_heading_anchors`: heading levels that get anchors
    default_role: str | None = None
    # Names `rst_prolog`/`rst_epilog` define for every page (`.. _name: url`); None when they are computed.
    shared_names: frozenset[str] | None = frozenset()
    # `html_additional_pages` keys: pages the HTML build writes from templates (`contents` -> contents.html).
    additional_pages: frozenset[str] | None = frozenset()


def read_conf(text: str) -> SphinxConf:
    """The settings `conf.py` assigns literally at its top level; a file that does not parse sets nothing
    known (inventories then unknown, so every `name:` prefix is taken for one)."""
    try:
        check_size(text, MAX_CONFIG_BYTES)
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, Uncheckable):
        return SphinxConf(inventories=None)
    inventories: set[str] | None = set()
    redirects: list[str] | None = None
    anchors, role = 0, None
    shared: set[str] | None = set()
    additional: set[str] | None = set()
    assigned = False
    if any(isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names) for node in module.body):
        inventories = shared = None  # `from shared_conf import *` may set any of it
    for node in module.body:
        target, value = _assignment(node)
        assigned = assigned or (target or "").startswith("intersphinx_mapping")
        if target == "intersphinx_mapping" and inventories is not None:
            keys = _keys(value)
            inventories = None if keys is None else inventories | keys
        elif target == "intersphinx_mapping[]" and inventories is not None and isinstance(value, str):
            inventories.add(value)
        elif target == "intersphinx_mapping.update" and inventories is not None:
            keys = _keys(value)
            inventories = None if keys is None else inventories | keys
        elif target == "redirects":
            keys = _keys(value)
            redirects = sorted(keys) if keys is not None else ["*"]  # computed: any name may redirect
        elif target == "myst_heading_anchors":
            anchors = value.value if isinstance(value, ast.Constant) and isinstance(value.value, int) else 0
        elif target in ("rst_prolog", "rst_epilog") and shared is not None:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                shared |= {fully_normalize_name(name) for name in _TARGET_NAME.findall(value.value)}
            else:
                shared = None
        elif target == "html_additional_pages":
            additional = _keys(value)
        elif target == "default_role":
            role = value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None
    if not assigned and "intersphinx" in text:
        inventories = None  # the extension is on, but its mapping is set somewhere this reading does not see
    return SphinxConf(
        None if inventories is None else frozenset(inventories),
        None if redirects is None else tuple(redirects),
        anchors,
        role,
        None if shared is None else frozenset(shared),
        None if additional is None else frozenset(additional),
    )


def _assignment(node) -> tuple[str | None, object]:
    # `name = value`, `name: type = value`, `name["key"] = value` and `name.update({...})` at the top level.
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, value = node.targets[0], node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target, value = node.target, node.value
    elif (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and node.value.args
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "update"
        and isinstance(node.value.func.value, ast.Name)
    ):
        return f"{node.value.func.value.id}.update", node.value.args[0]
    else:
        return None, None
    if isinstance(target, ast.Name):
        return target.id, value
    if (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and isinstance(target.slice, ast.Constant)
        and isinstance(target.slice.value, str)
    ):
        return f"{target.value.id}[]", target.slice.value
    return None, None


def _keys(value) -> set[str] | None:
    """The string keys of a dict display or `dict(a=...)` call; None when they cannot be known."""
    if isinstance(value, ast.Dict):
        if any(key is None or not (isinstance(key, ast.Constant) and isinstance(key.value, str)) for key in value.keys):
            return None  # `**other` or a computed key
        return {key.value for key in value.keys if isinstance(key, ast.Constant) and isinstance(key.value, str)}
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "dict"
        and not value.args
        and all(k.arg for k in value.keywords)
    ):
        return {k.arg for k in value.keywords if k.arg}
    return None
