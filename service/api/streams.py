"""A job's events as a Server-Sent Events stream: resumable, kept alive, capped per caller, ended when the job
leaves `active` or the caller's access ends."""

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import redis

from service.errors import StreamsBusy, TooManyStreams
from service.job_events import JobEvent
from service.models import JobStatus
from service.store.job_events import EventLog
from service.store.jobs import JobStore

log = logging.getLogger(__name__)

RECONNECT_MS = 1000  # the `retry:` a client waits before reconnecting after the connection drops
ACCESS_ENDED = ": access ended\n\n"  # the last line of a stream whose key or session stopped working


@dataclass(frozen=True)
class StreamHolder:
    """Who holds a stream, for the caps: the key (or dashboard session) and the account whose job it follows."""

    caller: str  # "key:<id>" or "session:<hash>"
    account: str  # "<code host>:<account>"


class StreamSlots:
    """The caps on open event streams in one web process: `limit` in all (each holds a connection of the streams'
    Redis pool, and under a threaded server a thread), past it 503; and `per_caller` per key or session and
    `per_account` per account, past them 429, so that one caller cannot take the process's streams from the rest."""

    def __init__(
        self, limit: int, *, per_caller: int | None = None, per_account: int | None = None, retry_after: int = 5
    ) -> None:
        self.limit = limit
        self.per_caller = per_caller or limit
        self.per_account = per_account or limit
        self._retry_after = retry_after
        self._open = 0
        self._callers: Counter[str] = Counter()
        self._accounts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def take(self, holder: StreamHolder) -> None:
        """Count a new stream of `holder`, or refuse it: TooManyStreams past its own caps, StreamsBusy past the
        process's."""
        with self._lock:
            if self._callers[holder.caller] >= self.per_caller:
                raise TooManyStreams(
                    f"this key already holds {self.per_caller} event streams on this server "
                    "process (COPYDESK_MAX_STREAMS_PER_KEY); close one, or poll with `?after=`",
                    retry_after=self._retry_after,
                )
            if self._accounts[holder.account] >= self.per_account:
                raise TooManyStreams(
                    f"this account already holds {self.per_account} event streams on this server "
                    "process (COPYDESK_MAX_STREAMS_PER_ACCOUNT); close one, or poll with `?after=`",
                    retry_after=self._retry_after,
                )
            if self._open >= self.limit:
                raise StreamsBusy(
                    f"this server process already serves {self.limit} event streams "
                    "(COPYDESK_MAX_STREAMS); retry shortly, or poll with `?after=`"
                )
            self._open += 1
            self._callers[holder.caller] += 1
            self._accounts[holder.account] += 1

    def give_back(self, holder: StreamHolder) -> None:
        with self._lock:
            self._open -= 1
            for counts, name in ((self._callers, holder.caller), (self._accounts, holder.account)):
                counts[name] -= 1
                if counts[name] <= 0:
                    del counts[name]  # or every caller ever seen would stay in memory


class AccessEnded(Exception):
    """The stream's key or session stopped working (revoked, expired, signed out) while it was open."""


def nothing_left(jobs: JobStore, log_: EventLog, job_id: str, after: str, keep_open: bool) -> bool:
    """Whether a reconnecting client has everything: the stream would end at once without an event (204)."""
    return _ended(jobs, job_id, keep_open) and not log_.after(job_id, after, count=1)


def always() -> bool:
    """The access check of a stream nobody can withdraw (an operator's `copydesk events --follow`)."""
    return True


def follow(
    jobs: JobStore,
    log_: EventLog,
    job_id: str,
    *,
    after: str,
    keep_open: bool,
    wait_seconds: float,
    allowed: Callable[[], bool] = always,
) -> Iterator[JobEvent | None]:
    """The job's events after id `after` as they come, until the job leaves `active` (with `keep_open`, until it
    is archived); None after each `wait_seconds` without one. `allowed` is asked again at least every
    `wait_seconds`; AccessEnded when it says no. Blocks in XREAD with a time-out, so it works in a thread and under
    gevent alike."""
    last = after
    check_at = time.monotonic() + wait_seconds
    while True:
        try:
            batch = log_.after(job_id, last, block_ms=int(wait_seconds * 1000))
        except redis.TimeoutError:
            # The client's own read time-out (Redis slow to answer), not an outage: a connection error would be.
            batch = []
        for event in batch:
            last = event.id
            yield event
        if not batch:
            yield None
        if time.monotonic() >= check_at:
            if not allowed():
                raise AccessEnded(job_id)
            check_at = time.monotonic() + wait_seconds
        if _ended(jobs, job_id, keep_open):
            # The status and its event are written in one transaction: what came before the change is there now.
            yield from log_.after(job_id, last)
            return


def event_stream(
    jobs: JobStore,
    log_: EventLog,
    job_id: str,
    *,
    after: str,
    keep_open: bool,
    keepalive_seconds: int,
    allowed: Callable[[], bool] = always,
) -> Iterator[str]:
    """SSE text of `follow`: an event per message, a keep-alive comment when idle (a client that went away is
    noticed at the next write). A Redis outage ends it; the client reconnects after `retry:` and resumes."""
    try:
        yield f"retry: {RECONNECT_MS}\n\n"
        for event in follow(
            jobs, log_, job_id, after=after, keep_open=keep_open, wait_seconds=keepalive_seconds, allowed=allowed
        ):
            yield ": keep-alive\n\n" if event is None else event.to_sse()
    except AccessEnded:
        yield ACCESS_ENDED
    except redis.RedisError:
        log.warning("event stream of job %s cut: Redis unreachable; the client reconnects with Last-Event-ID", job_id)


def _ended(jobs: JobStore, job_id: str, keep_open: bool) -> bool:
    job = jobs.find(job_id)
    if job is None or job.status is JobStatus.ARCHIVED:
        return True
    return not keep_open and job.status is not JobStatus.ACTIVE
