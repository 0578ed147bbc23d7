"""RQ entry points: importable functions that take plain ids and build what they need."""

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from contextvars import ContextVar

from bot import context
from bot.github import events
from service.runstop import StopReason, discard_early_stop, request_current
from service.settings import Settings

# The context of the worker process whose work horse runs the task (bot.rqworker sets it around each job): a
# run then reuses what the worker built and imported before it forked. Unset, a task builds its own.
_worker_context: ContextVar[context.Context | None] = ContextVar("copydesk_worker_context", default=None)


@contextlib.contextmanager
def in_worker(ctx: context.Context) -> Iterator[None]:
    """Tasks run within use `ctx`, the worker process's context, instead of building one."""
    token = _worker_context.set(ctx)
    try:
        yield
    finally:
        _worker_context.reset(token)


def _context() -> context.Context:
    # Settings are read here, in the worker's own process, not at import time.
    return _worker_context.get() or context.build(Settings.from_env())


def process_job(job_id: str) -> None:
    """Run the next waiting message of job `job_id`; a SIGTERM to this process hands the run back."""
    runner = _context().runner(worker=os.environ.get("RQ_WORKER_ID", ""))
    if threading.current_thread() is not threading.main_thread():
        runner.process(job_id)
        return
    # The worker process sends SIGTERM when its stop grace is over (or at a second signal); so does the kernel
    # when the worker process dies (see bot.rqworker). Either way: requeue the run, count no attempt.
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: request_current(StopReason.HAND_BACK))
    try:
        runner.process(job_id)
    finally:
        signal.signal(signal.SIGTERM, previous)
        discard_early_stop()


def handle_github_event(event_name: str, delivery_id: str, payload: dict) -> None:
    """Run the handlers of one GitHub webhook delivery."""
    events.handle(_context().github_bot(), event_name, delivery_id, payload)


def deliver_webhook(delivery_id: str, attempt: int, manual: bool = False) -> None:
    """An attempt that a version before the delivery lanes queued on RQ (a retry due later, a re-send): moved onto
    its account's lane, which makes it (service.outbound.lanes)."""
    _context().services.deliveries.now(delivery_id, attempt, manual=manual)
