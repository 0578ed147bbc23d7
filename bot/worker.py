"""Worker start-up: recover stranded messages, keep sweeping, fan webhooks out and make their attempts on the
delivery lanes, and run an RQ worker on Copydesk's queues."""

import logging
import os
import signal
import socket
import threading
import time
from datetime import timedelta

import redis
import rq

from bot.context import Context
from bot.heartbeat import WorkerHeartbeat
from bot.rqworker import CopydeskWorker, hold_pool_across_fork
from service.agent.providers import preload
from service.automations.ticker import tick as automation_tick
from service.clock import clock_of
from service.dispatch import archive_inactive
from service.faults import Faults
from service.models import JobStatus
from service.outbound.fanout import Fanout
from service.outbound.lanes import DeliveryLanes
from service.outbound.queue import Attempt
from service.preflight import FirstContactChecks
from service.purge import AccountPurges
from service.queues import LOCAL_UPKEEP_TURN, SWEEP_TURN, worker_queues
from service.replication import NotWritable
from service.store import schema
from service.workspace.git import GitError
from service.workspace.mirror import MirrorStore

log = logging.getLogger(__name__)

MAINTENANCE_INTERVAL_SECONDS = 600
# The longest wait between attempts to reach Redis again after RQ's loop ended on a Redis error.
RECONNECT_MAX_DELAY_SECONDS = 5.0


def sweep_once(ctx: Context) -> list[str]:
    """Queue messages that were stored but never queued, archive jobs idle past retention, and purge the data of
    accounts that left long enough ago."""
    services = ctx.services
    kicked = services.dispatcher.sweep()
    archived = archive_inactive(services.jobs, older_than=timedelta(days=ctx.settings.retention_days))
    if archived:
        log.info("archived %d inactive job(s)", len(archived))
    AccountPurges(services).run_due()
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
        return {
            job_id
            for job_id in job_ids
            if (job := services.jobs.find(job_id)) is not None and job.status is JobStatus.ARCHIVED
        }

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
            log.info(
                "project %s: branches of %d archived job(s) kept under refs/copydesk/archive/", project.id, len(retired)
            )


def _sweep_forever(ctx: Context, stop: threading.Event) -> None:
    interval = ctx.settings.sweep_interval_seconds
    last_maintenance = time.monotonic()
    while not stop.wait(interval):
        try:
            # One sweep per interval across all workers: the first to take the turn does it.
            if ctx.services.redis.set(SWEEP_TURN, "1", nx=True, px=int(interval * 1000)):
                sweep_once(ctx)
        except redis.RedisError:
            log.warning("sweep skipped: Redis unreachable")
        if time.monotonic() - last_maintenance > MAINTENANCE_INTERVAL_SECONDS:
            maintain_mirrors(ctx)
            # One worker's turn at a time: the local repositories are shared by every worker of the machine.
            try:
                if ctx.services.redis.set(LOCAL_UPKEEP_TURN, "1", nx=True, ex=MAINTENANCE_INTERVAL_SECONDS):
                    maintain_local_repositories(ctx)
            except redis.RedisError:
                log.warning("local repository upkeep skipped: Redis unreachable")
            last_maintenance = time.monotonic()


def _tick_automations_forever(ctx: Context, stop: threading.Event) -> None:
    """Each interval: the due schedule slots and (one worker at a time) new local source commits. Only workers
    tick; see service.automations.ticker."""
    settings = ctx.settings
    clock, faults, interval = (
        clock_of(settings.test_clock_file),
        Faults(settings.test_faults),
        settings.automation_tick_seconds,
    )
    while not stop.wait(interval):
        try:
            automation_tick(
                ctx.services, clock(), max_diff_chars=settings.max_prompt_chars, faults=faults, interval=interval
            )
        except redis.RedisError:
            log.warning("automation tick skipped: Redis unreachable")
        except Exception:
            log.exception("automation tick failed; trying again next interval")


def fanout(ctx: Context) -> Fanout:
    """The webhook fan-out of this worker process (one consumer of the outbox's group)."""
    services = ctx.services
    return Fanout(
        services.redis, services.webhooks, services.deliveries, consumer=f"{socket.gethostname()}-{os.getpid()}"
    )


def delivery_lanes(ctx: Context) -> DeliveryLanes:
    """This worker process's webhook attempts: their own threads, a few per account at once, accounts in turn."""
    settings, sender = ctx.settings, ctx.services.sender

    def make(attempt: Attempt) -> None:
        sender.attempt(attempt.delivery_id, attempt.number, manual=attempt.manual)

    return DeliveryLanes(
        ctx.services.deliveries,
        make,
        threads=settings.webhook_threads,
        per_lane=settings.webhook_account_concurrency,
        deadline_seconds=settings.webhook_timeout_seconds,
    )


