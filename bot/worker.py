"""Worker start-up: recover stranded messages, keep sweeping, and run an RQ worker on Copydesk's queue."""

import logging
import threading
import time
from datetime import timedelta

import redis
import rq

from bot.context import Context
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
    """Process jobs until stopped (or, with `burst`, until the queue is empty)."""
    sweep_once(ctx)
    stop = threading.Event()
    if not burst:
        threading.Thread(target=_sweep_forever, args=(ctx, stop), name="copydesk-sweeper", daemon=True).start()
    queue = rq.Queue(ctx.settings.queue_name, connection=ctx.services.redis)
    worker = rq.Worker([queue], connection=ctx.services.redis)
    try:
        return worker.work(burst=burst, with_scheduler=False, logging_level="INFO")
    finally:
        stop.set()
