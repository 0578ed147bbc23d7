"""`copydesk migrate`: upgrade the records in Redis, in place, to this Copydesk's schema version.

Each step changes one record per WATCH/MULTI transaction, so a write made meanwhile is never lost, and marks the
record done in the same transaction (a progress set per step), so a migration cut short and run again changes each
record once. The version moves on only when every step is through; one migration runs at a time (a lock).
"""

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta

import redis
from redis.lock import Lock

from service.clock import now, parse_iso
from service.job_events import EventType
from service.models import ApiKey, Job, JobStatus, Message, MessageStatus, Project, Role
from service.store.codec import dump, load
from service.store.job_events import entry_fields
from service.store.jobkeys import conversation_key, job_key, message_key, run_lock_key, stream_key
from service.store.replies import text, transaction
from service.store.schema import CURRENT_VERSION, SCHEMA_KEY, SchemaMismatch, SchemaState, stamp_new, status
from service.store.usage import TOTALS_TTL_SECONDS, UsageLedger

LOCK_KEY = "cd:schema:migrate-lock"
LOCK_SECONDS = 60  # renewed while the migration runs; a migration that died frees it this long after
_RENEW_EVERY_SECONDS = 10


class MigrationBusy(Exception):
    """Another `copydesk migrate` holds the lock."""


def _progress_key(version: int, step: str) -> str:
    return f"cd:schema:progress:{version}:{step}"


@dataclass(frozen=True)
class StepResult:
    name: str
    summary: str
    changed: int

    def to_json(self) -> dict:
        return {"step": self.name, "summary": self.summary, "changed": self.changed}


@dataclass
class MigrationReport:
    """What `migrate` did: the version found (None: an empty Redis, now initialised) and the steps it ran."""

    found: int | None
    version: int
    steps: list[StepResult] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"from": self.found, "to": self.version, "steps": [s.to_json() for s in self.steps]}


@dataclass
class _Run:
    """What a step works with: Redis, the progress set it marks records in, and the lock it keeps alive."""

    client: redis.Redis
    lock: Lock
    version: int
    event_ttl_seconds: int
    step: str = ""
    _renewed: float = field(default_factory=time.monotonic)

    @property
    def progress(self) -> str:
        return _progress_key(self.version, self.step)

    def keep_alive(self) -> None:
        """Renew the lock now and then; LockNotOwnedError when it was lost (then the migration stops)."""
        if time.monotonic() - self._renewed > _RENEW_EVERY_SECONDS:
            self.lock.reacquire()
            self._renewed = time.monotonic()

    def once(
        self, record_id: str, watches: list[str], change: Callable[[redis.client.Pipeline], Callable | None]
    ) -> bool:
        """Apply `change` to one record unless this step did already: `change` reads through the pipeline (WATCHed
        on `watches`) and returns the writes to queue after MULTI, or None for nothing to write. True if written."""
        self.keep_alive()

        def attempt(pipe: redis.client.Pipeline) -> bool:
            if pipe.sismember(self.progress, record_id):
                return False
            write = change(pipe)
            pipe.multi()
            if write is not None:
                write(pipe)
            pipe.sadd(self.progress, record_id)
            return write is not None

        # The progress set is WATCHed too: should a second migration run meanwhile (this one stalled past its lock),
        # the later of two transactions on one record starts again and finds it done.
        return transaction(self.client, attempt, self.progress, *watches)


@dataclass(frozen=True)
class Step:
    name: str
    summary: str  # what the step does, as the report says it
    run: Callable[[_Run], int]  # returns how many records it changed


