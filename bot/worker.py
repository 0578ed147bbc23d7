"""Worker start-up: recover stranded messages, keep sweeping, and run an RQ worker on Copydesk's queues."""

import logging
import threading
import time
from datetime import timedelta

import redis
import rq

from bot.context import Context
from bot.github.webhooks import events_queue_name
from service.dispatch import archive_inactive
from service.workspace.git import GitError
from service.workspace.mirror import MirrorStore

log = logging.getLogger(__name__)

SWEEP_INTERVAL_SECONDS = 30
MAINTENANCE_INTERVAL_SECONDS = 600


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


def _sweep_forever(ctx: Context, stop: threading.Event) -> None:
    last_maintenance = time.monotonic()
    while not stop.wait(SWEEP_INTERVAL_SECONDS):
        try:
            sweep_once(ctx)
        except redis.RedisError:
            log.warning("sweep skipped: Redis unreachable", exc_info=True)
        if time.monotonic() - last_maintenance > MAINTENANCE_INTERVAL_SECONDS:
            maintain_mirrors(ctx)
            last_maintenance = time.monotonic()


def run_worker(ctx: Context, *, burst: bool = False) -> bool:
    """`copydesk worker`: process GitHub events and agent runs until stopped (or, with `burst`, until both
    queues are empty). Events come first: RQ takes from the first non-empty queue, and runs are long."""
    sweep_once(ctx)
    stop = threading.Event()
    if not burst:
        threading.Thread(target=_sweep_forever, args=(ctx, stop), name="copydesk-sweeper", daemon=True).start()
    names = [events_queue_name(ctx.settings.queue_name), ctx.settings.queue_name]
    queues = [rq.Queue(name, connection=ctx.services.redis) for name in names]
    worker = rq.Worker(queues, connection=ctx.services.redis)
    try:
        return worker.work(burst=burst, with_scheduler=False, logging_level="INFO")
    finally:
        stop.set()
