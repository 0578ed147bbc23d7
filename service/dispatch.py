"""Puts jobs with waiting messages on the RQ queue, and finds the ones that never got there."""

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import redis
import rq
from rq.exceptions import NoSuchJobError
from rq.job import Job as RqJob
from rq.job import JobStatus as RqStatus

from service import metrics
from service.clock import now
from service.lease import is_leased
from service.models import JobStatus
from service.store.jobkeys import rq_key
from service.store.jobs import JobStore
from service.store.replies import text

log = logging.getLogger(__name__)

RUN_DESCRIPTION_PREFIX = "copydesk run "  # RQ's description of a run, then its job id (RQ's log lines show it)


class Dispatcher:
    """Enqueues `task(job_id)` on RQ; `task` is the dotted path of the worker's entry function."""

    def __init__(
        self,
        client: redis.Redis,
        jobs: JobStore,
        *,
        queue_name: str,
        task: str,
        job_timeout: int,
        requeue_after: int | None = None,
    ) -> None:
        """`requeue_after`: seconds a queued run may wait before the sweep queues another (default `job_timeout`)."""
        self._redis = client
        self._jobs = jobs
        self._queue = rq.Queue(queue_name, connection=client)
        self._task = task
        self._job_timeout = job_timeout
        self._requeue_after = timedelta(seconds=job_timeout if requeue_after is None else requeue_after)

    def kick(self, job_id: str, *, first: bool = False) -> None:
        """Queue a run of the job's next waiting message (`first`: ahead of the queue, for a handed-back run)."""
        # One pipeline: one round trip (RQ's own enqueue takes three).
        with self._redis.pipeline() as pipe:
            self.record_kick(pipe, job_id, first=first)
            pipe.execute()

    def record_kick(self, writes: Any, job_id: str, *, first: bool = False) -> None:
        """Record a kick's writes on `writes`, a pipeline or a service.store.commands.CommandRecorder (RQ only calls
        its command methods): the API's create runs them in its create script, one round trip fewer."""
        # A run handles one message; a failure is recorded on the job by the run itself, so RQ's
        # own failure record is only kept for operators and expires.
        # RQ's Job.create and enqueue_job, as Queue.enqueue_call does, but without passing the queue's serializer:
        # a job given one checks it again against a runtime Protocol, a quarter of the enqueue's CPU; given none it
        # takes RQ's default at once, which is the queue's own (the queue was given none either).
        rq_job = self._queue.job_class.create(
            self._task,
            args=(job_id,),
            connection=self._queue.connection,
            timeout=self._job_timeout,
            result_ttl=3600,
            failure_ttl=7 * 24 * 3600,
            description=f"{RUN_DESCRIPTION_PREFIX}{job_id}",
            origin=self._queue.name,
            status=RqStatus.QUEUED,
        )
        self._queue.enqueue_job(rq_job, pipeline=writes, at_front=first)
        writes.set(rq_key(job_id), rq_job.id, ex=7 * 24 * 3600)

    def try_kick(self, job_id: str) -> bool:
        """Kick, but let a queue failure pass: the message is stored and `sweep` will find it."""
        try:
            self.kick(job_id)
            return True
        except redis.RedisError:
            log.warning("could not enqueue job %s; the recovery sweep will", job_id, exc_info=True)
            return False

    def sweep(self) -> list[str]:
        """Kick every job whose waiting messages have no run holding their lease and no run waiting in the
        queue; return their ids. A kick too many is harmless: a run that finds the lease taken does nothing."""
        kicked = []
        for job_id in self._jobs.pending_jobs():
            if is_leased(self._redis, job_id) or self._run_is_waiting(job_id):
                continue
            self.kick(job_id)
            kicked.append(job_id)
        if kicked:
            metrics.RECOVERIES.labels("sweep").inc(len(kicked))
            log.info("recovered %d job(s) whose messages had no live run: %s", len(kicked), kicked)
        return kicked

    def _run_is_waiting(self, job_id: str) -> bool:
        """Whether the job's last queued run will still start: its RQ job is in the queue's list (or in RQ's
        intermediate list, popped by a worker that has not started it yet) and was queued less than
        `requeue_after` ago. RQ's status alone is not trusted: a worker killed between popping a job and starting
        it leaves it `queued` in no list and no registry, for ever."""
        # A started RQ job does not count: once started, a live run holds the lease within moments, and a dead
        # one must not hold up recovery (the lease, not RQ's record, says whether a run is alive).
        rq_id = self._redis.get(rq_key(job_id))
        if rq_id is None:
            return False
        try:
            rq_job = RqJob.fetch(text(rq_id), connection=self._redis)
        except NoSuchJobError:
            return False
        if rq_job.get_status() is not RqStatus.QUEUED or not self._recent(rq_job.enqueued_at):
            return False
        # The run waits in the queue it was put in, which is another deployment's when two share a Redis (the demo
        # beside an operator's workers): looking only in this worker's queue would take the other's job over.
        queue = (
            self._queue
            if rq_job.origin in (None, "", self._queue.name)
            else rq.Queue(rq_job.origin, connection=self._redis)
        )
        return any(self._redis.lpos(key, rq_job.id) is not None for key in (queue.key, queue.intermediate_queue_key))

    def _recent(self, enqueued_at: datetime | None) -> bool:
        if enqueued_at is None:
            return False
        if enqueued_at.tzinfo is None:  # RQ stores UTC
            enqueued_at = enqueued_at.replace(tzinfo=UTC)
        return datetime.now(UTC) - enqueued_at < self._requeue_after


def archive_inactive(jobs: JobStore, *, older_than: timedelta) -> list[str]:
    """Archive completed or failed jobs untouched for longer than the retention period; return their ids."""
    cutoff = now() - older_than
    archived = []
    for job_id in jobs.finished_before(cutoff):
        # Re-checked inside the archive transaction: a message that just arrived keeps the job alive.
        if jobs.archive(job_id, idle_since=cutoff).status is JobStatus.ARCHIVED:
            archived.append(job_id)
    return archived
