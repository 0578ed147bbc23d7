"""Automations and their runs: the records, their API form, and the checks on an API body."""

import re
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from service.automations import schedule
from service.errors import InvalidRequest
from service.models import Record
from service.prompts import check_text

NAME_MAX_CHARS = 100
PROMPT_MAX_CHARS = 10_000  # the owner's part; the trigger's data is added under the intake's own prompt limit
REPOSITORY_MAX_CHARS = 1000
MAX_OPEN_PULL_REQUESTS = 20
MAX_RUNS_PER_DAY = 500
MAX_REVIEWERS = 10
MAX_TOKENS_CAP = 10**10  # as the job API's maxTokens
_GITHUB_REPOSITORY = re.compile(r"^[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}$")
_REVIEWER = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


class TriggerType(str, Enum):
    CODE_CHANGE = "code_change"
    SCHEDULE = "schedule"
    WEBHOOK = "webhook"


class ChangeMode(str, Enum):
    PER_CHANGE = "per_change"
    BATCHED = "batched"  # everything merged since the last run, on the trigger's cron


class RunState(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    REVIEW_NEEDED = "review_needed"  # its pull request is open
    ACCEPTED = "accepted"  # merged
    CLOSED = "closed"  # closed unmerged
    FAILED = "failed"
    NO_ACTION_NEEDED = "no_action_needed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Trigger:
    type: TriggerType
    repository: str | None = None
    mode: ChangeMode | None = None
    cron: str | None = None
    time_zone: str = "UTC"

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", TriggerType(self.type))
        if self.mode is not None:
            object.__setattr__(self, "mode", ChangeMode(self.mode))

    def to_dict(self) -> dict:
        return {
            "type": self.type.value,
            "repository": self.repository,
            "mode": None if self.mode is None else self.mode.value,
            "cron": self.cron,
            "time_zone": self.time_zone,
        }

    def to_api(self) -> dict:
        data: dict[str, Any] = {"type": self.type.value}
        if self.type is TriggerType.CODE_CHANGE:
            data.update(repository=self.repository, mode=self.mode.value if self.mode else None)
        if self.cron is not None:
            data.update(cron=self.cron, timeZone=self.time_zone)
        return data


@dataclass
class Options:
    grouping: bool = True
    max_open_pull_requests: int = 3
    max_runs_per_day: int = 10
    reviewers: list[str] = field(default_factory=list)
    request_source_reviews: bool = True
    comment_on_source: bool = False
    max_tokens: int | None = None
    # Run the docs check over the whole site before the model, and the model only when it finds problems (with
    # its report): a clean site ends the round with no change needed and costs no tokens (Fix broken links).
    docs_check_first: bool = False

    def to_api(self) -> dict:
        return {
            "grouping": self.grouping,
            "maxOpenPullRequests": self.max_open_pull_requests,
            "maxRunsPerDay": self.max_runs_per_day,
            "reviewers": list(self.reviewers),
            "requestSourceReviews": self.request_source_reviews,
            "commentOnSource": self.comment_on_source,
            "maxTokens": self.max_tokens,
            "docsCheckFirst": self.docs_check_first,
        }


@dataclass
class Automation(Record):
    id: str  # "auto_<ulid>"
    project_id: str
    host: str
    account: str
    name: str
    prompt: str
    trigger: Trigger
    options: Options
    enabled: bool = True
    template: str | None = None
    created_at: str = ""
    updated_at: str = ""
    webhook_secret: str | None = None  # a digest of the webhook trigger's secret, never the secret
    cursor: str | None = None  # the last source commit seen (local code change)
    last_slot: str | None = None  # the last schedule slot run (ISO time)

    def __post_init__(self) -> None:
        if isinstance(self.trigger, dict):
            self.trigger = Trigger(**self.trigger)
        if isinstance(self.options, dict):
            self.options = Options(**self.options)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["trigger"] = self.trigger.to_dict()
        return data

    def to_api(self) -> dict:
        """The automation as the API shows it (the webhook secret never)."""
        return {
            "id": self.id,
            "projectId": self.project_id,
            "name": self.name,
            "prompt": self.prompt,
            "trigger": self.trigger.to_api(),
            "options": self.options.to_api(),
            "enabled": self.enabled,
            "template": self.template,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }


@dataclass
class AutomationRun(Record):
    id: str  # "arun_<ulid>"
    automation_id: str
    trigger: str  # the event's kind: code_change, schedule, webhook, manual, autopilot
    event_key: str
    created_at: str
    job_id: str | None = None
    message_id: str | None = None  # the round it added (grouped) or the job's first message
    skipped_reason: str | None = None
    changes: list[dict] = field(default_factory=list)  # refs of the SourceChanges it covers
    # Why the trigger itself failed before any job (e.g. the source pull request could not be read):
    # {"code", "message"}, the code one of service.codes.RunFailure's.
    error: dict | None = None


@dataclass(frozen=True)
class AutomationSpec:
    """What an API body asks for, checked."""

    name: str
    prompt: str
    trigger: Trigger
    options: Options
    enabled: bool


def check_cron(expr: str, time_zone: str) -> None:
    """InvalidRequest unless `expr` is a five-field cron expression no more frequent than schedules allow and
    `time_zone` an IANA zone name (service.automations.schedule), naming the trigger's field."""
    try:
        schedule.check_cron(expr, time_zone)
    except InvalidRequest as exc:
        raise InvalidRequest(
            f"`trigger.{exc.field}`".join(str(exc).split(f"`{exc.field}`", 1)), field=f"trigger.{exc.field}"
        ) from None


def parse_spec(body: dict, *, host: str, base: Automation | None = None) -> AutomationSpec:
    """Check a create body, or (given `base`) a PATCH body laid over `base`; InvalidRequest names the field."""
    _only(body, ("name", "prompt", "trigger", "options", "enabled"), "")
    merged: dict[str, Any] = (
        {}
        if base is None
        else {"name": base.name, "prompt": base.prompt, "trigger": base.trigger.to_api(), "enabled": base.enabled}
    )
    merged.update(body)
    options = {} if base is None else base.options.to_api()
    if "options" in body:
        if not isinstance(body["options"], dict):
            raise InvalidRequest("`options` must be an object", field="options")
        options.update(body["options"])
    return AutomationSpec(
        name=_text(merged, "name", NAME_MAX_CHARS),
        prompt=_text(merged, "prompt", PROMPT_MAX_CHARS),
        trigger=parse_trigger(merged.get("trigger"), host=host),
        options=parse_options(options),
        enabled=_bool(merged, "enabled", True, "enabled"),
    )


def parse_trigger(raw: Any, *, host: str) -> Trigger:
    """The trigger of an API body: its type's fields present and sound, no others."""
    if not isinstance(raw, dict):
        raise InvalidRequest("`trigger` is required: an object with a `type`", field="trigger")
    types = ", ".join(t.value for t in TriggerType)
    try:
        kind = TriggerType(raw.get("type"))
    except ValueError:
        raise InvalidRequest(f"`trigger.type` must be one of: {types}", field="trigger.type") from None
    allowed = {
        TriggerType.CODE_CHANGE: ("type", "repository", "mode", "cron", "timeZone"),
        TriggerType.SCHEDULE: ("type", "cron", "timeZone"),
        TriggerType.WEBHOOK: ("type",),
    }[kind]
    _only(raw, allowed, "trigger.", f" for a {kind.value} trigger")
    cron, zone = raw.get("cron"), raw.get("timeZone", "UTC")
    if not isinstance(zone, str):
        raise InvalidRequest("`trigger.timeZone` must be a string", field="trigger.timeZone")
    if cron is not None and not isinstance(cron, str):
        raise InvalidRequest("`trigger.cron` must be a string", field="trigger.cron")
    if kind is TriggerType.WEBHOOK:
        return Trigger(kind)
    if kind is TriggerType.SCHEDULE:
        if cron is None:
            raise InvalidRequest("a schedule trigger needs `trigger.cron`", field="trigger.cron")
        check_cron(cron, zone)
        return Trigger(kind, cron=cron, time_zone=zone)
    mode = _mode(raw.get("mode", ChangeMode.PER_CHANGE.value))
    if mode is ChangeMode.BATCHED and cron is None:
        raise InvalidRequest(
            "a batched code_change trigger needs `trigger.cron`: when to run over what was merged", field="trigger.cron"
        )
    if mode is ChangeMode.PER_CHANGE and cron is not None:
        raise InvalidRequest(
            "`trigger.cron` is only for `mode: batched`; a per_change trigger runs on each change", field="trigger.cron"
        )
    if cron is not None:
        check_cron(cron, zone)
    return Trigger(
        kind,
        repository=_repository(raw.get("repository"), host),
        mode=mode,
        cron=cron,
        time_zone=zone if cron is not None else "UTC",
    )


def parse_options(raw: dict) -> Options:
    """The options of an API body (camelCase), each in its range."""
    names = {
        "grouping": "grouping",
        "maxOpenPullRequests": "max_open_pull_requests",
        "maxRunsPerDay": "max_runs_per_day",
        "reviewers": "reviewers",
        "requestSourceReviews": "request_source_reviews",
        "commentOnSource": "comment_on_source",
        "maxTokens": "max_tokens",
        "docsCheckFirst": "docs_check_first",
    }
    _only(raw, tuple(names), "options.")
    defaults = Options()
    reviewers = raw.get("reviewers", [])
    if (
        not isinstance(reviewers, list)
        or len(reviewers) > MAX_REVIEWERS
        or not all(isinstance(r, str) and _REVIEWER.match(r) for r in reviewers)
    ):
        raise InvalidRequest(
            f"`options.reviewers` must be a list of at most {MAX_REVIEWERS} user logins", field="options.reviewers"
        )
    max_tokens = raw.get("maxTokens")
    if max_tokens is not None and (type(max_tokens) is not int or not 1 <= max_tokens <= MAX_TOKENS_CAP):
        raise InvalidRequest(
            f"`options.maxTokens` must be a whole number from 1 to {MAX_TOKENS_CAP}, or null", field="options.maxTokens"
        )
    return Options(
        grouping=_bool(raw, "grouping", defaults.grouping, "options.grouping"),
        max_open_pull_requests=_whole(
            raw, "maxOpenPullRequests", defaults.max_open_pull_requests, MAX_OPEN_PULL_REQUESTS
        ),
        max_runs_per_day=_whole(raw, "maxRunsPerDay", defaults.max_runs_per_day, MAX_RUNS_PER_DAY),
        reviewers=list(reviewers),
        request_source_reviews=_bool(
            raw, "requestSourceReviews", defaults.request_source_reviews, "options.requestSourceReviews"
        ),
        comment_on_source=_bool(raw, "commentOnSource", defaults.comment_on_source, "options.commentOnSource"),
        max_tokens=max_tokens,
        docs_check_first=_bool(raw, "docsCheckFirst", defaults.docs_check_first, "options.docsCheckFirst"),
    )


def _mode(raw: Any) -> ChangeMode:
    try:
        return ChangeMode(raw)
    except ValueError:
        raise InvalidRequest(
            f"`trigger.mode` must be one of: {', '.join(m.value for m in ChangeMode)}", field="trigger.mode"
        ) from None


def _repository(raw: Any, host: str) -> str:
    """The source repository: "owner/name" on GitHub, a bare repository's absolute path on the local host."""
    if raw is None:
        raise InvalidRequest(
            "a code_change trigger needs `trigger.repository`: the source repository to watch",
            field="trigger.repository",
        )
    if not isinstance(raw, str) or not 1 <= len(raw) <= REPOSITORY_MAX_CHARS or not raw.isprintable():
        raise InvalidRequest(
            f"`trigger.repository` must be text of 1 to {REPOSITORY_MAX_CHARS} characters", field="trigger.repository"
        )
    if host == "github" and not _GITHUB_REPOSITORY.match(raw):
        raise InvalidRequest(
            '`trigger.repository` must be a repository\'s "owner/name" on GitHub', field="trigger.repository"
        )
    if host == "local" and not raw.startswith("/"):
        raise InvalidRequest(
            "`trigger.repository` must be a local bare repository's absolute path", field="trigger.repository"
        )
    return raw


def _text(body: dict, name: str, max_chars: int) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(f"`{name}` is required: non-empty text", field=name)
    if len(value) > max_chars:
        raise InvalidRequest(f"`{name}` is longer than {max_chars} characters", field=name)
    return check_text(value, name)


def _bool(body: dict, name: str, default: bool, label: str) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise InvalidRequest(f"`{label}` must be true or false", field=label)
    return value


def _whole(body: dict, name: str, default: int, maximum: int) -> int:
    value = body.get(name, default)
    if type(value) is not int or not 1 <= value <= maximum:
        raise InvalidRequest(f"`options.{name}` must be a whole number from 1 to {maximum}", field=f"options.{name}")
    return value


def _only(body: dict, allowed: tuple[str, ...], prefix: str, where: str = "") -> None:
    for name in body:
        if name not in allowed:
            raise InvalidRequest(
                f"unknown field `{prefix}{name}`{where}; allowed: {', '.join(allowed)}", field=f"{prefix}{name}"
            )
