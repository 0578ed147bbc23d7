"""Worker start-up: recover stranded messages, keep sweeping, fan webhooks out, and run an RQ worker (with its
scheduler, for webhook retries) on Copydesk's queues."""

import logging
import os
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import redis
import rq

from bot.context import Context
from bot.github.webhooks import events_queue_name
from bot.heartbeat import WorkerHeartbeat
from bot.rqworker import CopydeskWorker, hold_pool_across_fork
from service.agent.providers import preload
from service.dispatch import archive_inactive
from service.models import JobStatus
from service.preflight import FirstContactChecks
from service.webhooks.fanout import Fanout
from service.webhooks.queue import webhooks_queue_name
from service.workspace.git import GitError
from service.workspace.mirror import MirrorStore

log = logging.getLogger(__name__)

FANOUT_THREADS = 8  # first attempts of webhook deliveries sent at once by one worker process
MAINTENANCE_INTERVAL_SECONDS = 600
# The longest wait between attempts to reach Redis again after RQ's loop ended on a Redis error.
RECONNECT_MAX_DELAY_SECONDS = 5.0


def sweep_once(ctx: Context) -> list[str]:
    """Queue messages that were stored but never queued, and archive jobs idle past retention."""
    services = ctx.services
    kicked = services.dispatcher.sweep()
    archived = archive_inactive(services.jobs, older_than=timedelta(days=ctx.settings.retention_days))
    if archived:
        log.info("archived %d inactive job(s)", len(archived))
    return kicked


def maintain_mirrors(ctx: Context) -> None:
    """Housekeeping of this worker's git mirrors (stale run refs, `gc --auto`), each under its lock."""
    for mirror in MirrorStore(ctx.settings.mirrors_dir, ctx.git).existing():
        try:
            mirror.maintenance()
        except GitError:
            log.warning("maintenance of %s failed", mirror.path, exc_info=True)


def maintain_local_repositories(ctx: Context) -> None:
    """Upkeep of the local code host's repositories: branches of archived jobs move under
    refs/copydesk/archive/, then refs are packed. GitHub's branches stay as they are."""
    services = ctx.services

    def archived(job_ids: list[str]) -> set[str]:
        return {job_id for job_id in job_ids
                if (job := services.jobs.find(job_id)) is not None and job.status is JobStatus.ARCHIVED}

    for project in services.projects.all():
        if project.host != ctx.local.name:
            continue
        try:
            retired = ctx.local.retire_archived_branches(project, archived)
            ctx.local.pack_refs(project)
        except GitError:
            log.warning("upkeep of %s failed", project.repository, exc_info=True)
            continue
        if retired:
            log.info("project %s: branches of %d archived job(s) kept under refs/copydesk/archive/",
                     project.id, len(retired))


def _sweep_forever(ctx: Context, stop: threading.Event) -> None:
    interval = ctx.settings.sweep_interval_seconds
    last_maintenance = time.monotonic()
    while not stop.wait(interval):
        try:
            # One sweep per interval across all workers: the first to take the turn does it.
            if ctx.services.redis.set("cd:sweep:turn", "1", nx=True, px=int(interval * 1000)):
                sweep_once(ctx)
        except redis.RedisError:
            log.warning("sweep skipped: Redis unreachable")
        if time.monotonic() - last_maintenance > MAINTENANCE_INTERVAL_SECONDS:
            maintain_mirrors(ctx)
            # One worker's turn at a time: the local repositories are shared by every worker of the machine.
            try:
                if ctx.services.redis.set("cd:local-upkeep:turn", "1", nx=True, ex=MAINTENANCE_INTERVAL_SECONDS):
                    maintain_local_repositories(ctx)
            except redis.RedisError:
                log.warning("local repository upkeep skipped: Redis unreachable")
            last_maintenance = time.monotonic()


def fanout(ctx: Context, executor: ThreadPoolExecutor) -> Fanout:
    """The webhook fan-out of this worker process (one consumer of the outbox's group)."""
    services = ctx.services
    return Fanout(services.redis, services.webhooks, services.sender,
                  consumer=f"{socket.gethostname()}-{os.getpid()}", executor=executor)


