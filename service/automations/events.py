"""What fired an automation: the trigger's event and the source changes it covers."""

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceChange:
    """One change in a source repository: a merged pull request (GitHub) or a commit (local host)."""

    kind: str  # "pull_request" | "commit"
    id: str  # the pull request's number as text, or the commit's sha
    title: str
    body: str
    author: str
    url: str
    merge_commit: str
    diff: str  # bounded
    diff_truncated: bool
    repository: str


@dataclass(frozen=True)
class TriggerEvent:
    """One real-world event that fires an automation; `key` is unique per event so a re-delivery is seen."""

    kind: str  # "code_change" | "schedule" | "webhook" | "manual" | "autopilot"
    key: str
    changes: tuple[SourceChange, ...] = ()
    context: str | None = None
    source_repository: str | None = None
    source_commit: str | None = None
