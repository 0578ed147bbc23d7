"""MkDocs/Python-Markdown block containers whose bodies are indented: admonitions (`!!! note`, `??? tip`,
`???+ warning`) and content tabs (`=== "Tab"`). CommonMark would read their bodies as indented code, so they
are dedented before parsing, line for line, so links inside them are seen and keep their line numbers."""

import re

_CONTAINER = re.compile(
    r'^(?:(?:!!!|\?\?\?\+?)[ \t]+[\w-]+(?:[ \t].*)?|(?:!!!|\?\?\?\+?)[ \t]+".*"|'
    r'===[+!]*[ \t]+".*")[ \t]*$'
)
_FENCE = re.compile(r"^(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^[ ]*(?:[-*+]|\d+[.)])[ ]+")
BODY_INDENT = 4  # Python-Markdown's tab length


def open_containers(text: str) -> str:
    """`text` with each container's opening line blanked and its body dedented by one level per open container;
    code fences inside are left alone. Text without a container comes back as it is."""
    if "!!!" not in text and "???" not in text and "===" not in text:
        return text
    out: list[str] = []
    stack: list[int] = []  # the body indent of each open container, outermost first
    fence: tuple[str, int] | None = None  # the open fence's marker and the container depth it opened at
    item: int | None = None  # the content column of the list item the text is in (after dedenting)
    for line in text.split("\n"):
        expanded = line.expandtabs(BODY_INDENT)
        stripped = expanded.lstrip()
        if not stripped:
            out.append("")
            continue
        indent = len(expanded) - len(stripped)
        while stack and indent < stack[-1]:
            stack.pop()
        if fence is not None and fence[1] > len(stack):
            fence = None  # the container that held the fence ended, and with it the fence
        body = expanded[BODY_INDENT * len(stack) :] if stack else line
        inner = len(body) - len(body.lstrip())
        if fence is not None:
            if body.lstrip().startswith(fence[0]) and not body.lstrip().lstrip(fence[0][0]).strip():
                fence = None
            out.append(body)
            continue
        listed = _LIST_ITEM.match(body)
        if listed:
            item = len(listed.group(0))
        elif item is not None and inner < item:
            item = None
        block = inner <= 3 or (item is not None and item <= inner <= item + 3)  # a container in a list item
        if block and _CONTAINER.match(body.lstrip()):
            stack.append(indent + BODY_INDENT)
            out.append("")
            continue
        marker = _FENCE.match(body.lstrip()) if block else None
        if marker:
            fence = (marker.group(1), len(stack))
        out.append(body)
    return "\n".join(out)
