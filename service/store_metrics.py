"""Metrics read from Redis when Prometheus scrapes: jobs by status, and the depth and oldest wait of each queue."""

import time

import redis
import rq
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from rq.job import Job as RqJob
from rq.utils import utcparse

from service.store.jobs import JobStore
from service.store.projects import ProjectStore
from service.store.replies import text

# The head of a queue is its oldest job except for runs handed back to its front; a few more cover those.
_HEAD = 10


class StoreCollector(Collector):
    """Counts that live in Redis already, computed per scrape in a few round trips (no per-job reads)."""

    def __init__(self, client: redis.Redis, projects: ProjectStore, jobs: JobStore, queues: list[str]) -> None:
        self._redis = client
        self._projects = projects
        self._jobs = jobs
        self._queues = queues

    def collect(self):
        try:
            totals = self._jobs.status_totals(self._projects.ids())
            waiting = [(name, *self._queue_state(name)) for name in self._queues]
        except redis.RedisError:
            return  # Redis is down: these families are absent from this scrape (`up` stays 1, /readyz says why)
        jobs = GaugeMetricFamily("copydesk_jobs", "Jobs by status", labels=["status"])
        for status, count in totals.items():
            jobs.add_metric([status], count)
        depth = GaugeMetricFamily("copydesk_queue_depth", "RQ jobs waiting in each queue", labels=["queue"])
        age = GaugeMetricFamily(
            "copydesk_queue_oldest_age_seconds",
            "How long the oldest waiting RQ job of each queue has waited (0 when the queue is empty)",
            labels=["queue"],
        )
        for name, count, oldest in waiting:
            depth.add_metric([name], count)
            age.add_metric([name], oldest)
        yield from (jobs, depth, age)

    def describe(self):
        return []  # computed at scrape; nothing to check at registration

    def _queue_state(self, name: str) -> tuple[int, float]:
        queue = rq.Queue(name, connection=self._redis)
        count = queue.count
        head = queue.get_job_ids(0, _HEAD - 1) if count else []
        if not head:
            return count, 0.0
        with self._redis.pipeline(transaction=False) as pipe:
            for rq_id in head:
                pipe.hget(RqJob.key_for(rq_id), "enqueued_at")
            stamps = [_epoch(raw) for raw in pipe.execute()]
        known = [stamp for stamp in stamps if stamp is not None]
        return count, max(0.0, time.time() - min(known)) if known else 0.0


def _epoch(raw: bytes | None) -> float | None:
    """An RQ job's `enqueued_at` as seconds since the epoch (None when absent or unreadable)."""
    try:
        return utcparse(text(raw)).timestamp() if raw else None
    except ValueError:
        return None
