"""What one `copydesk demo` run leaves in Redis, and removing all of it when the demo ends."""

from dataclasses import dataclass

import redis
import rq
from rq.job import Job as RQJob
from rq.worker_registration import REDIS_WORKER_KEYS, WORKERS_BY_QUEUE_KEY

from service.queues import worker_queues
from service.services import Services
from service.store.jobkeys import rq_key
from service.store.jobs import FINISHED_JOBS, PENDING_JOBS
from service.store.replies import text

# The shared indexes of project and key ids (service/store/projects.py and apikeys.py own them).
_PROJECT_INDEX, _KEY_INDEX = "cd:projects", "cd:apikeys"


@dataclass(frozen=True)
class DemoRun:
    """The names one demo run has to itself: nothing else in a shared Redis uses its account or its queues."""

    account: str
    queue_name: str
    project_id: str
    key_id: str

    @property
    def queue_names(self) -> tuple[str, ...]:
        """Its runs queue and the queues named after it (GitHub events, webhook deliveries)."""
        return tuple(worker_queues(self.queue_name))


def remove_run(client: redis.Redis, services: Services, run: DemoRun) -> int:
    """Delete every record of `run`: its jobs with every key named after them (service.store.jobkeys); its project
    with its pull requests and rate-limit windows; its API key with its usage; its account's audit and usage; its RQ queues and
    their jobs. Every key it matches carries one of the run's own ids or names. Returns how many keys went."""
    job_ids = _job_ids(client, run.project_id)
    jobs = [job for job in (services.jobs.find(job_id) for job_id in job_ids) if job is not None]
    patterns = [
        f"cd:project:{run.project_id}*",
        f"cd:local:{run.project_id}:*",
        f"cd:rl:{run.project_id}:*",
        f"cd:apikey:{run.key_id}*",
        f"cd:usage:key:{run.key_id}:*",
        f"cd:apikeys:created:*:{run.account}",
        f"cd:apikeys:audit:{run.account}",
        f"cd:usage:account:{run.account}:*",
        f"cd:account:{run.account}:*",
    ]
    keys = {text(key) for pattern in patterns for key in client.scan_iter(match=pattern, count=1000)}
    keys.update(key for job in jobs for key in services.jobs.keys_of(job))  # named, not matched: see jobkeys
    # The RQ jobs of the jobs' runs, by the id each job keeps of its last: a run stopped with the demo's worker
    # may sit in none of the queue's registries, its hash without an expiry.
    runs = {text(i) for i in client.mget([rq_key(job_id) for job_id in job_ids]) if i} if job_ids else set()
    removed = _remove_queues(client, run.queue_names, runs)
    with client.pipeline() as pipe:
        if job_ids:
            pipe.srem(PENDING_JOBS, *job_ids)
            pipe.zrem(FINISHED_JOBS, *job_ids)
        pipe.zrem(_PROJECT_INDEX, run.project_id)
        pipe.zrem(_KEY_INDEX, run.key_id)
        if keys:
            pipe.delete(*keys)
        replies = pipe.execute()
    return removed + (int(replies[-1]) if keys else 0)  # DEL's reply: how many of them existed


def _job_ids(client: redis.Redis, project_id: str) -> list[str]:
    return [text(i) for i in client.zrange(f"cd:project:{project_id}:jobs", 0, -1)]


def _remove_queues(client: redis.Redis, names: tuple[str, ...], runs: set[str]) -> int:
    """Delete the queues, every job RQ still keeps of them (queued, finished, failed...) and the RQ jobs `runs`,
    and the registrations of the demo's workers, which were stopped already: one stopped hard (a second signal)
    never unregisters itself."""
    queues = [rq.Queue(name, connection=client) for name in names]
    ids = set(runs)
    for queue in queues:
        registries = (
            queue.started_job_registry,
            queue.finished_job_registry,
            queue.failed_job_registry,
            queue.deferred_job_registry,
            queue.scheduled_job_registry,
            queue.canceled_job_registry,
        )
        ids.update(job_id for registry in registries for job_id in registry.get_job_ids())
    removed = 0
    for job in RQJob.fetch_many(sorted(ids), connection=client):
        if job is not None:
            job.delete(remove_from_queue=False)
            removed += 1
    for queue in queues:
        removed += queue.count
        queue.delete(delete_jobs=True)
        removed += _unregister_workers(client, queue.name)
    return removed


def _unregister_workers(client: redis.Redis, queue_name: str) -> int:
    """Drop the workers listed for `queue_name` from RQ's registries; none of them has an expiry."""
    listed = WORKERS_BY_QUEUE_KEY % queue_name
    workers = client.smembers(listed)
    with client.pipeline() as pipe:
        if workers:
            pipe.srem(REDIS_WORKER_KEYS, *workers)
            pipe.delete(*workers)  # each worker's own hash: it would expire, but the demo leaves nothing behind
        pipe.delete(listed)
        return int(pipe.execute()[-1])
