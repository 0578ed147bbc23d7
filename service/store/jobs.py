"""Jobs, their conversations and their queues of pending messages, changed atomically in Redis."""

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime

import redis

from service.clock import now_iso, parse_iso
from service.errors import IdempotencyConflict, InvalidRequest, JobArchived, JobNotFound
from service.ids import UlidGenerator, new_id
from service.models import Job, JobStatus, Message, MessageStatus, Project, Role
from service.store.codec import dump, load

log = logging.getLogger(__name__)

IDEMPOTENCY_TTL_SECONDS = 24 * 3600
PENDING_JOBS = "cd:jobs:pending"  # jobs that have at least one message waiting or running
FINISHED_JOBS = "cd:jobs:finished"  # completed or failed jobs, scored by when they last changed
_JOB_ID = re.compile(r"^job_[0-9A-HJKMNP-TV-Z]{26}$")


def job_key(job_id: str) -> str:
    return f"cd:job:{job_id}"


def pending_key(job_id: str) -> str:
    return f"cd:job:{job_id}:pending"


def _conversation_key(job_id: str) -> str:
    return f"cd:job:{job_id}:conversation"


def _message_key(message_id: str) -> str:
    return f"cd:message:{message_id}"


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
    usage: dict | None = None  # {"inputTokens", "outputTokens"} of the run, when a model was called


def add_usage(total: dict, run: dict | None) -> dict:
    """`total` plus one run's token counts (both in the API's camelCase form)."""
    keys = ("inputTokens", "outputTokens")
    return {k: int(total.get(k, 0)) + int((run or {}).get(k, 0)) for k in keys}


