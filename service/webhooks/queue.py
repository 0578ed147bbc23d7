"""Webhook attempts as RQ jobs: now (a re-send, a backstop) or later (a retry, through RQ's scheduler)."""

from datetime import timedelta

import redis
import rq


def webhooks_queue_name(queue_name: str) -> str:
    return f"{queue_name}-webhooks"


class DeliveryQueue:
    """Enqueues `task(delivery_id, attempt, manual)`; `task` is the dotted path of the worker's entry function.
    For a re-send (`manual`), `attempt` is the re-send's number, claimed apart from the retry chain's."""

    def __init__(self, client: redis.Redis, *, queue_name: str, task: str) -> None:
        self._queue = rq.Queue(webhooks_queue_name(queue_name), connection=client)
        self._task = task

    def now(self, delivery_id: str, attempt: int, *, manual: bool = False) -> None:
        self._queue.enqueue(self._task, delivery_id, attempt, manual, **_OPTIONS)

    def later(self, seconds: float, delivery_id: str, attempt: int) -> None:
        """Run the attempt after `seconds`; needs a worker with RQ's scheduler on (`copydesk worker` has it)."""
        self._queue.enqueue_in(timedelta(seconds=seconds), self._task, delivery_id, attempt, False, **_OPTIONS)


# An attempt is one HTTP call with its own time-out; a failure is recorded on the delivery, not in RQ.
_OPTIONS = {"job_timeout": 120, "result_ttl": 600, "failure_ttl": 7 * 24 * 3600}
