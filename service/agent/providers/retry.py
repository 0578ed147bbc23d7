"""A vendor-neutral retry policy for model calls: bounded by time, exponential backoff with jitter, Retry-After honoured."""

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from service.agent.model import ModelError
from service.codes import RunFailure

T = TypeVar("T")
log = logging.getLogger(__name__)


class Transient(Exception):
    """A failed model call worth retrying; `retry_after` is the wait in seconds the server asked for, if any."""

    def __init__(self, retry_after: float | None, detail: str) -> None:
        super().__init__(detail)
        self.retry_after = retry_after
        self.detail = detail


@dataclass(frozen=True)
class RetryPolicy:
    """Retries a call on `Transient` failures for up to `budget` seconds after the first failure.

    Time, not a count of attempts, is the bound: an outage shorter than the budget is ridden out however
    many attempts it takes. Waits grow from `base_delay` to `max_delay`, jittered; a server's Retry-After
    is waited out in full when it fits the budget.
    """

    budget: float = 120.0
    base_delay: float = 1.0
    max_delay: float = 15.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    jitter: Callable[[], float] = random.random

    def call(self, fn: Callable[[], T], *, what: str = "the model") -> T:
        """Return `fn()`, retrying while it raises `Transient`; raise ModelError `model_unavailable` once the
        budget is spent. `what` names the model in messages."""
        first_failure: float | None = None
        attempt = 0
        while True:
            attempt += 1
            try:
                return fn()
            except Transient as exc:
                now = self.clock()
                if first_failure is None:
                    first_failure = now
                failing_for = now - first_failure
                left = self.budget - failing_for
                if left <= 0:
                    raise self._gave_up(what, attempt, failing_for, exc, "") from exc
                if exc.retry_after is not None and exc.retry_after > left:
                    # Retrying before the server's time would be refused again; waiting it out would pass the budget.
                    raise self._gave_up(
                        what, attempt, failing_for, exc, f"; it asked to wait {exc.retry_after:.0f} s more"
                    ) from exc
                delay = min(self.delay(attempt, exc.retry_after), left)
                log.warning(
                    "%s failed (%s); attempt %d, retrying in %.2f s (failing for %.0f s of at most %.0f s)",
                    what,
                    exc.detail,
                    attempt,
                    delay,
                    failing_for,
                    self.budget,
                )
                self.sleep(delay)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based): the server's ask, else backoff."""
        if retry_after is not None:
            return max(retry_after, 0.0)
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        # Half fixed, half random: spreads out clients that failed together without ever retrying at once.
        return ceiling * (0.5 + self.jitter() / 2)

    def _gave_up(self, what: str, attempt: int, failing_for: float, exc: Transient, why: str) -> ModelError:
        return ModelError(
            f"{what} kept failing for {failing_for:.0f} s ({_times(attempt)}; the retry budget is "
            f"{self.budget:.0f} s){why}; last error: {exc.detail}",
            code=RunFailure.MODEL_UNAVAILABLE,
        )


def _times(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"
