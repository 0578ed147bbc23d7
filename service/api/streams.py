"""A job's events as a Server-Sent Events stream: resumable, kept alive, ended when the job leaves `active`."""

import logging
import threading
from collections.abc import Iterator

import redis

from service.errors import StreamsBusy
from service.events import JobEvent
from service.models import JobStatus
from service.store.events import EventLog
from service.store.jobs import JobStore

log = logging.getLogger(__name__)

RECONNECT_MS = 1000  # the `retry:` a client waits before reconnecting after the connection drops


class StreamSlots:
    """The per-process cap on open event streams: under a threaded server each holds a thread, so past the cap
    a new stream is refused with 503 instead of starving the API."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open = 0
        self._lock = threading.Lock()

    def take(self) -> None:
        with self._lock:
            if self._open >= self.limit:
                raise StreamsBusy(f"this server process already serves {self.limit} event streams "
                                  "(COPYDESK_MAX_STREAMS); retry shortly, or poll with `?after=`")
            self._open += 1

    def give_back(self) -> None:
        with self._lock:
            self._open -= 1


def nothing_left(jobs: JobStore, log_: EventLog, job_id: str, after: str, keep_open: bool) -> bool:
    """Whether a reconnecting client has everything: the stream would end at once without an event (204)."""
    return _ended(jobs, job_id, keep_open) and not log_.after(job_id, after, count=1)


def follow(jobs: JobStore, log_: EventLog, job_id: str, *, after: str, keep_open: bool,
           wait_seconds: float) -> Iterator[JobEvent | None]:
    """The job's events after id `after` as they come, until the job leaves `active` (with `keep_open`, until it
    is archived); None after each `wait_seconds` without one. Blocks in XREAD with a time-out, so it works in a
    thread and under gevent alike."""
    last = after
    while True:
        batch = log_.after(job_id, last, block_ms=int(wait_seconds * 1000))
        for event in batch:
            last = event.id
            yield event
        if not batch:
            yield None
        if _ended(jobs, job_id, keep_open):
            # The status and its event are written in one transaction: what came before the change is there now.
            yield from log_.after(job_id, last)
            return


def event_stream(jobs: JobStore, log_: EventLog, job_id: str, *, after: str, keep_open: bool,
                 keepalive_seconds: int) -> Iterator[str]:
    """SSE text of `follow`: an event per message, a keep-alive comment when idle (a client that went away is
    noticed at the next write)."""
    try:
        yield f"retry: {RECONNECT_MS}\n\n"
        for event in follow(jobs, log_, job_id, after=after, keep_open=keep_open, wait_seconds=keepalive_seconds):
            yield ": keep-alive\n\n" if event is None else event.to_sse()
    except redis.RedisError:
        log.warning("event stream of job %s cut: Redis unreachable; the client reconnects with Last-Event-ID", job_id)


def _ended(jobs: JobStore, job_id: str, keep_open: bool) -> bool:
    job = jobs.find(job_id)
    if job is None or job.status is JobStatus.ARCHIVED:
        return True
    return not keep_open and job.status is not JobStatus.ACTIVE
