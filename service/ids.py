"""Opaque, URL-safe, time-sortable identifiers: a prefix plus a 26-character ULID."""

import os
import threading
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class UlidGenerator:
    """Makes ULIDs that sort in creation order, even within one millisecond of one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = -1
        self._last_random = 0

    def new(self) -> str:
        with self._lock:
            ms = int(time.time() * 1000)
            if ms <= self._last_ms:
                # Same millisecond (or a clock step back): bump the random part so order holds.
                ms = self._last_ms
                random_part = self._last_random + 1
            else:
                random_part = int.from_bytes(os.urandom(10), "big")
            self._last_ms, self._last_random = ms, random_part
        return _encode(ms, 10) + _encode(random_part & ((1 << 80) - 1), 16)


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return "".join(reversed(chars))


def new_id(prefix: str, generator: UlidGenerator) -> str:
    """Return `prefix_` followed by a fresh ULID."""
    return f"{prefix}_{generator.new()}"