def migrate(client: redis.Redis, *, event_ttl_seconds: int) -> MigrationReport:
    """Bring the data in Redis to CURRENT_VERSION (an empty Redis is just stamped). Idempotent.

    MigrationBusy while another migration runs; SchemaMismatch for data newer than this Copydesk.
    """
    lock = client.lock(LOCK_KEY, timeout=LOCK_SECONDS, blocking=False)
    if not lock.acquire():
        raise MigrationBusy(
            "another `copydesk migrate` is running (it holds the lock "
            f"{LOCK_KEY}, which lapses {LOCK_SECONDS} s after its holder stops)"
        )
    try:
        found = status(client)
        current = stamp_new(client)
        if current.state is SchemaState.NEWER:
            raise SchemaMismatch(current)
        report = MigrationReport(found=found.version, version=current.version or CURRENT_VERSION)
        for target in range(report.version + 1, CURRENT_VERSION + 1):
            run = _Run(client, lock, target, event_ttl_seconds)
            for step in MIGRATIONS[target]:
                run.step = step.name
                report.steps.append(StepResult(step.name, step.summary, step.run(run)))
            _finish(client, target)
            report.version = target
        return report
    finally:
        try:
            lock.release()
        except redis.exceptions.LockError:
            pass  # lapsed; nothing of ours to release


def _finish(client: redis.Redis, version: int) -> None:
    """Record the new version and drop that version's progress sets, together."""
    with client.pipeline(transaction=True) as pipe:
        pipe.set(SCHEMA_KEY, version)
        pipe.delete(*(_progress_key(version, step.name) for step in MIGRATIONS[version]))
        pipe.execute()


# -- reading every record ------------------------------------------------------------------------


def _projects(client: redis.Redis) -> list[Project]:
    ids = [text(i) for i in client.zrange("cd:projects", 0, -1)]
    raws = client.mget([f"cd:project:{i}" for i in ids]) if ids else []
    return [load(Project, raw) for raw in raws if raw is not None]


def _job_ids(client: redis.Redis) -> Iterator[str]:
    """Every job: each is listed in its project's index from its creation on."""
    for project in _projects(client):
        for job_id in client.zrange(f"cd:project:{project.id}:jobs", 0, -1):
            yield text(job_id)


def _conversation(pipe, job_id: str) -> list[Message]:
    ids = [text(i) for i in pipe.lrange(conversation_key(job_id), 0, -1)]
    raws = pipe.mget([message_key(i) for i in ids]) if ids else []
    return [load(Message, raw) for raw in raws if raw is not None]


# -- version 2 (2026-11-25): API keys know their maker and code host, jobs have event streams, accounts have
#    monthly usage totals, run locks became leases ------------------------------------------------------------


def _bind_keys(run: _Run) -> int:
    """Keys made before `createdBy` and `host` were recorded: every such key was made with the CLI (the operator),
    and works on the one code host its account's projects are on (an account on both, or on none, stays unbound,
    as such keys are read today)."""
    hosts: dict[str, set[str]] = defaultdict(set)
    for project in _projects(run.client):
        hosts[project.account].add(project.host)
    changed = 0
    for key_id in [text(i) for i in run.client.zrange("cd:apikeys", 0, -1)]:
        record = f"cd:apikey:{key_id}"

        def change(pipe, record=record) -> Callable | None:
            raw = pipe.get(record)
            key = load(ApiKey, raw)
            if key is None:
                return None
            key.created_by = key.created_by or "operator"
            if key.host is None and len(hosts[key.account]) == 1:
                key.host = next(iter(hosts[key.account]))
            upgraded = dump(key)
            return None if upgraded == text(raw) else (lambda p: p.set(record, upgraded))

        changed += run.once(key_id, [record], change)
    return changed