def _fan_out_forever(ctx: Context, stop: threading.Event) -> None:
    fan = fanout(ctx)
    adopted = False
    while not stop.is_set():
        try:
            if not adopted:  # once per process, as it starts
                ctx.services.deliveries.adopt_legacy()
                adopted = True
            # One second: under the client's read time-out, which is at least two (MIN_SOCKET_TIMEOUT).
            fan.run_once(block_ms=1000)
        except redis.RedisError:
            log.warning("webhook fan-out paused: Redis unreachable", exc_info=True)
            stop.wait(2)
        except Exception:
            log.exception("webhook fan-out failed; retrying")
            stop.wait(2)


def run_worker(ctx: Context, *, burst: bool = False, upkeep: bool = True) -> bool:
    """`copydesk worker`: process GitHub events, webhook attempts and agent runs until stopped (or, with `burst`,
    until the queues are empty). RQ takes from the first non-empty queue, and runs are long.
    A Redis outage never ends it: it backs off, reconnects and carries on. Before it takes any work, Redis's
    settings are checked (again, or for the first time if Redis was down at start): RedisRefused when its
    policy evicts keys, SchemaMismatch when its data needs `copydesk migrate`. Without `upkeep` (a worker of a
    pool, whose supervisor does it) it never sweeps, fans webhooks out, makes webhook attempts or maintains
    mirrors. While the node takes no writes (a replica, or a primary short of replicas) it takes no work and says
    why once; with `burst` it raises NotWritable instead."""
    stop = threading.Event()
    started_at = time.monotonic()
    providers = preload(ctx.settings, ctx.model_http)
    log.info(
        "worker: model providers imported before forking: %s (%.1f s)",
        ", ".join(providers) or "none",
        time.monotonic() - started_at,
    )
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
                    ctx.services.durability.writable()
                    schema.require_current(ctx.services.redis)  # after: it stamps an empty Redis (a write)
                    if upkeep and not burst and not started:
                        start_upkeep(ctx, stop)
                        started = True
                    worker = CopydeskWorker([rq.Queue(name, connection=ctx.services.redis) for name in names], ctx=ctx)
                    heartbeat.watch(worker)
                    if upkeep:
                        sweep_once(ctx)
                    # The scheduler moves retries that older versions scheduled on RQ onto their queue when due.
                    worked = worker.work(burst=burst, with_scheduler=True, logging_level="INFO") or worked
                    if worker.refusal is not None:
                        raise worker.refusal
                except NotWritable as refusal:
                    if burst:
                        raise
                    log.warning("worker: taking no work until Redis takes writes again: %s", refusal)
                except redis.RedisError:
                    log.warning("worker: Redis unreachable", exc_info=True)
                if (worker is not None and worker.shutting_down) or (burst and _reachable(ctx)):
                    return worked
                # RQ's loop ends on any error it does not handle, a Redis outage among them: wait, start again.
                if _wait_for_redis(ctx):
                    return worked
    finally:
        stop.set()


def start_upkeep(ctx: Context, stop: threading.Event) -> None:
    """The sweeper (with mirror maintenance), the webhook fan-out, the delivery lanes and the automation tick, which
    run in threads until `stop` is set."""
    log.info("sweep, mirror upkeep, webhook fan-out and delivery lanes running in process %d", os.getpid())
    threading.Thread(target=_sweep_forever, args=(ctx, stop), name="copydesk-sweeper", daemon=True).start()
    threading.Thread(
        target=_tick_automations_forever, args=(ctx, stop), name="copydesk-automations", daemon=True
    ).start()
    threading.Thread(target=_fan_out_forever, args=(ctx, stop), name="copydesk-fanout", daemon=True).start()
    threading.Thread(
        target=delivery_lanes(ctx).run_forever, args=(stop,), name="copydesk-webhook-lanes", daemon=True
    ).start()


def _reachable(ctx: Context) -> bool:
    try:
        return bool(ctx.services.redis.ping())
    except redis.RedisError:
        return False


def _writable(ctx: Context) -> bool:
    try:
        ctx.services.durability.writable()
        return True
    except (redis.RedisError, NotWritable):
        return False


def _wait_for_redis(ctx: Context) -> bool:
    """Back off until Redis answers and takes writes; True if a stop signal came meanwhile (then the worker
    exits)."""
    stopping = threading.Event()
    in_main = threading.current_thread() is threading.main_thread()
    signals = (signal.SIGTERM, signal.SIGINT) if in_main else ()
    handlers = {sig: signal.signal(sig, lambda *_: stopping.set()) for sig in signals}
    try:
        for delay in _backoff():
            if stopping.wait(delay):
                return True
            if _writable(ctx):
                log.info("worker: Redis is reachable and takes writes again; resuming")
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
