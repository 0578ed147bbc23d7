"""What a run is told about the repository before it starts: instructions, docs site and an overview."""

from service.agent.docsite.detect import detect_site
from service.agent.instructions import load_instructions
from service.agent.loop import AgentTask
from service.agent.overview import repository_overview


def brief(workspace, prompt: str, *, history: list[tuple[str, str]] | None = None, docs_root: str = "",
          branch_diff: str | None = None, base_ref: str = "") -> AgentTask:
    """The task for one run on `workspace`; the runner and the first-request benchmark both build it here."""
    return AgentTask(prompt=prompt, history=history or [], instructions=load_instructions(workspace),
                     docs_root=docs_root, branch_diff=branch_diff, base_ref=base_ref,
                     overview=repository_overview(workspace, docs_root=docs_root),
                     site=detect_site(workspace, docs_root))
