"""Jobs, their conversations and their queues of pending messages, changed atomically in Redis."""

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import redis

from service.billing import add_records, billable_of
from service.clock import now_iso, parse_iso
from service.codes import RunFailure
from service.errors import (
    IdempotencyConflict,
    InvalidRequest,
    JobActive,
    JobArchived,
    JobNotActive,
    JobNotFound,
)
from service.ids import UlidGenerator, new_id
from service.job_events import EventType
from service.lease import Fence, watched
from service.models import Job, JobStatus, Message, MessageStatus, Project, Role, RoundOutcome
from service.store.admission import Admission, Admitter, Gate, Idempotency, Verdict
from service.store.apikeys import Guard
from service.store.codec import dump, load
from service.store.commands import CommandRecorder
from service.store.job_events import EventLog
from service.store.jobkeys import (
    cancel_key,
    ci_seen_index_key,
    conversation_key,
    idem_key,
    job_key,
    message_key,
    owned,
    pending_key,
)
from service.store.replies import text, transaction
from service.store.roundend import last_round_state, settle_round

log = logging.getLogger(__name__)

IDEMPOTENCY_TTL_SECONDS = 24 * 3600
CANCEL_TTL_SECONDS = 3 * 3600
PENDING_JOBS = "cd:jobs:pending"  # jobs that have at least one message waiting or running
FINISHED_JOBS = "cd:jobs:finished"  # completed or failed jobs, scored by when they last changed
_JOB_ID = re.compile(r"^job_[0-9A-HJKMNP-TV-Z]{26}$")
_MESSAGE_ID = re.compile(r"^msg_[0-9A-HJKMNP-TV-Z]{26}$")


def is_job_id(text: str) -> bool:
    """Whether `text` has the form of a job id (anything else is never looked up)."""
    return bool(_JOB_ID.match(text))


def _index_key(project_id: str, status: JobStatus | None = None) -> str:
    base = f"cd:project:{project_id}:jobs"
    return base if status is None else f"{base}:{status.value}"


@dataclass(frozen=True)
class IdempotencyClaim:
    """A create call's `Idempotency-Key`, scoped to the caller, and a hash of its body."""

    scope: str
    body_hash: str

    @property
    def key(self) -> str:
        return f"cd:idem:{self.scope}"


@dataclass
class RunOutcome:
    """What one processed message changed on its job."""

    reply: str = ""
    error: dict | None = None
    commit: str | None = None
    changed_files: list = field(default_factory=list)
    branch: str | None = None
    pr_link: str | None = None
    pr_number: int | None = None
    usage: dict | None = None  # the run's Usage.to_api(), when a model was called
    cancelled: bool = False  # the run stopped because the job was cancelled; nothing of it was pushed
    outcome: RoundOutcome | None = None  # what a run that ended well did (None: a failed or cancelled run)
    reason: str | None = None  # why no change was needed (outcome NO_CHANGE_NEEDED only)


def round_outcome(outcome: RunOutcome) -> tuple[RoundOutcome, str | None]:
    """What a processed run did, with its reason: as the runner said, else from its commit (a caller that
    records a run without saying, as the older workers do)."""
    if outcome.outcome is RoundOutcome.NO_CHANGE_NEEDED:
        return outcome.outcome, outcome.reason or outcome.reply or None
    if outcome.outcome is not None:
        return outcome.outcome, None
    return (RoundOutcome.CHANGED if outcome.commit is not None else RoundOutcome.ANSWERED), None


def spent(usage: dict | None) -> int:
    """The billable tokens of a usage record (service.billing)."""
    return billable_of(usage)


def remaining_budget(job: Job) -> int | None:
    """The tokens left of the job's `maxTokens` (negative once a run overshot it); None without a budget."""
    return None if job.max_tokens is None else job.max_tokens - spent(job.usage)


def add_usage(total: dict, run: dict | None) -> dict:
    """`total` plus one run's token counts (both in the API's camelCase form)."""
    return add_records(total, run)


