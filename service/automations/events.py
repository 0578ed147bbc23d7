"""What fired an automation: the trigger event and the source changes it carries."""

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceChange:
    """One change in a source repository: a merged pull request or a commit, with its diff (bounded)."""

    kind: str  # "pull_request" or "commit"
    id: str  # the pull request's number as text, or the commit's sha
    title: str
    body: str
    author: str
    url: str | None
    merge_commit: str  # the sha the agent reads the source repository at
    diff: str  # bounded by whoever built the change; `diff_truncated` says whether it was cut
    diff_truncated: bool
    repository: str  # "owner/name" on GitHub, a bare repository's path on the local host

    def to_ref(self) -> dict:
        """The short form a run keeps of the change it covers (no body, no diff)."""
        return {"kind": self.kind, "id": self.id, "title": self.title, "url": self.url, "author": self.author}


@dataclass(frozen=True)
class TriggerEvent:
    """One real-world event that starts a run; `key` is unique per event, so duplicate deliveries start one run.

    Keys: "gh:<repo>#pr<n>", "commit:<repo>@<sha>", "slot:<automation>@<iso>", "hook:<delivery uuid>",
    "manual:<ulid>".
    """

    kind: str  # "code_change", "schedule", "webhook", "manual" or "autopilot"
    key: str
    changes: tuple[SourceChange, ...] = ()
    context: str | None = None  # a webhook's body or a run-now note (data, never instructions)
    source_repository: str | None = None
    source_commit: str | None = None
