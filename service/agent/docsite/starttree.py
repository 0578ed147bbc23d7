"""The run's start tree as its own read-only workspace, to tell this run's changes from what was there before."""

from service.workspace.overlay import Workspace


def open_start_tree(workspace: Workspace) -> Workspace:
    """A workspace over `workspace`'s start commit with none of its changes; use it as a context manager."""
    return Workspace(workspace.git, workspace.git_dir, workspace.start_commit)
