"""A worker process's delivery lanes: webhook attempts made on their own threads, beside the runs and never instead
of them, with each account (a lane) limited to a few attempts at once and the accounts served in turn, so that one
account's slow or dead endpoints delay only that account's deliveries."""

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import redis

from service.outbound.queue import Attempt, DeliveryQueue

log = logging.getLogger(__name__)

IDLE_WAIT_SECONDS = 0.2  # how often an idle process looks for due attempts
# How long a taken attempt is held past its own deadline before another process may take it (its taker died).
LEASE_MARGIN_SECONDS = 60


class DeliveryLanes:
    """Makes the due attempts of every lane with `make(attempt)` on `threads` threads, at most `per_lane` of one
    lane at once; `deadline_seconds` bounds one attempt (it sets how long a taken attempt is held)."""

    def __init__(
        self,
        queue: DeliveryQueue,
        make: Callable[[Attempt], object],
        *,
        threads: int,
        per_lane: int,
        deadline_seconds: float,
    ) -> None:
        self._queue = queue
        self._make = make
        self._threads = threads
        self._per_lane = per_lane
        self._lease = deadline_seconds + LEASE_MARGIN_SECONDS
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="copydesk-webhook")
        self._busy: dict[str, int] = {}
        self._lock = threading.Lock()
        self._freed = threading.Event()
        self._turn = 0

    @property
    def busy(self) -> int:
        """Attempts being made now."""
        with self._lock:
            return sum(self._busy.values())

    def run_once(self) -> int:
        """Start the due attempts there is room for, the lanes in turn from the next one on; returns how many."""
        free = self._threads - self.busy
        lanes = self._queue.lanes() if free > 0 else []
        if not lanes:
            return 0
        first = self._turn % len(lanes)
        self._turn += 1
        started = 0
        for lane in lanes[first:] + lanes[:first]:
            with self._lock:
                room = min(self._per_lane - self._busy.get(lane, 0), free - started)
            if room <= 0:
                continue
            for attempt in self._queue.take(lane, room, lease_seconds=self._lease):
                self._start(lane, attempt)
                started += 1
            if started >= free:
                break
        return started

    def run_forever(self, stop: threading.Event) -> None:
        """Serve the lanes until `stop` is set; Redis outages pause them."""
        try:
            while not stop.is_set():
                try:
                    started = self.run_once()
                except redis.RedisError:
                    log.warning("webhook lanes paused: Redis unreachable", exc_info=True)
                    stop.wait(2)
                    continue
                if not started:
                    self._freed.wait(IDLE_WAIT_SECONDS)
                    self._freed.clear()
        finally:
            self.close()

    def close(self) -> None:
        """Take no more attempts; those being made finish on their own (each within its deadline)."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _start(self, lane: str, attempt: Attempt) -> None:
        with self._lock:
            self._busy[lane] = self._busy.get(lane, 0) + 1
        self._executor.submit(self._make_and_release, lane, attempt)

    def _make_and_release(self, lane: str, attempt: Attempt) -> None:
        made = True
        try:
            self._make(attempt)
        except redis.RedisError:
            made = False  # left in its lane: taken again when its lease ends
            log.warning(
                "webhook delivery %s: attempt %d interrupted, Redis unreachable", attempt.delivery_id, attempt.number
            )
        except Exception:
            log.exception("webhook delivery %s: attempt %d failed to run", attempt.delivery_id, attempt.number)
        finally:
            self._release(lane, attempt, made)

    def _release(self, lane: str, attempt: Attempt, made: bool) -> None:
        try:
            if made:
                self._queue.done(lane, attempt)
        except redis.RedisError:
            # It is taken again when its lease ends; its claim keeps it from being sent twice.
            log.warning("webhook delivery %s: could not mark attempt %d done", attempt.delivery_id, attempt.number)
        with self._lock:
            self._busy[lane] -= 1
            if not self._busy[lane]:
                del self._busy[lane]
        self._freed.set()
