"""The one door through which work enters: creating a job and accepting a follow-up message.

Every rule is checked here once and in the API's order (prompt, project enabled, job not archived, monthly cap,
hourly quota, then the write and the kick); refusals come out as typed errors with one wording each. The API, the
dashboard and the GitHub comment handler keep only their own authorization and how they show a refusal.
"""

from collections.abc import Callable
from dataclasses import dataclass

from service.errors import InvalidRequest, JobArchived, ProjectDisabled, RateLimited
from service.models import Job, JobStatus, Message, Project
from service.prompts import check_prompt
from service.services import Services
from service.sources import check_source
from service.store.admission import Gate, Verdict
from service.store.apikeys import Guard
from service.store.jobs import IdempotencyClaim
from service.store.ratelimit import Quota, RateLimiter
from service.store.usage import cap_keys, cap_reached, month_of


class QuotaSpent(RateLimited):
    """The project used its jobs and messages of this hour; `quota` says how many and when more come."""

    def __init__(self, project: Project, quota: Quota) -> None:
        super().__init__(
            f"project {project.id} may create {quota.limit} jobs or messages per hour; "
            f"try again in {quota.reset_seconds} s",
            retry_after=quota.reset_seconds,
        )
        self.quota = quota


class GuardFailed(Exception):
    """A create's guard did not hold: its key does not pass (`records` None) or the key's or the project's record
    changed since they were read (`records`: both as they are now). Nothing was written or counted."""

    def __init__(self, records: tuple[bytes, bytes | None] | None) -> None:
        super().__init__("the key or the project changed since they were read")
        self.records = records


# What the intake refuses work with (MonthlyBudgetExceeded and QuotaSpent are RateLimited); a door shows these.
REFUSALS = (InvalidRequest, ProjectDisabled, JobArchived, RateLimited)


@dataclass(frozen=True)
class NewJob:
    """What a new job starts from, as a door hands it over (already authorized)."""

    prompt: str
    model: str
    ref: str
    as_draft: bool = False
    max_tokens: int | None = None
    source: str = "api"
    author: str | None = None
    key_id: str | None = None
    idempotency: IdempotencyClaim | None = None
    automation: dict | None = None  # the automation run it is: {"id", "runId", "trigger"} (service.automations)
    # A repository the round may read, never write, at that commit (service.sources); None: none.
    source_repository: str | None = None
    source_commit: str | None = None
    # The caller's key check, run in the create script against the key and project records the door checked
    # (service.api.create); GuardFailed when it does not hold.
    guard: Guard | None = None


@dataclass(frozen=True)
class Accepted:
    """The job that took the work, with the project's hourly quota after it (None: a replayed create) and, for a
    follow-up, the message stored."""

    job: Job
    quota: Quota | None
    message: Message | None = None


def ensure_open(project: Project, job: Job | None = None) -> None:
    """ProjectDisabled or JobArchived when the project (or job) takes no more work."""
    if not project.enabled:
        raise ProjectDisabled(f"project {project.id} is disabled: its repository is no longer reachable")
    if job is not None and job.status is JobStatus.ARCHIVED:  # refused before it uses quota; the store re-checks
        raise JobArchived(f"job {job.id} is archived and takes no more messages")


def create(services: Services, project: Project, new: NewJob) -> Accepted:
    """Store a new job and queue its run: project enabled, prompt rules, then the monthly cap, the hourly quota,
    the idempotency claim, the job's writes and its run's enqueue in one round trip (service.store.admission)."""
    ensure_open(project)
    prompt = check_prompt(new.prompt, services.settings.max_prompt_chars)
    reference = check_source(project, new.source_repository, new.source_commit)
    limiter = services.limiter
    quota_key, reset = limiter.window(project.id)
    job, admission = services.jobs.admit(
        project,
        prompt=prompt,
        model=new.model,
        ref=new.ref,
        as_draft=new.as_draft,
        source=new.source,
        author=new.author,
        key_id=new.key_id,
        max_tokens=new.max_tokens,
        idempotency=new.idempotency,
        gate=_gate(project, limiter, quota_key),
        automation=new.automation,
        source_repository=reference.repository,
        source_commit=reference.commit,
        # The enqueue runs in the create script, with the job's writes or not at all: no job is left unqueued
        # for the recovery sweep, and the create takes one round trip fewer.
        also=services.dispatcher.record_kick,
        guard=new.guard,
    )
    if admission.verdict is Verdict.STALE:
        raise GuardFailed(admission.records)
    if admission.verdict is Verdict.CAPPED:
        raise cap_reached(project.host, project.account, admission.used, admission.cap)
    quota = limiter.quota(admission.verdict is not Verdict.LIMITED, admission.used, reset)
    if admission.verdict is Verdict.LIMITED:
        raise QuotaSpent(project, quota)
    assert job is not None  # nothing else refuses
    if admission.verdict is Verdict.REPLAY:
        return Accepted(job, None)
    return Accepted(job, quota)


def gate(project: Project, limiter: RateLimiter) -> Gate:
    """What the create script checks for `project`: its account's monthly cap and this hour's quota."""
    return _gate(project, limiter, limiter.window(project.id)[0])


def _gate(project: Project, limiter: RateLimiter, quota_key: str) -> Gate:
    return Gate(
        **cap_keys(project.host, project.account, month_of()),
        quota_key=quota_key,
        quota_limit=limiter.limit,
        quota_ttl=limiter.ttl,
    )


def follow_up(
    services: Services,
    project: Project,
    job: Job,
    prompt: str,
    *,
    source: str = "api",
    author: str | None = None,
    key_id: str | None = None,
    threads: list | None = None,
    interrupt: bool = False,
    source_repository: str | None = None,
    source_commit: str | None = None,
    announce: Callable[[Job, Message], None] | None = None,
    kick: bool = True,
) -> Accepted:
    """Queue a follow-up message of `job` and (unless `kick` is False) its run; every refusal comes before any
    quota is used. `interrupt` cancels the running round and the waiting ones, as cancel does (issue 22).
    `source_repository` and `source_commit`: a repository the round may read, never write (service.sources).

    `announce` runs between storing the message and queueing its run (a pull request's tracking comment, which
    the run then finds and edits); the message is stored by then, so it must not raise."""
    prompt = check_prompt(prompt, services.settings.max_prompt_chars)
    reference = check_source(project, source_repository, source_commit)
    ensure_open(project, job)
    services.usage.check(project.host, project.account)
    quota = services.limiter.consume(project.id)
    if not quota.allowed:
        raise QuotaSpent(project, quota)
    job, message = services.jobs.add_message(
        job.id,
        prompt=prompt,
        source=source,
        author=author,
        key_id=key_id,
        threads=threads,
        interrupt=interrupt,
        source_repository=reference.repository,
        source_commit=reference.commit,
    )
    if announce is not None:
        announce(job, message)
    if kick:
        services.dispatcher.try_kick(job.id)
    return Accepted(job, quota, message)
