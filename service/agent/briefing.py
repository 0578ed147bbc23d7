"""What a run is told about the repository before it starts: instructions, docs site and an overview."""

from service.agent import briefing_facts
from service.agent.instructions import load_instructions
from service.agent.loop import AgentTask
from service.agent.tree_cache import cached


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
    # Worked out from the start tree alone, so kept by tree id: a run on a tree seen before reads no file for it,
    # and one on a tree that gained or lost a few files since the last kept one derives them from its entry.
    site, overview, _read, _facts = cached(
        workspace,
        "site-overview",
        lambda: briefing_facts.site_and_overview(workspace, docs_root),
        variant=docs_root,
        derive=lambda earlier, changes: briefing_facts.derive(workspace, docs_root, earlier, changes),
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
