"""What a run is told about the repository before it starts: instructions, docs site and an overview."""

from collections.abc import Sequence

from service.agent.docsite.detect import detect_site, navigation_order
from service.agent.docsite.site import DocsSite
from service.agent.docsite.tree import Tree
from service.agent.instructions import load_instructions
from service.agent.loop import AgentTask
from service.agent.overview import repository_overview
from service.agent.tree_cache import cached
from service.workspace.trees import TreeChange


def brief(
    workspace,
    prompt: str,
    *,
    base_commit: str | None,
    history: list[tuple[str, str]] | None = None,
    docs_root: str = "",
    branch_diff: str | None = None,
    base_ref: str = "",
    source_repository: str | None = None,
    source_commit: str | None = None,
) -> AgentTask:
    """The task for one run on `workspace`; the runner and the first-request benchmark both build it here.

    The repository's instructions come from `base_commit`, the head of the project's base branch, never from
    the job's branch: whoever can push to that branch (the agent's own earlier round included) must not be
    able to instruct the agent. Without a base commit there are no instructions. `source_repository` and
    `source_commit` name the round's read-only source (service.sources), described to the model as reference data.
    """
    trusted = load_instructions(workspace.view_of(base_commit)) if base_commit else None
    # Worked out from the start tree alone, so kept by tree id: a run on a tree seen before reads no file for it.
    site, overview, _read = cached(
        workspace,
        "site-overview",
        lambda: _site_and_overview(workspace, docs_root),
        variant=docs_root,
        derive=_same_unless_read,
    )
    return AgentTask(
        prompt=prompt,
        history=history or [],
        instructions=trusted,
        docs_root=docs_root,
        branch_diff=branch_diff,
        base_ref=base_ref,
        overview=overview,
        site=site,
        source_repository=source_repository,
        source_commit=source_commit,
    )


def _site_and_overview(workspace, docs_root: str) -> tuple[DocsSite, str, frozenset[str] | None]:
    """The site and overview of the start tree, with the paths whose content they were worked out from."""
    view = workspace.recording_view()
    site = detect_site(view, docs_root)
    overview = repository_overview(view, docs_root=docs_root, site=site, nav_order=navigation_order(Tree(view), site))
    return site, overview, view.content_read()


def _same_unless_read(
    earlier: tuple[DocsSite, str, frozenset[str] | None], changes: Sequence[TreeChange]
) -> tuple[DocsSite, str, frozenset[str] | None] | None:
    """The earlier tree's site and overview when the trees differ only in the content of files they did not
    read: both see the same paths and kinds then. None (work them out again) otherwise."""
    read = earlier[2]
    if read is None:
        return None
    for change in changes:
        if change.old is None or change.new is None or change.old[0] != change.new[0] or change.path in read:
            return None
    return earlier
