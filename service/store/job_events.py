"""Each job's events in a bounded Redis Stream, and the outbox the workers fan webhook deliveries out from."""

import re
from typing import Any, cast

import redis

from service import fastjson
from service.clock import now_iso
from service.errors import InvalidRequest
from service.job_events import EventType, JobEvent
from service.models import Job, JobStatus
from service.store.commands import CommandRecorder
from service.store.jobkeys import stream_key

OUTBOX = "cd:events:outbox"  # events of projects that have webhook endpoints, for the workers' fan-out
OUTBOX_MAXLEN = 100_000
DEFAULT_TTL_SECONDS = 30 * 86400  # an archived job's stream is kept this long after its last event
# fullmatch, not `$`: `$` also matches before a final newline, and `0\n` would reach Redis.
_EVENT_ID = re.compile(r"([0-9]{1,20})(?:-([0-9]{1,20}))?")
_MAX_PART = 2**64 - 1  # both halves of a Redis stream id are unsigned 64-bit numbers


def endpoints_key(project_id: str) -> str:
    """The set of a project's webhook endpoint ids (kept by the webhook store, read here)."""
    return f"cd:project:{project_id}:webhooks"


def check_event_id(raw: str, field: str) -> str:
    """A client-given event id (`Last-Event-ID`, `?after=`), checked; `0` means from the start."""
    found = _EVENT_ID.fullmatch(raw)
    if found is None or any(int(part) > _MAX_PART for part in found.groups("0")):
        raise InvalidRequest(f"`{field}` must be an event id this API sent (like 1732350000000-0) or 0", field=field)
    return raw


class EventLog:
    """Appends job events (inside the job store's transactions or on their own) and reads them back."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        retention: int,
        ttl_seconds: int = DEFAULT_TTL_SECONDS,
        blocking: redis.Redis | None = None,
    ) -> None:
        """`blocking`: the client reads that wait for events use, whose read time-out must exceed their wait."""
        self._redis = client
        self._blocking = blocking or client
        self._retention = retention
        self._ttl_seconds = ttl_seconds

    def append(self, pipe, job: Job, kind: EventType, **extra) -> None:
        """Queue one event of `job` on `pipe` (a MULTI pipeline or a client): the job record plus `extra`."""
        fields = entry_fields(kind, now_iso(), {**job.to_api(), **extra})
        pipe.xadd(stream_key(job.id), fields, maxlen=self._retention, approximate=True)
        if job.status is JobStatus.ARCHIVED:
            self._expire(pipe, job.id)
        outbox = {**fields, "job": job.id, "project": job.project_id}
        if isinstance(pipe, CommandRecorder):
            # Recorded for a script: it checks for endpoints itself, in the same round trip as the write.
            recorder = cast(Any, pipe)  # redis-py types its command methods for a client
            with recorder.when_exists(endpoints_key(job.project_id)):
                recorder.xadd(OUTBOX, outbox, maxlen=OUTBOX_MAXLEN, approximate=True)
        # Read outside the caller's transaction: an endpoint created this very moment may miss this event.
        elif self._redis.exists(endpoints_key(job.project_id)):
            pipe.xadd(OUTBOX, outbox, maxlen=OUTBOX_MAXLEN, approximate=True)

    def _expire(self, pipe, job_id: str) -> None:
        # An archived job takes no more messages, so its stream only waits for readers: it goes `ttl` after its
        # last event. An event appended later (a run still going when the job was archived finishes) sets the full
        # TTL again, on purpose: XADD alone would keep the old TTL, but on a stream that had expired meanwhile
        # it would make a new key with none, kept forever. A run holding the job as it was before the archive
        # appends without this; its XADD keeps the TTL the archive set.
        pipe.expire(stream_key(job_id), self._ttl_seconds)

    def emit(self, job: Job, kind: EventType, **extra) -> None:
        """Append one event outside any transaction (the runner's progress events)."""
        pipe = self._redis.pipeline(transaction=True)
        self.append(pipe, job, kind, **extra)
        pipe.execute()

    def last_id(self, job_id: str) -> str | None:
        """The id of the job's newest event, or None before its first (a page follows the stream from there)."""
        newest = cast(list, self._redis.xrevrange(stream_key(job_id), count=1))
        return newest[0][0].decode() if newest else None

    def after(self, job_id: str, after: str, *, count: int = 500, block_ms: int | None = None) -> list[JobEvent]:
        """Events of the job after id `after`, oldest first; with `block_ms`, wait that long for one to come."""
        client = self._redis if block_ms is None else self._blocking
        reply = cast(list, client.xread({stream_key(job_id): after}, count=count, block=block_ms))
        return [
            decode_entry(job_id, entry_id, fields) for _key, entries in (reply or []) for entry_id, fields in entries
        ]


def entry_fields(kind: EventType, stamp: str, data: dict) -> dict[str, str]:
    """The fields of a stream (or outbox) entry for an event of `kind` at `stamp` carrying `data`."""
    return {"type": kind.value, "ts": stamp, "data": fastjson.dumps(data).decode()}


def decode_entry(job_id: str, entry_id, fields: dict) -> JobEvent:
    """A stream (or outbox) entry as an event."""
    text = {k.decode(): v.decode() for k, v in fields.items()}
    return JobEvent(
        id=entry_id.decode() if isinstance(entry_id, bytes) else entry_id,
        job_id=job_id,
        type=EventType(text["type"]),
        timestamp=text["ts"],
        data=fastjson.loads(text["data"]),
    )
