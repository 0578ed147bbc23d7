"""A per-job lock in Redis, held while a run is going and renewed by a heartbeat."""

import secrets
import threading
from contextlib import contextmanager

import redis

# Release or renew only a lock this holder still owns; an expired lock may belong to someone else now.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


# Long enough to ride out a slow Redis call, short enough that a dead worker's job is soon picked up.
LOCK_TTL_SECONDS = 30.0


class LockLost(Exception):
    """The lock expired under its holder (a stall longer than its time to live); another run may own it."""


def lock_key(job_id: str) -> str:
    return f"cd:job:{job_id}:lock"


class JobLock:
    """Mutual exclusion of runs of one job, across workers; expires if its holder dies."""

    def __init__(self, client: redis.Redis, job_id: str, ttl_seconds: float = LOCK_TTL_SECONDS) -> None:
        self._redis = client
        self._key = lock_key(job_id)
        self._ttl_ms = int(ttl_seconds * 1000)
        self._token = secrets.token_hex(16)
        self._release = client.register_script(_RELEASE)
        self._renew = client.register_script(_RENEW)
        self._lost = threading.Event()

    def acquire(self) -> bool:
        return bool(self._redis.set(self._key, self._token, nx=True, px=self._ttl_ms))

    def release(self) -> None:
        self._release(keys=[self._key], args=[self._token])

    def renew(self) -> bool:
        held = bool(self._renew(keys=[self._key], args=[self._token, self._ttl_ms]))
        if not held:
            self._lost.set()
        return held

    def ensure_held(self) -> None:
        """Raise LockLost if a renewal found the lock gone; call before acting on the job's behalf."""
        if self._lost.is_set():
            raise LockLost(f"{self._key} expired during the run")

    @contextmanager
    def heartbeat(self):
        """Keep the lock alive while the block runs."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self._ttl_ms / 3000):
                try:
                    self.renew()
                except redis.RedisError:
                    pass  # a blip; the next beat tries again before the lock can expire

        thread = threading.Thread(target=beat, name=f"heartbeat {self._key}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def is_locked(client: redis.Redis, job_id: str) -> bool:
    return bool(client.exists(lock_key(job_id)))