class JobStore:
    def __init__(self, client: redis.Redis, ids: UlidGenerator, events: EventLog | None = None) -> None:
        self._redis = client
        self._ids = ids
        self.events = events or EventLog(client, retention=1000)
        self._admitter = Admitter(client)

    # -- reading -----------------------------------------------------------------------------

    def find(self, job_id: str) -> Job | None:
        if not _JOB_ID.match(job_id):
            return None
        return load(Job, self._redis.get(job_key(job_id)))

    def get(self, job_id: str) -> Job:
        """The job, or JobNotFound."""
        job = self.find(job_id)
        if job is None:
            raise JobNotFound(f"no job {job_id}")
        return job

    def message(self, message_id: str) -> Message | None:
        return load(Message, self._redis.get(message_key(message_id)))

    def conversation(self, job_id: str) -> list[Message]:
        """The job's messages, oldest first."""
        ids = [text(i) for i in self._redis.lrange(conversation_key(job_id), 0, -1)]
        raws = self._redis.mget([message_key(i) for i in ids]) if ids else []
        return [load(Message, raw) for raw in raws if raw is not None]

    def first_prompts(self, job_ids: list[str]) -> dict[str, str]:
        """Each job's first prompt (the create prompt, first in its conversation), in two round trips."""
        if not job_ids:
            return {}
        with self._redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.lindex(conversation_key(job_id), 0)
            firsts = pipe.execute()
        known = [(job_id, text(first)) for job_id, first in zip(job_ids, firsts, strict=True) if first]
        raws = self._redis.mget([message_key(message_id) for _, message_id in known]) if known else []
        messages = {job_id: load(Message, raw) for (job_id, _), raw in zip(known, raws, strict=True)}
        return {job_id: m.content for job_id, m in messages.items() if m is not None and m.role is Role.USER}

    def conversation_page(self, job_id: str, *, limit: int, cursor: str | None) -> tuple[list[Message], str | None]:
        """Up to `limit` of the job's messages, oldest first, after the message `cursor` (the last id of the
        previous page); the next page's cursor, None at the end. A conversation only grows at its end, so a
        cursor stays valid."""
        start = 0
        if cursor is not None:
            position = self._redis.lpos(conversation_key(job_id), cursor) if _MESSAGE_ID.match(cursor) else None
            if position is None:
                raise InvalidRequest("cursor is not one this API returned for this job", field="cursor")
            start = int(cast(int, position)) + 1
        ids = [text(i) for i in self._redis.lrange(conversation_key(job_id), start, start + limit)]
        page = ids[:limit]
        raws = self._redis.mget([message_key(i) for i in page]) if page else []
        messages = [load(Message, raw) for raw in raws if raw is not None]
        return messages, (page[-1] if len(ids) > limit else None)

    def page(
        self, project_id: str, *, status: JobStatus | None, limit: int, cursor: str | None
    ) -> tuple[list[Job], str | None]:
        """A page of the project's jobs, newest first; the cursor is the last id of the previous page."""
        if cursor is not None and not _JOB_ID.match(cursor):
            raise InvalidRequest("cursor is not one this API returned", field="cursor")
        upper = f"({cursor}" if cursor else "+"
        ids = [
            text(i)
            for i in self._redis.zrevrangebylex(_index_key(project_id, status), upper, "-", start=0, num=limit + 1)
        ]
        page = ids[:limit]
        raws = self._redis.mget([job_key(i) for i in page]) if page else []
        jobs = [load(Job, raw) for raw in raws if raw is not None]
        return jobs, (page[-1] if len(ids) > limit else None)

    def move_repository(self, project_id: str, repository_url: str) -> int:
        """Point every job of the project at its repository's new web URL (after a rename or a transfer); returns
        how many changed. Each job is rewritten in its own transaction, so a run's concurrent write wins nothing."""
        moved = 0
        for raw_id in self._redis.zrangebylex(_index_key(project_id), "-", "+"):
            job_id = text(raw_id)

            def attempt(pipe: redis.client.Pipeline, job_id: str = job_id) -> bool:
                job = load(Job, pipe.get(job_key(job_id)))
                if job is None or job.repository_url == repository_url:
                    return False
                job.repository_url = repository_url
                pipe.multi()
                pipe.set(job_key(job_id), dump(job))
                return True

            moved += bool(transaction(self._redis, attempt, job_key(job_id)))
        return moved

    def counts(self, project_id: str) -> dict[str, int]:
        """How many of the project's jobs are in each status."""
        with self._redis.pipeline(transaction=False) as pipe:
            for status in JobStatus:
                pipe.zcard(_index_key(project_id, status))
            return {status.value: int(n) for status, n in zip(JobStatus, pipe.execute(), strict=True)}

    def status_totals(self, project_ids: list[str]) -> dict[str, int]:
        """How many jobs of all these projects are in each status (one round trip)."""
        with self._redis.pipeline(transaction=False) as pipe:
            for project_id in project_ids:
                for status in JobStatus:
                    pipe.zcard(_index_key(project_id, status))
            found = pipe.execute()
        totals = dict.fromkeys((status.value for status in JobStatus), 0)
        for n, count in enumerate(found):
            totals[list(JobStatus)[n % len(JobStatus)].value] += int(count)
        return totals

    def has_pending(self, job_id: str) -> bool:
        """Whether any message of the job waits or runs."""
        return bool(self._redis.llen(pending_key(job_id)))

    def pending_jobs(self) -> list[str]:
        """Ids of jobs that have messages waiting or running."""
        return sorted(text(i) for i in self._redis.smembers(PENDING_JOBS))

    def finished_before(self, cutoff: datetime) -> list[str]:
        """Ids of completed or failed jobs that have not changed since `cutoff`."""
        return [text(i) for i in self._redis.zrangebyscore(FINISHED_JOBS, "-inf", cutoff.timestamp())]

    def replay(self, claim: IdempotencyClaim) -> Job | None:
        """The job an earlier create with this idempotency claim made, if any (conflict if the body differs)."""
        earlier = self._redis.hgetall(claim.key)
        return self._resolve_claim(claim, earlier) if earlier else None

    # -- the API's writes --------------------------------------------------------------------

    def create(
        self,
        project: Project,
        *,
        prompt: str,
        model: str,
        ref: str,
        as_draft: bool,
        source: str = "api",
        author: str | None = None,
        key_id: str | None = None,
        max_tokens: int | None = None,
        idempotency: IdempotencyClaim | None = None,
        source_repository: str | None = None,
        source_commit: str | None = None,
    ) -> tuple[Job, bool]:
        """Store a new `active` job and its first message; returns (job, created).

        With an idempotency claim seen before, returns the first job instead (created False).
        """
        job, admission = self.admit(
            project,
            prompt=prompt,
            model=model,
            ref=ref,
            as_draft=as_draft,
            source=source,
            author=author,
            key_id=key_id,
            max_tokens=max_tokens,
            idempotency=idempotency,
            source_repository=source_repository,
            source_commit=source_commit,
        )
        assert job is not None  # without a gate, nothing refuses
        return job, admission.verdict is Verdict.CREATED

    def admit(
        self,
        project: Project,
        *,
        prompt: str,
        model: str,
        ref: str,
        as_draft: bool,
        source: str = "api",
        author: str | None = None,
        key_id: str | None = None,
        max_tokens: int | None = None,
        idempotency: IdempotencyClaim | None = None,
        gate: Gate | None = None,
        automation: dict | None = None,
        source_repository: str | None = None,
        source_commit: str | None = None,
        also: Callable[[Any, str], None] | None = None,
        guard: Guard | None = None,
    ) -> tuple[Job | None, Admission]:
        """Check `gate` (monthly cap, hourly quota) and the idempotency claim, then store a new `active` job and
        its first message, all in one round trip (service.store.admission). `also(writes, job_id)` records more
        writes that happen only with the job's (the API's create: the enqueue of its run). `guard`: the caller's
        key check, run first in the same script (service.store.apikeys.GUARD).

        Returns the new job, or on a replay the earlier one (IdempotencyConflict if the body differs); None when
        the cap or the quota refused it.
        """
        stamp = now_iso()
        job = Job(
            id=new_id("job", self._ids),
            project_id=project.id,
            account=project.account,
            status=JobStatus.ACTIVE,
            repository_url=project.web_url,
            ref=ref,
            model=model,
            created_at=stamp,
            updated_at=stamp,
            as_draft=as_draft,
            messages=1,
            max_tokens=max_tokens,
            automation=automation,
        )
        message = self._user_message(job.id, 0, prompt, source, author, stamp, key_id)
        message.source_repository, message.source_commit = source_repository, source_commit
        recorder = CommandRecorder()
        writes = cast(Any, recorder)  # redis-py types its command methods for a client; the recorder is one
        self._write_job(writes, job, None)
        writes.zadd(_index_key(project.id), {job.id: 0})
        self._enqueue_message(writes, message)
        self.events.append(writes, job, EventType.JOB_CREATED)
        if idempotency is not None:
            # So that deleting the job finds its entry (the key is a hash of the caller's scope).
            writes.set(idem_key(job.id), idempotency.key, ex=IDEMPOTENCY_TTL_SECONDS)
        if also is not None:
            also(writes, job.id)
        claim = (
            None
            if idempotency is None
            else Idempotency(idempotency.key, idempotency.body_hash, IDEMPOTENCY_TTL_SECONDS)
        )
        admission = self._admitter.admit(job.id, recorder, gate, claim, guard)
        if admission.verdict is Verdict.REPLAY:
            assert idempotency is not None
            earlier = {b"hash": (admission.earlier_hash or "").encode(), b"job": (admission.earlier_job or "").encode()}
            return self._resolve_claim(idempotency, earlier), admission
        return (job if admission.verdict is Verdict.CREATED else None), admission

    def add_message(
        self,
        job_id: str,
        *,
        prompt: str,
        source: str = "api",
        author: str | None = None,
        key_id: str | None = None,
        threads: list[str] | None = None,
        interrupt: bool = False,
        source_repository: str | None = None,
        source_commit: str | None = None,
    ) -> tuple[Job, Message]:
        """Queue a follow-up message; the job becomes (or stays) `active`. Refused when archived.

        With `interrupt`, in the same transaction the job's waiting messages are cancelled and its running one is
        asked to stop, as `cancel` does: the new message runs next, from the state the last finished round left."""

        def attempt(pipe: redis.client.Pipeline):
            job = self._load_or_raise(pipe, job_id)
            if job.status is JobStatus.ARCHIVED:
                raise JobArchived(f"job {job_id} is archived and takes no more messages")
            waiting = self._waiting(pipe, job_id) if interrupt else []
            running = [m for m in waiting if m.status is MessageStatus.RUNNING]
            stamp = now_iso()
            message = self._user_message(job.id, job.messages, prompt, source, author, stamp, key_id)
            message.threads = list(threads or [])
            message.source_repository, message.source_commit = source_repository, source_commit
            old_status = job.status
            job.status, job.updated_at, job.messages = JobStatus.ACTIVE, stamp, job.messages + 1
            job.error = None
            pipe.multi()
            self._cancel_queued(pipe, job_id, waiting)
            if running:
                pipe.set(cancel_key(job_id), running[0].id, ex=CANCEL_TTL_SECONDS)
            self._write_job(pipe, job, old_status)
            self._enqueue_message(pipe, message)
            return job, message

        return transaction(self._redis, attempt, job_key(job_id), pending_key(job_id))

    def archive(self, job_id: str, *, idle_since: datetime | None = None) -> Job:
        """Archive a job (idempotent): messages still waiting are cancelled; a running one finishes.

        With `idle_since`, only a completed or failed job unchanged since then is archived.
        """

        def attempt(pipe: redis.client.Pipeline):
            job = self._load_or_raise(pipe, job_id)
            if job.status is JobStatus.ARCHIVED or (idle_since is not None and not _idle(job, idle_since)):
                return job
            waiting = self._waiting(pipe, job_id)
            old_status = job.status
            stamp = now_iso()
            # `error` describes a failed job; the failed message keeps its own error in the conversation.
            job.status, job.archived_at, job.updated_at, job.error = JobStatus.ARCHIVED, stamp, stamp, None
            pipe.multi()
            self._write_job(pipe, job, old_status)
            self.events.append(pipe, job, EventType.JOB_ARCHIVED)
            running = [m for m in waiting if m.status is MessageStatus.RUNNING]
            self._cancel_queued(pipe, job_id, waiting)
            if not running:
                pipe.srem(PENDING_JOBS, job_id)
            return job

        return transaction(self._redis, attempt, job_key(job_id), pending_key(job_id))

    def delete(self, job_id: str) -> Job:
        """Remove a job and everything kept about it alone (see `keys_of`), its idempotency entries and its place in
        every index; the account's monthly usage totals stay. Refused (JobActive) while a message waits or runs.
        Returns the job as it was."""

        def attempt(pipe: redis.client.Pipeline) -> Job:
            job = self._load_or_raise(pipe, job_id)
            claim = pipe.get(idem_key(job_id))
            claims = [text(claim)] if claim is not None and pipe.hget(text(claim), "job") == job_id.encode() else []
            if job.status is JobStatus.ACTIVE or pipe.llen(pending_key(job_id)):
                raise JobActive(
                    f"job {job_id} is active: cancel it first (POST .../cancel), then delete it once "
                    "its run has stopped"
                )
            doomed = self.keys_of(job, pipe)
            pipe.multi()
            pipe.delete(*doomed, *claims)
            for status in (None, *JobStatus):
                pipe.zrem(_index_key(job.project_id, status), job_id)
            pipe.srem(PENDING_JOBS, job_id)
            pipe.zrem(FINISHED_JOBS, job_id)
            return job

        # The seen-check index too: a CI delivery deciding meanwhile adds to it, and its new key must go as well.
        return transaction(
            self._redis,
            attempt,
            job_key(job_id),
            pending_key(job_id),
            conversation_key(job_id),
            idem_key(job_id),
            ci_seen_index_key(job_id),
        )

    def keys_of(self, job: Job, client=None) -> list[str]:
        """Every key that belongs to the job alone (service.store.jobkeys): its own, its messages' and the
        `ci_seen_key`s its index lists."""
        reader = client or self._redis
        ids = [text(i) for i in reader.lrange(conversation_key(job.id), 0, -1)]
        messages = [load(Message, raw) for raw in reader.mget([message_key(i) for i in ids])] if ids else []
        commits = [m.commit for m in messages if m is not None and m.commit]
        seen = [text(k) for k in reader.smembers(ci_seen_index_key(job.id))]
        return [*owned(job.id, ids, pr_number=job.pr_number, commits=commits), *seen]

    # -- the worker's writes -----------------------------------------------------------------

    def start_next(self, job_id: str, fence: Fence | None = None) -> tuple[Job, Message] | None:
        """Mark the job's next waiting message as running and return it; None when nothing waits.

        With `fence`, only while the job's lease still carries its token (else LeaseLost).
        """

        def attempt(pipe: redis.client.Pipeline):
            if fence is not None:
                fence.ensure(pipe)
            head = pipe.lindex(pending_key(job_id), 0)
            job = load(Job, pipe.get(job_key(job_id)))
            if head is None or job is None:
                pipe.multi()
                pipe.srem(PENDING_JOBS, job_id)
                return None
            message = load(Message, pipe.get(message_key(text(head))))
            if job.status is JobStatus.ARCHIVED:
                # Left running by a worker that died after the job was archived: settle it, do not run it.
                message.status = MessageStatus.CANCELLED
                pipe.multi()
                pipe.set(message_key(message.id), dump(message))
                pipe.lpop(pending_key(job_id))
                return "again"
            message.status = MessageStatus.RUNNING
            message.attempts += 1
            pipe.multi()
            pipe.set(message_key(message.id), dump(message))
            self.events.append(
                pipe, job, EventType.RUN_STARTED, run={"messageId": message.id, "attempt": message.attempts}
            )
            return job, message

        while True:
            started = transaction(self._redis, attempt, job_key(job_id), pending_key(job_id), *watched(fence))
            if started != "again":
                return started

    def finish_message(self, job_id: str, message_id: str, outcome: RunOutcome, fence: Fence | None = None) -> Job:
        """Record a message's outcome, add the agent's reply, and settle the job's status.

        With `fence`, only while the job's lease still carries its token (else LeaseLost, nothing written).
        A run stopped by a cancel (or finished, having pushed nothing, while a cancel of it was under way) leaves
        the message `cancelled` and the job as its last finished round left it.
        """

        def attempt(pipe: redis.client.Pipeline):
            if fence is not None:
                fence.ensure(pipe)
            job = self._load_or_raise(pipe, job_id)
            pending = [text(m) for m in pipe.lrange(pending_key(job_id), 0, -1)]
            if not pending or pending[0] != message_id:
                log.warning("job %s: outcome of message %s discarded, it was settled already", job_id, message_id)
                return job
            message = load(Message, pipe.get(message_key(message_id)))
            cancelling = pipe.get(cancel_key(job_id)) == message_id.encode()
            cancelled = outcome.cancelled or (cancelling and outcome.commit is None)
            earlier = self.conversation(job_id) if cancelled else []
            stamp = now_iso()
            had_pull = job.pr_number is not None
            end = settle_round(
                job_status=job.status,
                job_error=job.error,
                error=outcome.error,
                cancelled=cancelled,
                others_waiting=len(pending) > 1,
                last_round=last_round_state(earlier, exclude=message_id),
            )
            message.status, message.error, message.usage = end.message_status, end.message_error, outcome.usage
            if end.message_status is MessageStatus.PROCESSED:
                message.outcome, message.reason = round_outcome(outcome)
            job.usage = add_usage(job.usage, outcome.usage)
            old_status = job.status
            job.updated_at = stamp
            for name in ("branch", "pr_link", "pr_number"):
                if getattr(outcome, name) is not None:
                    setattr(job, name, getattr(outcome, name))
            job.status, job.error = end.job_status, end.job_error
            pipe.multi()
            pipe.set(message_key(message.id), dump(message))
            pipe.lpop(pending_key(job_id))
            pipe.delete(cancel_key(job_id))
            if len(pending) == 1:
                pipe.srem(PENDING_JOBS, job_id)
            if outcome.reply and not cancelled:
                reply = Message(
                    id=new_id("msg", self._ids),
                    job_id=job_id,
                    seq=message.seq,
                    role=Role.AGENT,
                    content=outcome.reply,
                    created_at=stamp,
                    reply_to=message.id,
                    commit=outcome.commit,
                    changed_files=outcome.changed_files,
                )
                pipe.set(message_key(reply.id), dump(reply))
                pipe.rpush(conversation_key(job_id), reply.id)
            self._write_job(pipe, job, old_status)
            self._emit_outcome(pipe, job, message, outcome, had_pull=had_pull, old_status=old_status)
            return job

        return transaction(
            self._redis, attempt, job_key(job_id), pending_key(job_id), cancel_key(job_id), *watched(fence)
        )

    def _emit_outcome(
        self, pipe, job: Job, message: Message, outcome: RunOutcome, *, had_pull: bool, old_status: JobStatus
    ) -> None:
        run = {"messageId": message.id, "outcome": message.status and message.status.value, "error": message.error}
        if message.outcome is not None:
            # `outcome` says how the run ended (processed, failed, cancelled); `result` what a processed one did.
            run.update(result=message.outcome.value, reason=message.reason)
        self.events.append(pipe, job, EventType.RUN_FINISHED, run=run)
        if outcome.commit is not None and outcome.pr_number is not None:
            pull = {"url": job.pr_link, "number": job.pr_number}
            self.events.append(pipe, job, EventType.PR_UPDATED if had_pull else EventType.PR_OPENED, pullRequest=pull)
        if (message.error or {}).get("code") == RunFailure.BUDGET_EXCEEDED:
            self.events.append(
                pipe,
                job,
                EventType.JOB_BUDGET_REACHED,
                budget={"maxTokens": job.max_tokens, "usedTokens": spent(job.usage)},
            )
        if message.status is MessageStatus.CANCELLED:
            self.events.append(pipe, job, EventType.JOB_CANCELLED, run={"messageId": message.id})
        elif job.status is not old_status and job.status in _SETTLED_EVENTS:
            self.events.append(pipe, job, _SETTLED_EVENTS[job.status])

    def cancel(self, job_id: str) -> Job:
        """Cancel an active job: waiting messages are cancelled; a running one is asked to stop (its run settles
        the job); with none running the job returns at once to the state its last finished round left."""

        def attempt(pipe: redis.client.Pipeline):
            job = self._load_or_raise(pipe, job_id)
            if job.status is not JobStatus.ACTIVE:
                raise JobNotActive(f"job {job_id} is {job.status.value}, not active: there is nothing to cancel")
            waiting = self._waiting(pipe, job_id)
            running = [m for m in waiting if m.status is MessageStatus.RUNNING]
            earlier = [] if running else self.conversation(job_id)
            pipe.multi()
            self._cancel_queued(pipe, job_id, waiting)
            if running:
                # The run settles the job when it stops; the key outlives no run (runs end within their timeout).
                pipe.set(cancel_key(job_id), running[0].id, ex=CANCEL_TTL_SECONDS)
                return job
            old_status = job.status
            job.status, job.error = last_round_state(earlier, exclude=None)
            job.updated_at = now_iso()
            pipe.srem(PENDING_JOBS, job_id)
            self._write_job(pipe, job, old_status)
            self.events.append(pipe, job, EventType.JOB_CANCELLED)
            return job

        return transaction(self._redis, attempt, job_key(job_id), pending_key(job_id))

    def hand_back(self, job_id: str, message_id: str, fence: Fence) -> bool:
        """Put a running message back to `queued` without counting its attempt (its worker is shutting down or
        lost Redis mid-run, it did not crash); only while the lease carries `fence`'s token. True when done."""

        def attempt(pipe: redis.client.Pipeline):
            fence.ensure(pipe)
            message = load(Message, pipe.get(message_key(message_id)))
            head = pipe.lindex(pending_key(job_id), 0)
            if (
                message is None
                or head is None
                or text(head) != message_id
                or message.status is not MessageStatus.RUNNING
            ):
                return False
            message.status = MessageStatus.QUEUED
            message.attempts = max(0, message.attempts - 1)
            pipe.multi()
            pipe.set(message_key(message_id), dump(message))
            return True

        return transaction(self._redis, attempt, pending_key(job_id), message_key(message_id), fence.key)

    def cancel_requested(self, job_id: str, message_id: str) -> bool:
        """Whether a cancel of this running message is under way."""
        return self._redis.get(cancel_key(job_id)) == message_id.encode()

    # -- helpers -----------------------------------------------------------------------------

    def _resolve_claim(self, claim: IdempotencyClaim, earlier: dict) -> Job | None:
        """The job of an earlier create with the claim, None when it was deleted since (the claim is free again);
        IdempotencyConflict for another body."""
        job = self.find(earlier[b"job"].decode())
        if job is not None and earlier[b"hash"].decode() != claim.body_hash:
            raise IdempotencyConflict(
                "this Idempotency-Key was used with a different request body in the last 24 hours"
            )
        return job

    def _user_message(
        self, job_id: str, seq: int, prompt: str, source: str, author: str | None, stamp: str, key_id: str | None
    ) -> Message:
        return Message(
            id=new_id("msg", self._ids),
            job_id=job_id,
            seq=seq,
            role=Role.USER,
            content=prompt,
            created_at=stamp,
            status=MessageStatus.QUEUED,
            source=source,
            author=author,
            key_id=key_id,
        )

    def _enqueue_message(self, pipe, message: Message) -> None:
        pipe.set(message_key(message.id), dump(message))
        pipe.rpush(conversation_key(message.job_id), message.id)
        pipe.rpush(pending_key(message.job_id), message.id)
        pipe.sadd(PENDING_JOBS, message.job_id)

    def _write_job(self, pipe, job: Job, old_status: JobStatus | None) -> None:
        pipe.set(job_key(job.id), dump(job))
        if old_status is not None and old_status is not job.status:
            pipe.zrem(_index_key(job.project_id, old_status), job.id)
        pipe.zadd(_index_key(job.project_id, job.status), {job.id: 0})
        if job.status in (JobStatus.COMPLETED, JobStatus.FAILED):
            pipe.zadd(FINISHED_JOBS, {job.id: parse_iso(job.updated_at).timestamp()})
        else:
            pipe.zrem(FINISHED_JOBS, job.id)

    def _waiting(self, pipe, job_id: str) -> list[Message]:
        """The job's pending messages, read inside a transaction that WATCHes its pending list; their keys are
        WATCHed too, so a worker starting one of them meanwhile restarts the transaction."""
        message_keys = [message_key(text(m)) for m in cast(list, pipe.lrange(pending_key(job_id), 0, -1))]
        if message_keys:
            pipe.watch(*message_keys)
        return [load(Message, raw) for raw in pipe.mget(message_keys)] if message_keys else []

    def _cancel_queued(self, pipe, job_id: str, waiting: list[Message]) -> None:
        """Queue (after MULTI) the cancel of every message of `waiting` not started yet."""
        for message in waiting:
            if message.status is MessageStatus.QUEUED:
                message.status = MessageStatus.CANCELLED
                pipe.set(message_key(message.id), dump(message))
                pipe.lrem(pending_key(job_id), 0, message.id)

    def _load_or_raise(self, pipe, job_id: str) -> Job:
        job = load(Job, pipe.get(job_key(job_id)))
        if job is None:
            raise JobNotFound(f"no job {job_id}")
        return job


def _idle(job: Job, since: datetime) -> bool:
    return job.status in (JobStatus.COMPLETED, JobStatus.FAILED) and parse_iso(job.updated_at) < since


_SETTLED_EVENTS = {JobStatus.COMPLETED: EventType.JOB_COMPLETED, JobStatus.FAILED: EventType.JOB_FAILED}
