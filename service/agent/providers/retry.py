"""A vendor-neutral retry policy for model calls: bounded attempts and total wait, honouring Retry-After."""

import random
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from service.agent.model import ModelError

T = TypeVar("T")


class Transient(Exception):
    """A failed model call worth retrying; `retry_after` is the wait in seconds the server asked for, if any."""

    def __init__(self, retry_after: float | None, detail: str) -> None:
        super().__init__(detail)
        self.retry_after = retry_after
        self.detail = detail


@dataclass(frozen=True)
class RetryPolicy:
    """Retries a call on `Transient` failures, at most `attempts` calls and `max_total_wait` seconds of waiting."""

    attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_total_wait: float = 120.0
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random

    def call(self, fn: Callable[[], T], *, what: str = "the model") -> T:
        """Return `fn()`, retrying while it raises `Transient`; raise ModelError `model_unavailable` when out of tries.

        `what` names the model in the error message.
        """
        waited = 0.0
        attempt = 0
        while True:
            attempt += 1
            try:
                return fn()
            except Transient as exc:
                if attempt >= self.attempts:
                    raise ModelError(
                        f"{what} failed {_times(attempt)} in a row (waited {waited:.0f} s between attempts); "
                        f"last error: {exc.detail}", code="model_unavailable") from exc
                delay = self.delay(attempt, exc.retry_after)
                if waited + delay > self.max_total_wait:
                    raise ModelError(
                        f"{what} failed {_times(attempt)} in a row; gave up rather than wait {delay:.0f} s more "
                        f"(already waited {waited:.0f} s of at most {self.max_total_wait:.0f} s); "
                        f"last error: {exc.detail}", code="model_unavailable") from exc
                self.sleep(delay)
                waited += delay

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based): the server's ask, else backoff."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        # Half fixed, half random: spreads out clients that failed together without ever retrying at once.
        return ceiling * (0.5 + self.jitter() / 2)


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"
