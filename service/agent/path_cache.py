"""The start tree's paths the sandbox policy hides, worked out once per tree (service.agent.tree_cache)."""

from collections.abc import Sequence

from service.agent.paths import allowed_paths, is_allowed
from service.agent.tree_cache import cached
from service.workspace.trees import TreeChange


def allowed_files(workspace, prefix: str = "") -> list[str]:
    """`workspace.list_files()` without the paths the agent may not name; the start tree's are looked up, only
    paths this run added are checked one by one. With `prefix`, only the paths that start with it."""
    # Usually nothing is hidden, and then the listing is handed on as it is: no per-path work at all.
    hidden = forbidden_paths(workspace) | frozenset(p for p in workspace.added_files() if not is_allowed(p))
    files = workspace.list_files(prefix) if prefix else workspace.list_files()
    return [path for path in files if path not in hidden] if hidden else files


def forbidden_paths(workspace) -> frozenset[str]:
    """The start tree's paths that fail the sandbox policy (usually none)."""

    def compute() -> frozenset[str]:
        files = workspace.start_files()
        return frozenset(files) - frozenset(allowed_paths(files))

    return cached(workspace, "forbidden-paths", compute, derive=_derive)


def _derive(earlier: frozenset[str], changes: Sequence[TreeChange]) -> frozenset[str]:
    # The policy judges a path alone, so only paths that came or went change the answer.
    gone = {change.path for change in changes if change.new is None}
    came = [change.path for change in changes if change.old is None and change.new is not None]
    return frozenset(earlier - gone) | frozenset(came) - frozenset(allowed_paths(came))