class JobStore:
    def __init__(self, client: redis.Redis, ids: UlidGenerator) -> None:
        self._redis = client
        self._ids = ids

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
        return load(Message, self._redis.get(_message_key(message_id)))

    def conversation(self, job_id: str) -> list[Message]:
        """The job's messages, oldest first."""
        ids = [i.decode() for i in self._redis.lrange(_conversation_key(job_id), 0, -1)]
        raws = self._redis.mget([_message_key(i) for i in ids]) if ids else []
        return [load(Message, raw) for raw in raws if raw is not None]

    def page(self, project_id: str, *, status: JobStatus | None, limit: int,
             cursor: str | None) -> tuple[list[Job], str | None]:
        """A page of the project's jobs, newest first; the cursor is the last id of the previous page."""
        if cursor is not None and not _JOB_ID.match(cursor):
            raise InvalidRequest("cursor is not one this API returned", field="cursor")
        upper = f"({cursor}" if cursor else "+"
        ids = [i.decode() for i in self._redis.zrevrangebylex(_index_key(project_id, status), upper, "-",
                                                               start=0, num=limit + 1)]
        page = ids[:limit]
        raws = self._redis.mget([job_key(i) for i in page]) if page else []
        jobs = [load(Job, raw) for raw in raws if raw is not None]
        return jobs, (page[-1] if len(ids) > limit else None)

    def has_pending(self, job_id: str) -> bool:
        """Whether any message of the job waits or runs."""
        return bool(self._redis.llen(pending_key(job_id)))

    def pending_jobs(self) -> list[str]:
        """Ids of jobs that have messages waiting or running."""
        return sorted(i.decode() for i in self._redis.smembers(PENDING_JOBS))

    def finished_before(self, cutoff: datetime) -> list[str]:
        """Ids of completed or failed jobs that have not changed since `cutoff`."""
        return [i.decode() for i in self._redis.zrangebyscore(FINISHED_JOBS, "-inf", cutoff.timestamp())]

    def replay(self, claim: IdempotencyClaim) -> Job | None:
        """The job an earlier create with this idempotency claim made, if any (conflict if the body differs)."""
        earlier = self._redis.hgetall(claim.key)
        return self._resolve_claim(claim, earlier) if earlier else None

    # -- the API's writes --------------------------------------------------------------------

    def create(self, project: Project, *, prompt: str, model: str, ref: str, as_draft: bool,
               source: str = "api", author: str | None = None,
               idempotency: IdempotencyClaim | None = None) -> tuple[Job, bool]:
        """Store a new `active` job and its first message; returns (job, created).

        With an idempotency claim seen before, returns the first job instead (created False).
        """
        stamp = now_iso()
        job = Job(id=new_id("job", self._ids), project_id=project.id, account=project.account,
                  status=JobStatus.ACTIVE, repository_url=project.web_url, ref=ref, model=model,
                  created_at=stamp, updated_at=stamp, as_draft=as_draft, messages=1)
        message = self._user_message(job.id, 0, prompt, source, author, stamp)

        def attempt(pipe: redis.client.Pipeline):
            if idempotency is not None:
                earlier = pipe.hgetall(idempotency.key)
                if earlier:
                    return self._resolve_claim(idempotency, earlier), False
            pipe.multi()
            self._write_job(pipe, job, None)
            pipe.zadd(_index_key(project.id), {job.id: 0})
            self._enqueue_message(pipe, message)
            if idempotency is not None:
                pipe.hset(idempotency.key, mapping={"hash": idempotency.body_hash, "job": job.id})
                pipe.expire(idempotency.key, IDEMPOTENCY_TTL_SECONDS)
            return job, True

        watches = [idempotency.key] if idempotency is not None else []
        return self._redis.transaction(attempt, *watches, value_from_callable=True)

    def add_message(self, job_id: str, *, prompt: str, source: str = "api",
                    author: str | None = None) -> tuple[Job, Message]:
        """Queue a follow-up message; the job becomes (or stays) `active`. Refused when archived."""

        def attempt(pipe: redis.client.Pipeline):
            job = self._load_or_raise(pipe, job_id)
            if job.status is JobStatus.ARCHIVED:
                raise JobArchived(f"job {job_id} is archived and takes no more messages")
            stamp = now_iso()
            message = self._user_message(job.id, job.messages, prompt, source, author, stamp)
            old_status = job.status
            job.status, job.updated_at, job.messages = JobStatus.ACTIVE, stamp, job.messages + 1
            job.error = None
            pipe.multi()
            self._write_job(pipe, job, old_status)
            self._enqueue_message(pipe, message)
            return job, message

        return self._redis.transaction(attempt, job_key(job_id), value_from_callable=True)

    def archive(self, job_id: str, *, idle_since: datetime | None = None) -> Job:
        """Archive a job (idempotent): messages still waiting are cancelled; a running one finishes.

        With `idle_since`, only a completed or failed job unchanged since then is archived.
        """

        def attempt(pipe: redis.client.Pipeline):
            job = self._load_or_raise(pipe, job_id)
            if job.status is JobStatus.ARCHIVED or (idle_since is not None and not _idle(job, idle_since)):
                return job
            message_keys = [_message_key(m.decode()) for m in pipe.lrange(pending_key(job_id), 0, -1)]
            # A worker starting one of these messages meanwhile must abort this transaction.
            if message_keys:
                pipe.watch(*message_keys)
            waiting = [load(Message, raw) for raw in pipe.mget(message_keys)] if message_keys else []
            old_status = job.status
            stamp = now_iso()
            # `error` describes a failed job; the failed message keeps its own error in the conversation.
            job.status, job.archived_at, job.updated_at, job.error = JobStatus.ARCHIVED, stamp, stamp, None
            pipe.multi()
            self._write_job(pipe, job, old_status)
            running = [m for m in waiting if m.status is MessageStatus.RUNNING]
            for message in waiting:
                if message.status is MessageStatus.QUEUED:
                    message.status = MessageStatus.CANCELLED
                    pipe.set(_message_key(message.id), dump(message))
                    pipe.lrem(pending_key(job_id), 0, message.id)
            if not running:
                pipe.srem(PENDING_JOBS, job_id)
            return job

        return self._redis.transaction(attempt, job_key(job_id), pending_key(job_id), value_from_callable=True)

    # -- the worker's writes -----------------------------------------------------------------

    def start_next(self, job_id: str) -> tuple[Job, Message] | None:
        """Mark the job's next waiting message as running and return it; None when nothing waits."""

        def attempt(pipe: redis.client.Pipeline):
            head = pipe.lindex(pending_key(job_id), 0)
            job = load(Job, pipe.get(job_key(job_id)))
            if head is None or job is None:
                pipe.multi()
                pipe.srem(PENDING_JOBS, job_id)
                return None
            message = load(Message, pipe.get(_message_key(head.decode())))
            if job.status is JobStatus.ARCHIVED:
                # Left running by a worker that died after the job was archived: settle it, do not run it.
                message.status = MessageStatus.CANCELLED
                pipe.multi()
                pipe.set(_message_key(message.id), dump(message))
                pipe.lpop(pending_key(job_id))
                return "again"
            message.status = MessageStatus.RUNNING
            message.attempts += 1
            pipe.multi()
            pipe.set(_message_key(message.id), dump(message))
            return job, message

        while True:
            started = self._redis.transaction(attempt, job_key(job_id), pending_key(job_id),
                                              value_from_callable=True)
            if started != "again":
                return started

    def finish_message(self, job_id: str, message_id: str, outcome: RunOutcome) -> Job:
        """Record a message's outcome, add the agent's reply, and settle the job's status."""

        def attempt(pipe: redis.client.Pipeline):
            job = self._load_or_raise(pipe, job_id)
            pending = [m.decode() for m in pipe.lrange(pending_key(job_id), 0, -1)]
            if not pending or pending[0] != message_id:
                log.warning("job %s: outcome of message %s discarded, it was settled already", job_id, message_id)
                return job
            message = load(Message, pipe.get(_message_key(message_id)))
            stamp = now_iso()
            message.status = MessageStatus.FAILED if outcome.error else MessageStatus.PROCESSED
            message.error = outcome.error
            message.usage = outcome.usage
            job.usage = add_usage(job.usage, outcome.usage)
            old_status = job.status
            job.updated_at = stamp
            for name in ("branch", "pr_link", "pr_number"):
                if getattr(outcome, name) is not None:
                    setattr(job, name, getattr(outcome, name))
            if job.status is not JobStatus.ARCHIVED:
                if len(pending) > 1:
                    job.status = JobStatus.ACTIVE
                else:
                    job.status = JobStatus.FAILED if outcome.error else JobStatus.COMPLETED
            job.error = outcome.error if job.status is JobStatus.FAILED else None
            pipe.multi()
            pipe.set(_message_key(message.id), dump(message))
            pipe.lpop(pending_key(job_id))
            if len(pending) == 1:
                pipe.srem(PENDING_JOBS, job_id)
            if outcome.reply:
                reply = Message(id=new_id("msg", self._ids), job_id=job_id, seq=message.seq, role=Role.AGENT,
                                content=outcome.reply, created_at=stamp, reply_to=message.id,
                                commit=outcome.commit, changed_files=outcome.changed_files)
                pipe.set(_message_key(reply.id), dump(reply))
                pipe.rpush(_conversation_key(job_id), reply.id)
            self._write_job(pipe, job, old_status)
            return job

        return self._redis.transaction(attempt, job_key(job_id), pending_key(job_id), value_from_callable=True)

    # -- helpers -----------------------------------------------------------------------------

    def _resolve_claim(self, claim: IdempotencyClaim, earlier: dict) -> Job:
        if earlier[b"hash"].decode() != claim.body_hash:
            raise IdempotencyConflict("this Idempotency-Key was used with a different request body "
                                      "in the last 24 hours")
        return self.get(earlier[b"job"].decode())

    def _user_message(self, job_id: str, seq: int, prompt: str, source: str, author: str | None,
                      stamp: str) -> Message:
        return Message(id=new_id("msg", self._ids), job_id=job_id, seq=seq, role=Role.USER, content=prompt,
                       created_at=stamp, status=MessageStatus.QUEUED, source=source, author=author)

    def _enqueue_message(self, pipe, message: Message) -> None:
        pipe.set(_message_key(message.id), dump(message))
        pipe.rpush(_conversation_key(message.job_id), message.id)
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

    def _load_or_raise(self, pipe, job_id: str) -> Job:
        job = load(Job, pipe.get(job_key(job_id)))
        if job is None:
            raise JobNotFound(f"no job {job_id}")
        return job


def _idle(job: Job, since: datetime) -> bool:
    return job.status in (JobStatus.COMPLETED, JobStatus.FAILED) and parse_iso(job.updated_at) < since
