"""The `CodeHost` seam: the worker talks to every code host through this interface."""

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from service.lease import Fence
from service.models import Project, PullRequest
from service.workspace.git import Remote


class CodeHostError(Exception):
    """The code host refused or failed an operation."""


class SourceUnreachable(CodeHostError):
    """A round's source repository cannot be read (missing, not a repository, not the installation's); the
    message says which, for the job's `error`."""


@dataclass(frozen=True)
class SourcePull:
    """A pull request merged in a source repository that a round of an automation's job covers."""

    repository: str  # "owner/name", another repository of the project's installation
    number: int


@dataclass(frozen=True)
class SourceNotice:
    """What a code host with pull-request reviews tells people once an automation's round opened or updated its
    docs pull request: review requests, and a comment linking it on each source pull request (when set)."""

    reviewers: tuple[str, ...]  # logins asked to review: the source pull requests' authors, the automation's own
    comment_on: tuple[SourcePull, ...]  # the source pull requests to link the docs pull request from
    comment: str  # the words of that link (service.describe.source_comment)
    key: str  # the comment is posted once per key on each source pull request


@runtime_checkable
class AnnouncesSources(Protocol):
    """A code host that can ask for reviews and comment on source pull requests (GitHub); others have neither."""

    def announce_sources(self, project: Project, number: int, notice: SourceNotice) -> None:
        """Ask `notice.reviewers` to review pull request `number` (only those who can) and post `notice.comment` on
        each of `notice.comment_on`, once per `notice.key`; a source it cannot reach is logged, not raised."""


class CodeHost(Protocol):
    name: str

    def remote(self, project: Project) -> Remote:
        """Where git fetches and pushes the project's repository, with per-command credentials."""

    def source_remote(self, project: Project, repository: str) -> Remote:
        """Where git fetches `repository`, a round's read-only source: another repository the project's code host
        account may read ("owner/name" of the same GitHub installation; a bare repository's path on the local
        host). SourceUnreachable when it is not one; never used to push."""

    def open_or_update_pull(
        self,
        project: Project,
        *,
        job_id: str,
        branch: str,
        base: str,
        title: str,
        body: str,
        draft: bool,
        fence: Fence | None = None,
        may_open: bool = True,
    ) -> PullRequest | None:
        """Open the job branch's pull request, or update the one that already exists for it; with `may_open`
        False only an open one is updated (a round that pushed nothing), and None says there was none.

        With a `fence` (a run's lease) the write happens only while that lease is still the run's, and raises
        LeaseLost otherwise: atomically where the host's store allows it, else checked right before the write.
        """

    def comment(
        self, project: Project, number: int, body: str, *, fence: Fence | None = None, key: str | None = None
    ) -> str:
        """Add a comment to pull request `number`, fenced by `fence` like `open_or_update_pull`; returns its id.

        `key` makes the comment idempotent: a comment posted earlier with the same key (by an interrupted
        attempt of the same run) is not posted again, and its id is returned.
        """

    def edit_comment(
        self,
        project: Project,
        number: int,
        comment_id: str,
        body: str,
        *,
        fence: Fence | None = None,
        key: str | None = None,
    ) -> None:
        """Replace the body of comment `comment_id` (one `comment` returned) on pull request `number`, fenced like
        `comment`; `key` is the one it was posted with, kept so the comment is still found as posted once."""

    def reply_in_thread(
        self,
        project: Project,
        number: int,
        thread_id: str,
        body: str,
        *,
        fence: Fence | None = None,
        key: str | None = None,
    ) -> None:
        """Reply in the review thread whose first comment is `thread_id`, fenced and posted once per `key`
        like `comment`."""
