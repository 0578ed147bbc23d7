"""RQ entry points: importable functions that take plain ids and build what they need."""

import os
import signal
import threading

from bot import context
from bot.github import events
from service.runstop import StopReason, request_current
from service.settings import Settings


def process_job(job_id: str) -> None:
    """Run the next waiting message of job `job_id`; a SIGTERM to this process hands the run back."""
    # Settings are read here, in the worker's own process, not at import time.
    ctx = context.build(Settings.from_env())
    runner = ctx.runner(worker=os.environ.get("RQ_WORKER_ID", ""))
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


def handle_github_event(event_name: str, delivery_id: str, payload: dict) -> None:
    """Run the handlers of one GitHub webhook delivery."""
    events.handle(context.build(Settings.from_env()).github_bot(), event_name, delivery_id, payload)


def deliver_webhook(delivery_id: str, attempt: int, manual: bool = False) -> None:
    """An attempt that a version before the delivery lanes queued on RQ (a retry due later, a re-send): moved onto
    its account's lane, which makes it (service.webhooks.lanes)."""
    context.build(Settings.from_env()).services.deliveries.now(delivery_id, attempt, manual=manual)