def _backfill_usage(run: _Run) -> int:
    """Add the tokens of runs made before the monthly ledger existed to their account's monthly totals (jobs with
    an event stream were written by a Copydesk that kept the ledger already, and are skipped)."""
    ledger = UsageLedger(run.client)
    host_of = {project.id: project.host for project in _projects(run.client)}
    oldest = now() - timedelta(seconds=TOTALS_TTL_SECONDS)
    changed = 0
    for job_id in list(_job_ids(run.client)):

        def change(pipe, job_id=job_id) -> Callable | None:
            job = load(Job, pipe.get(job_key(job_id)))
            if job is None or pipe.exists(stream_key(job_id)):
                return None
            messages = _conversation(pipe, job_id)
            finished_at = {m.reply_to: m.created_at for m in messages if m.role is Role.AGENT and m.reply_to}
            counted = [
                (finished_at.get(m.id, m.created_at), m.usage)
                for m in messages
                if m.role is Role.USER and m.usage and m.status is not MessageStatus.QUEUED
            ]
            counted = [(stamp, usage) for stamp, usage in counted if parse_iso(stamp) > oldest]
            if not counted:
                return None

            def write(p) -> None:
                for stamp, usage in counted:
                    ledger.record(p, host_of.get(job.project_id, "local"), job.account, None, usage, month=stamp[:7])

            return write

        changed += run.once(job_id, [job_key(job_id), stream_key(job_id)], change)
    return changed


_SETTLED = {
    JobStatus.COMPLETED: EventType.JOB_COMPLETED,
    JobStatus.FAILED: EventType.JOB_FAILED,
    JobStatus.ARCHIVED: EventType.JOB_ARCHIVED,
}


def _backfill_events(run: _Run) -> int:
    """Give each job without an event stream the history its record tells: `job.created` at its creation and, for
    a job that is no longer active, its last state (completed, failed or archived) at its last change. The events
    carry `"backfilled": true`. An archived job's stream expires as any archived job's does."""
    changed = 0
    for job_id in list(_job_ids(run.client)):
        stream = stream_key(job_id)

        def change(pipe, job_id=job_id, stream=stream) -> Callable | None:
            job = load(Job, pipe.get(job_key(job_id)))
            if job is None or pipe.exists(stream):
                return None
            entries = _history(job)

            def write(p) -> None:
                for entry_id, fields in entries:
                    p.xadd(stream, fields, id=entry_id)
                if job.status is JobStatus.ARCHIVED:
                    p.pexpireat(stream, _ms(job.updated_at) + run.event_ttl_seconds * 1000)

            return write

        changed += run.once(job_id, [job_key(job_id), stream], change)
    return changed


def _history(job: Job) -> list[tuple[str, dict]]:
    created = Job.from_dict(
        {
            **job.to_dict(),
            "status": JobStatus.ACTIVE.value,
            "updated_at": job.created_at,
            "branch": None,
            "pr_link": None,
            "pr_number": None,
            "archived_at": None,
            "error": None,
        }
    )
    born = _ms(job.created_at)
    entries = [(f"{born}-0", _event(EventType.JOB_CREATED, job.created_at, created))]
    if job.status in _SETTLED:
        entries.append((f"{max(born, _ms(job.updated_at))}-1", _event(_SETTLED[job.status], job.updated_at, job)))
    return entries


def _event(kind: EventType, stamp: str, job: Job) -> dict:
    return entry_fields(kind, stamp, {**job.to_api(), "backfilled": True})


def _ms(stamp: str) -> int:
    return int(parse_iso(stamp).timestamp() * 1000)


def _drop_run_locks(run: _Run) -> int:
    """Delete the per-job run locks (`cd:job:<id>:lock`) that leases replaced; nothing reads them any more."""
    dropped = 0
    for key in run.client.scan_iter(match=run_lock_key("*"), count=1000):
        run.keep_alive()
        dropped += int(run.client.delete(key))
    return dropped


MIGRATIONS: dict[int, list[Step]] = {
    2: [
        Step(
            "api-keys",
            "API keys: record their maker (the CLI) and bind each to its account's one code host",
            _bind_keys,
        ),
        Step("monthly-usage", "monthly token totals: add the runs made before the ledger existed", _backfill_usage),
        Step(
            "job-events", "event streams: `job.created` and the last state of each job that has none", _backfill_events
        ),
        Step("run-locks", "run locks replaced by leases: deleted", _drop_run_locks),
    ],
}
