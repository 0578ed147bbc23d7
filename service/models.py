"""The records the service keeps, as dataclasses, and the enums of their states."""

import enum
from dataclasses import asdict, dataclass, field, fields


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


class Role(str, enum.Enum):
    USER = "user"
    AGENT = "agent"


class Record:
    """JSON round-trip for the dataclasses below (enums stored as their values)."""

    def to_dict(self) -> dict:
        return {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict):
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


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
    usage: dict = field(default_factory=dict)  # model tokens of all the job's runs: inputTokens, outputTokens

    def __post_init__(self) -> None:
        self.status = JobStatus(self.status)

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

    def __post_init__(self) -> None:
        self.role = Role(self.role)
        if self.status is not None:
            self.status = MessageStatus(self.status)

    def to_api(self) -> dict:
        """The message as the conversation endpoint returns it."""
        data = {
            "id": self.id,
            "role": self.role.value,
            "content": self.content,
            "createdAt": self.created_at,
        }
        if self.role is Role.USER:
            data.update(status=self.status.value, source=self.source, author=self.author, error=self.error,
                        usage=self.usage)
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

    def allows(self, project: "Project") -> bool:
        """Whether this key may act on `project`."""
        if self.revoked_at or project.account != self.account:
            return False
        return not self.projects or project.id in self.projects

    def to_public(self) -> dict:
        """What may be shown about a key after creation: never its hash."""
        return {
            "id": self.id,
            "account": self.account,
            "name": self.name,
            "projects": self.projects,
            "createdAt": self.created_at,
            "lastUsedAt": self.last_used_at,
            "revokedAt": self.revoked_at,
        }


@dataclass
class PullRequest(Record):
    """A pull request as the worker sees it on any code host."""

    number: int
    url: str
    state: str = "open"
