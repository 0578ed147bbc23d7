"""The records the service keeps, as dataclasses, and the enums of their states."""

import copy
import enum
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from service.billing import add_records


class JobStatus(str, enum.Enum):
    ACTIVE = "active"
    COMPLETED = "completed"
    ARCHIVED = "archived"
    FAILED = "failed"


class MessageStatus(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    PROCESSED = "processed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class RoundOutcome(str, enum.Enum):
    """What a round that ran to its end did (failed and cancelled rounds have none): changed the docs, found no
    change needed (a request the docs already meet: an outcome, with its reason), or answered a question."""

    CHANGED = "changed"
    NO_CHANGE_NEEDED = "no_change_needed"
    ANSWERED = "answered"


class KeyAccess(str, enum.Enum):
    """What an API key may do: read only (GET), or read and write."""

    READ_ONLY = "read_only"
    READ_WRITE = "read_write"


class Role(str, enum.Enum):
    USER = "user"
    AGENT = "agent"


_E = TypeVar("_E", bound=enum.Enum)
_MEMBERS: dict[type, dict[Any, Any]] = {}


def member(kind: type[_E], value: Any) -> _E:
    """`kind(value)`, looked up in a table: the Enum call is the larger part of loading a record's state."""
    members = _MEMBERS.get(kind)
    if members is None:
        members = _MEMBERS[kind] = {m.value: m for m in kind}
    try:
        return members[value]
    except (KeyError, TypeError):
        return kind(value)  # a member itself, or the ValueError the Enum call gives


class Record:
    """JSON round-trip for the dataclasses below (enums stored as their values)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # set on each subclass by @dataclass

    def to_dict(self) -> dict:
        # What dataclasses.asdict gives (records hold no nested dataclasses: plain values, dicts and lists), without
        # its recursive deep copy of every plain value, which cost most of writing a job and its message.
        out = {}
        for name in _field_order(type(self)):
            value = getattr(self, name)
            if isinstance(value, enum.Enum):
                value = value.value
            elif type(value) not in _PLAIN:
                value = copy.deepcopy(value)  # a dict or list: the caller may change it, the record must not
            out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict):
        plan = _load_plan(cls)
        if plan.direct and plan.fields.issuperset(data) and plan.required.issubset(data):  # written by this version
            # What the dataclass's __init__ would do, without its keyword-argument call: every API request loads
            # a key, a project and a job, and that call was most of the cost.
            record = object.__new__(cls)
            attrs = record.__dict__
            attrs.update(plan.defaults)
            for name, make in plan.factories:
                if name not in data:
                    attrs[name] = make()
            attrs.update(data)
            if plan.post_init is not None:
                plan.post_init(record)
            return record
        return cls(**{k: v for k, v in data.items() if k in plan.fields})


@dataclass(frozen=True)
class _LoadPlan:
    fields: frozenset[str]
    required: frozenset[str]  # fields without a default
    defaults: dict[str, Any]
    factories: tuple[tuple[str, Any], ...]  # (field, default_factory)
    post_init: Any
    direct: bool  # its __init__ only sets its fields: no __slots__, no field left out of __init__


_PLAIN = frozenset({str, int, float, bool, type(None)})
_FIELD_ORDER: dict[type, tuple[str, ...]] = {}
_LOAD_PLANS: dict[type, _LoadPlan] = {}


def _load_plan(cls: type) -> _LoadPlan:
    # Worked out once per class from its dataclass fields.
    plan = _LOAD_PLANS.get(cls)
    if plan is None:
        every = fields(cls)
        plan = _LOAD_PLANS[cls] = _LoadPlan(
            fields=frozenset(f.name for f in every),
            required=frozenset(f.name for f in every if f.default is MISSING and f.default_factory is MISSING),
            defaults={f.name: f.default for f in every if f.default is not MISSING},
            factories=tuple((f.name, f.default_factory) for f in every if f.default_factory is not MISSING),
            post_init=getattr(cls, "__post_init__", None),
            direct="__slots__" not in vars(cls) and all(f.init for f in every),
        )
    return plan


def _field_order(cls: type) -> tuple[str, ...]:
    names = _FIELD_ORDER.get(cls)
    if names is None:
        names = _FIELD_ORDER[cls] = tuple(f.name for f in fields(cls))
    return names


@dataclass
class Project(Record):
    id: str
    account: str
    host: str  # code host name: "local" or "github"
    repository: str  # host-specific locator: a bare repository path, or "owner/name"
    web_url: str
    ref: str
    docs_root: str = ""
    enabled: bool = True
    created_at: str = ""
    host_data: dict = field(default_factory=dict)
    # Why the project was disabled: the `error.code` a run of it fails with (e.g. "installation_removed").
    disabled_reason: str | None = None
    # An admin switched it off too: it stays off when its code host gives access again (see projectstate).
    admin_disabled: bool = False
    max_tokens: int | None = None  # the default token budget of the project's jobs; None: no cap


@dataclass
class Job(Record):
    id: str
    project_id: str
    account: str
    status: JobStatus
    repository_url: str
    ref: str
    model: str
    created_at: str
    updated_at: str
    branch: str | None = None
    pr_link: str | None = None
    pr_number: int | None = None
    archived_at: str | None = None
    error: dict | None = None
    as_draft: bool = False
    messages: int = 0  # how many user messages the job has had; the next one's sequence number
    usage: dict = field(default_factory=dict)  # model tokens of all the job's runs (service.billing.USAGE_FIELDS)
    max_tokens: int | None = None  # the job's budget over all its rounds, in billable tokens; None: no cap
    automation: dict | None = None  # the automation run that started it: {"id", "runId", "trigger"}

    def __post_init__(self) -> None:
        self.status = member(JobStatus, self.status)

    def to_api(self) -> dict:
        """The job record as the API returns it (spec fields, then Copydesk's additions)."""
        return {
            "id": self.id,
            "status": self.status.value,
            "source": {"repository": self.repository_url, "ref": self.ref},
            "model": self.model,
            # The spec: prLink "is null while the job is active", a follow-up run included; the link is
            # kept and shows again when the run ends.
            "prLink": None if self.status is JobStatus.ACTIVE else self.pr_link,
            "createdAt": self.created_at,
            "archivedAt": self.archived_at,
            "branch": self.branch,
            "updatedAt": self.updated_at,
            "error": self.error,
            **({"automation": self.automation} if self.automation is not None else {}),
        }


@dataclass
class Message(Record):
    id: str
    job_id: str
    seq: int  # position among the job's user messages: 0 is the create prompt
    role: Role
    content: str
    created_at: str
    status: MessageStatus | None = None  # user messages only
    source: str = "api"
    author: str | None = None
    attempts: int = 0
    reply_to: str | None = None  # agent messages: the user message they answer
    commit: str | None = None
    changed_files: list = field(default_factory=list)
    error: dict | None = None
    usage: dict | None = None  # user messages: model tokens of the run that processed it
    key_id: str | None = None  # user messages sent through the API: the key that sent it (monthly usage per key)
    # User messages from review (line) comments: the review threads to answer when the round ends (their first
    # comments' ids on the code host).
    threads: list = field(default_factory=list)
    # User messages: a repository the round may read (never write) at `source_commit`: another repository of the
    # same installation ("owner/name") on GitHub, a bare repository's path on the local host (service.sources).
    source_repository: str | None = None
    source_commit: str | None = None  # None: the source's default branch head when the round starts
    # User messages whose round ran to its end: what it did, and why no change was needed (that outcome only).
    outcome: RoundOutcome | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        self.role = Role(self.role)
        if self.status is not None:
            self.status = MessageStatus(self.status)
        if self.outcome is not None:
            self.outcome = RoundOutcome(self.outcome)

    def to_api(self) -> dict:
        """The message as the conversation endpoint returns it."""
        data: dict[str, Any] = {
            "id": self.id,
            "role": self.role.value,
            "content": self.content,
            "createdAt": self.created_at,
        }
        if self.role is Role.USER:
            assert self.status is not None  # a user message always has a status
            data.update(
                status=self.status.value,
                source=self.source,
                author=self.author,
                error=self.error,
                usage=None if self.usage is None else add_records(None, self.usage),
                outcome=self.outcome and self.outcome.value,
                reason=self.reason,
            )
        else:
            data.update(replyTo=self.reply_to, commit=self.commit, changedFiles=self.changed_files)
        return data


@dataclass
class ApiKey(Record):
    id: str
    account: str
    hash: str
    created_at: str
    name: str = ""
    projects: list = field(default_factory=list)  # empty: every project of the account
    last_used_at: str | None = None
    revoked_at: str | None = None
    access: KeyAccess = KeyAccess.READ_WRITE
    expires_at: str | None = None  # None: never expires
    created_by: str = ""  # who made it: a GitHub login, or "operator" for the CLI and the login link
    revoked_by: str | None = None
    use_count: int = 0  # kept beside the record, like last_used_at
    # The code host family of the key's account ("local" or "github", as Project.host): local and GitHub accounts
    # share one namespace of names, so a key works only on projects of its own family. None: not recorded (below).
    host: str | None = None

    def __post_init__(self) -> None:
        self.access = member(KeyAccess, self.access)

    @property
    def code_host(self) -> str | None:
        """The code host family the key works on; None: any, as for keys made before `host` was recorded."""
        # Such an older key is GitHub's when a GitHub login created it: only the dashboard's GitHub sign-in records
        # one (the CLI and the operator's link record "operator"). One the operator made stays unbound: the CLI
        # made keys for GitHub accounts too, and refusing those would break the callers that hold them.
        if self.host is not None:
            return self.host
        return None if self.created_by in ("", "operator") else "github"

    def works_on(self, host: str) -> bool:
        """Whether the key may be used on projects of code host `host` at all."""
        return self.code_host is None or self.code_host == host

    @property
    def prefix(self) -> str:
        """The part of the key that may be shown: `cdk_` and the public id."""
        return "cdk_" + self.id.removeprefix("key_")

    def expired(self, at: str) -> bool:
        """Whether the key had expired at the ISO timestamp `at`."""
        return self.expires_at is not None and self.expires_at <= at

    @property
    def writes(self) -> bool:
        return self.access is KeyAccess.READ_WRITE

    def allows(self, project: "Project") -> bool:
        """Whether this key may act on `project`."""
        if self.revoked_at or project.account != self.account:
            return False
        if not self.works_on(project.host):
            return False  # a same-named account on the other code host
        return not self.projects or project.id in self.projects

    def to_public(self) -> dict:
        """What may be shown about a key after creation: never its hash."""
        return {
            "id": self.id,
            "prefix": self.prefix,
            "account": self.account,
            "host": self.code_host,
            "name": self.name,
            "projects": self.projects,
            "access": self.access.value,
            "createdAt": self.created_at,
            "createdBy": self.created_by,
            "expiresAt": self.expires_at,
            "lastUsedAt": self.last_used_at,
            "useCount": self.use_count,
            "revokedAt": self.revoked_at,
            "revokedBy": self.revoked_by,
        }


@dataclass
class KeyEvent(Record):
    """One line of an account's API-key audit list: who created or revoked which key, and when."""

    at: str
    account: str
    actor: str
    action: str  # "created" or "revoked"
    key_id: str
    key_name: str = ""

    def to_public(self) -> dict:
        return {
            "at": self.at,
            "account": self.account,
            "actor": self.actor,
            "action": self.action,
            "keyId": self.key_id,
            "keyName": self.key_name,
        }


@dataclass
class PullRequest(Record):
    """A pull request as the worker sees it on any code host."""

    number: int
    url: str
    state: str = "open"


class DeliveryStatus(str, enum.Enum):
    PENDING = "pending"  # not yet delivered; a retry is scheduled
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # every attempt failed and no retry is left


@dataclass
class WebhookEndpoint(Record):
    """Where a project's events are pushed (Standard Webhooks); the secret is kept sealed, never in plain text."""

    id: str
    project_id: str
    url: str
    sealed_secret: str
    created_at: str
    description: str = ""
    events: list = field(default_factory=list)  # event types to send; empty: every type
    enabled: bool = True
    disabled_reason: str | None = None
    failing_since: str | None = None  # the first failed attempt since the last success
    # After a rotation the previous secret still signs (a second signature) until `previous_until`.
    sealed_previous: str | None = None
    previous_until: str | None = None

    def wants(self, event_type: str) -> bool:
        return self.enabled and (not self.events or event_type in self.events)

    def to_api(self) -> dict:
        return {
            "id": self.id,
            "url": self.url,
            "description": self.description,
            "events": self.events,
            "enabled": self.enabled,
            "disabledReason": self.disabled_reason,
            "failingSince": self.failing_since,
            "createdAt": self.created_at,
        }


@dataclass
class Delivery(Record):
    """One event sent to one endpoint, with its attempts; `id` is the `webhook-id` every attempt carries."""

    id: str
    endpoint_id: str
    job_id: str
    event_id: str  # the id of the event's entry in the outbox
    event_type: str
    payload: str  # the body exactly as signed and sent
    created_at: str
    status: DeliveryStatus = DeliveryStatus.PENDING
    attempts: int = 0
    response_status: int | None = None
    latency_ms: int | None = None
    error: str | None = None
    last_attempt_at: str | None = None
    next_attempt_at: str | None = None

    def __post_init__(self) -> None:
        self.status = DeliveryStatus(self.status)

    def to_api(self) -> dict:
        return {
            "id": self.id,
            "webhookId": self.endpoint_id,
            "jobId": self.job_id,
            "type": self.event_type,
            "status": self.status.value,
            "attempts": self.attempts,
            "responseStatus": self.response_status,
            "latencyMs": self.latency_ms,
            "error": self.error,
            "createdAt": self.created_at,
            "lastAttemptAt": self.last_attempt_at,
            "nextAttemptAt": self.next_attempt_at,
        }
