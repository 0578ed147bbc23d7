"""JSX tags in MDX pages that are opened and never closed (or closed and never opened)."""

from dataclasses import dataclass

from service.agent.docsite.jsx import Tag, Unfinished

VOID_ELEMENTS = frozenset("area base br col embed hr img input link meta param source track wbr".split())


@dataclass(frozen=True)
class TagProblem:
    line: int
    message: str


def unbalanced_tags(tags: list[Tag], unfinished: Unfinished | None) -> list[TagProblem]:
    """Opening tags without a matching closing tag, closing tags without an opening one and a tag that never
    ends, in line order; `tags` come from `jsx.scan_tags` over the page's prose."""
    open_tags: list[Tag] = []
    problems = []
    for tag in tags:
        if tag.self_closing or tag.name.lower() in VOID_ELEMENTS:
            continue
        if not tag.closing:
            open_tags.append(tag)
            continue
        depth = next((i for i in range(len(open_tags) - 1, -1, -1) if open_tags[i].name == tag.name), None)
        if depth is None:
            problems.append(
                TagProblem(
                    tag.line,
                    f"</{tag.name}> closes a tag that is not open: remove it or add the opening <{tag.name}> before it",
                )
            )
            continue
        problems += [_unclosed(t) for t in open_tags[depth + 1 :]]
        del open_tags[depth:]
    problems += [_unclosed(t) for t in open_tags]
    if unfinished is not None:
        problems.append(
            TagProblem(
                unfinished.line,
                f"the tag <{unfinished.closing * '/'}{unfinished.name} never ends: finish it with > or />",
            )
        )
    return sorted(problems, key=lambda p: p.line)


def _unclosed(tag: Tag) -> TagProblem:
    name = tag.name
    return TagProblem(
        tag.line, f"<{name}> is never closed: add </{name}> after its content, or end the tag with /> if it has none"
    )
