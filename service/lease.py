"""A run's lease on its job: a Redis hash with a fencing token, renewed by a heartbeat, checked before every write."""

from dataclasses import dataclass

import redis

from service.store import replies
from service.store.jobkeys import fence_key, lease_key

# Take the lease only when nobody holds it; the token is a per-job counter, so a later holder's is always larger.
_ACQUIRE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'token', token, 'worker', ARGV[2], 'kill_at', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return token
"""
# Renew, describe or release only a lease this holder still owns: an expired lease may be someone else's now.
_RENEW = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 0
"""
_RELEASE = """
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_SET = """
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then return redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) end
return -1
"""

# Long enough to ride out a slow Redis call or a stop-the-world pause, short enough for recovery in seconds.
LEASE_TTL_SECONDS = 6.0


class LeaseLost(Exception):
    """The lease is no longer this run's (it expired, or another run holds it now): write nothing more."""


@dataclass(frozen=True)
class Fence:
    """What a fenced write checks inside its Redis transaction: the job's lease still carries this token."""

    job_id: str
    token: str

    @property
    def key(self) -> str:
        return lease_key(self.job_id)

    def holds(self, pipe) -> bool:
        """Read (inside a WATCH on `key`) whether the lease is still this fence's."""
        current = pipe.hget(self.key, "token")
        return current is not None and replies.text(current) == self.token

    def ensure(self, client) -> None:
        """Raise LeaseLost unless the lease is still this fence's: inside a WATCH on `key` (then the write that
        follows is refused by Redis if the lease changes meanwhile), or a live read before a write Redis cannot
        fence (an HTTP call to a code host)."""
        if not self.holds(client):
            raise LeaseLost(f"the lease of job {self.job_id} is no longer token {self.token}; nothing was written")


def watched(fence: Fence | None) -> list[str]:
    """The lease key a fenced write WATCHes: a new holder's acquire changes it and aborts the write."""
    return [fence.key] if fence is not None else []


@dataclass(frozen=True)
class LeaseInfo:
    """The lease as another process sees it: the worker process renewing it and the run's hard deadline."""

    job_id: str
    token: str
    worker: str
    message_id: str
    kill_at: float  # Unix time past which the worker process ends the run that holds it

    @property
    def fence(self) -> Fence:
        return Fence(self.job_id, self.token)

    @classmethod
    def read(cls, client: redis.Redis, job_id: str) -> "LeaseInfo | None":
        raw = client.hgetall(lease_key(job_id))
        if not raw or b"token" not in raw:
            return None
        text = {replies.text(k): replies.text(v) for k, v in raw.items()}
        return cls(
            job_id, text["token"], text.get("worker", ""), text.get("message", ""), float(text.get("kill_at") or 0)
        )


class Lease:
    """Mutual exclusion of runs of one job across workers; it lapses `ttl` seconds after its last renewal."""

    def __init__(self, client: redis.Redis, job_id: str, ttl_seconds: float = LEASE_TTL_SECONDS) -> None:
        self._redis = client
        self.job_id = job_id
        self.ttl_seconds = ttl_seconds
        self._ttl_ms = int(ttl_seconds * 1000)
        self._key = lease_key(job_id)
        self.token: str | None = None
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._set = client.register_script(_SET)

    @property
    def fence(self) -> Fence:
        if self.token is None:
            raise LeaseLost(f"{self._key} was never acquired")
        return Fence(self.job_id, self.token)

    def acquire(self, *, worker: str = "", kill_at: float = 0) -> bool:
        """Take the lease if it is free; `worker` names the process that may renew it for this run."""
        token = self._acquire(keys=[self._key, fence_key(self.job_id)], args=[self._ttl_ms, worker, repr(kill_at)])
        if not token:
            return False
        self.token = str(int(token))
        return True

    def renew(self) -> bool:
        """Extend the lease; False when it is no longer ours."""
        return bool(self._renew(keys=[self._key], args=["token", self.token or "", self._ttl_ms]))

    def ensure_held(self) -> None:
        """Raise LeaseLost unless the lease is still ours (read live from Redis); call right before a write the
        outside world sees."""
        try:
            self.fence.ensure(self._redis)
        except LeaseLost:
            raise LeaseLost(f"{self._key} is no longer held by token {self.token}") from None

    def note(self, field: str, value: str) -> None:
        """Record a detail of the run on the lease (e.g. the message it runs), for the worker process."""
        if self._set(keys=[self._key], args=[self.token or "", field, value]) == -1:
            raise LeaseLost(f"{self._key} is no longer held by token {self.token}")

    def release(self) -> None:
        if self.token is not None:
            self._release(keys=[self._key], args=[self.token])


def renew_for_worker(client: redis.Redis, job_id: str, worker: str, ttl_seconds: float) -> bool:
    """The worker process's renewal of the lease its work horse took (a horse stuck in C code cannot renew)."""
    script = client.register_script(_RENEW)
    return bool(script(keys=[lease_key(job_id)], args=["worker", worker, int(ttl_seconds * 1000)]))


def release_token(client: redis.Redis, job_id: str, token: str) -> None:
    """Release the lease if it still carries `token` (a worker process cleaning up after its dead horse)."""
    client.register_script(_RELEASE)(keys=[lease_key(job_id)], args=[token])


def is_leased(client: redis.Redis, job_id: str) -> bool:
    return bool(client.exists(lease_key(job_id)))
