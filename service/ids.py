"""Opaque, URL-safe, time-sortable identifiers: a prefix plus a 26-character ULID."""

import base64
import os
import threading
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_FROM_BASE32 = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", _CROCKFORD.encode())


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
        return encode(ms, random_part & ((1 << 80) - 1))


def encode(ms: int, random_part: int) -> str:
    """The ULID of a 48-bit millisecond time and an 80-bit random part: the 128-bit value in 26 Crockford base32
    digits (130 bits, two leading zeros)."""
    # The last 26 digits of the value as 25 bytes (200 bits, 40 digits) in standard base32, whose digits then
    # line up with the value's: the C codec in place of a Python loop over 26 digits (two ids each job created).
    value = ms << 80 | random_part
    return base64.b32encode(value.to_bytes(25, "big"))[-26:].translate(_FROM_BASE32).decode()


def new_id(prefix: str, generator: UlidGenerator) -> str:
    """Return `prefix_` followed by a fresh ULID."""
    return f"{prefix}_{generator.new()}"