def _fan_out_forever(ctx: Context, stop: threading.Event) -> None:
    with ThreadPoolExecutor(FANOUT_THREADS, thread_name_prefix="copydesk-webhook") as executor:
        fan = fanout(ctx, executor)
        while not stop.is_set():
            try:
                # One second: under the client's read time-out, which is at least two (MIN_SOCKET_TIMEOUT).
                fan.run_once(block_ms=1000)
            except redis.RedisError:
                log.warning("webhook fan-out paused: Redis unreachable", exc_info=True)
                stop.wait(2)
            except Exception:
                log.exception("webhook fan-out failed; retrying")
                stop.wait(2)


def worker_queues(queue_name: str) -> list[str]:
    """The queues a worker serves, first first: GitHub events, webhook attempts (short), then runs (long)."""
    return [events_queue_name(queue_name), webhooks_queue_name(queue_name), queue_name]


def run_worker(ctx: Context, *, burst: bool = False) -> bool:
    """`copydesk worker`: process GitHub events, webhook attempts and agent runs until stopped (or, with `burst`,
    until the queues are empty). RQ takes from the first non-empty queue, and runs are long.
    A Redis outage never ends it: it backs off, reconnects and carries on. Before it takes any work, Redis's
    settings are checked (again, or for the first time if Redis was down at start): RedisRefused when its
    policy evicts keys."""
    stop = threading.Event()
    started_at = time.monotonic()
    providers = preload(ctx.settings, ctx.model_http)
    log.info("worker: model providers imported before forking: %s (%.1f s)", ", ".join(providers) or "none",
             time.monotonic() - started_at)
    hold_pool_across_fork(ctx.services.redis.connection_pool)
    redis_settings = FirstContactChecks(ctx.services.redis, allow_eviction=ctx.settings.allow_redis_eviction)
    names = worker_queues(ctx.settings.queue_name)
    worked = started = False
    try:
        with WorkerHeartbeat(ctx) as heartbeat:
            while True:
                worker = None
                try:
                    redis_settings.require()
                    if not burst and not started:
                        _start_background(ctx, stop)
                        started = True
                    worker = CopydeskWorker([rq.Queue(name, connection=ctx.services.redis) for name in names],
                                            ctx=ctx)
                    heartbeat.watch(worker)
                    sweep_once(ctx)
                    # The scheduler moves webhook retries (enqueue_in) onto their queue when they are due.
                    worked = worker.work(burst=burst, with_scheduler=True, logging_level="INFO") or worked
                except redis.RedisError:
                    log.warning("worker: Redis unreachable", exc_info=True)
                if (worker is not None and worker.shutting_down) or (burst and _reachable(ctx)):
                    return worked
                # RQ's loop ends on any error it does not handle, a Redis outage among them: wait, start again.
                if _wait_for_redis(ctx):
                    return worked
    finally:
        stop.set()


def _start_background(ctx: Context, stop: threading.Event) -> None:
    """The sweeper and the webhook fan-out, which run beside RQ's loop until `stop` is set."""
    threading.Thread(target=_sweep_forever, args=(ctx, stop), name="copydesk-sweeper", daemon=True).start()
    threading.Thread(target=_fan_out_forever, args=(ctx, stop), name="copydesk-fanout", daemon=True).start()


def _reachable(ctx: Context) -> bool:
    try:
        return bool(ctx.services.redis.ping())
    except redis.RedisError:
        return False


def _wait_for_redis(ctx: Context) -> bool:
    """Back off until Redis answers; True if a stop signal came meanwhile (then the worker exits)."""
    stopping = threading.Event()
    in_main = threading.current_thread() is threading.main_thread()
    signals = (signal.SIGTERM, signal.SIGINT) if in_main else ()
    handlers = {sig: signal.signal(sig, lambda *_: stopping.set()) for sig in signals}
    try:
        for delay in _backoff():
            if stopping.wait(delay):
                return True
            if _reachable(ctx):
                log.info("worker: Redis is reachable again; resuming")
                return False
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return False


def _backoff():
    """0.5 s, doubling, capped at RECONNECT_MAX_DELAY_SECONDS, for ever."""
    delay = 0.5
    while True:
        yield delay
        delay = min(delay * 2, RECONNECT_MAX_DELAY_SECONDS)
