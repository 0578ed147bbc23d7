"""The `CodeHost` seam: the worker talks to every code host through this interface."""

from typing import Protocol

from service.models import Project, PullRequest
from service.workspace.git import Remote


class CodeHostError(Exception):
    """The code host refused or failed an operation."""


class CodeHost(Protocol):
    name: str

    def remote(self, project: Project) -> Remote:
        """Where git fetches and pushes the project's repository, with per-command credentials."""

    def open_or_update_pull(self, project: Project, *, job_id: str, branch: str, base: str, title: str,
                            body: str, draft: bool) -> PullRequest:
        """Open the job branch's pull request, or update the one that already exists for it."""

    def comment(self, project: Project, number: int, body: str) -> None:
        """Add a comment to pull request `number`."""
