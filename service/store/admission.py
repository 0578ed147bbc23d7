"""A new job's checks and writes in one round trip: the account's monthly cap, the idempotency claim and the
project's hourly quota, then every write of the job, in one Lua script."""

import enum
from dataclasses import dataclass

import redis

from service.store.apikeys import GUARD, Guard
from service.store.commands import RUN_RECORDED, CommandRecorder
from service.store.replies import text

# KEYS: 1 cap, 2 this month's usage totals, 3 idempotency record, 4 quota counter, 5 the cap and 6 the totals of
# before usage was keyed by code host (read for either host, service.store.usage; unused ones are still named);
# with a guard, 7-10 its keys (service.store.apikeys.Guard).
# ARGV: 1 check the cap (1/0), 2 idempotency (1/0), 3 body hash, 4 job id, 5 idempotency TTL, 6 quota limit
# (0: none), 7 quota counter TTL, 8 the recorded writes as JSON and 9... their binary arguments (RUN_RECORDED);
# with a guard, its five arguments last.
# Checked in the order the API states them: the caller's key first (the guard: the API's create checks the key in
# here rather than in a round trip of its own), then a capped account is refused; a retry of a create that
# happened already uses up no quota.
_ADMIT = (
    RUN_RECORDED
    + GUARD
    + """
if #KEYS > 6 then
  local stale = guard(7, #ARGV - 4)
  if stale then return stale end
end
local function billed(totals)
  return (tonumber(totals[1]) or 0) + (tonumber(totals[2]) or 0) - (tonumber(totals[3]) or 0)
end
if ARGV[1] == '1' then
  local cap = redis.call('GET', KEYS[1])
  if not cap then cap = redis.call('GET', KEYS[5]) end
  if cap and cap ~= '' then
    local fields = {'inputTokens', 'outputTokens', 'unbilledTokens'}
    local used = billed(redis.call('HMGET', KEYS[2], unpack(fields)))
      + billed(redis.call('HMGET', KEYS[6], unpack(fields)))
    if used >= tonumber(cap) then return {'capped', used, tonumber(cap)} end
  end
end
if ARGV[2] == '1' then
  local earlier = redis.call('HMGET', KEYS[3], 'hash', 'job')
  if earlier[2] then return {'replay', earlier[2], earlier[1]} end
end
local used = 0
if tonumber(ARGV[6]) > 0 then
  used = redis.call('INCR', KEYS[4])
  if used == 1 then redis.call('EXPIRE', KEYS[4], ARGV[7]) end
  if used > tonumber(ARGV[6]) then
    redis.call('DECR', KEYS[4])
    return {'limited', used - 1}
  end
end
run_recorded(8)
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[3], 'hash', ARGV[3], 'job', ARGV[4])
  redis.call('EXPIRE', KEYS[3], ARGV[5])
end
return {'created', used}
"""
)
_UNUSED = "cd:unused"  # named for a check that is off; the script never reads it


class Verdict(enum.Enum):
    CREATED = "created"
    REPLAY = "replay"  # an earlier create with the same idempotency claim made `earlier_job`
    CAPPED = "capped"  # the account used `used` of its monthly `cap` tokens
    LIMITED = "limited"  # the project used `used` of its hourly quota
    STALE = "stale"  # the guard's key does not pass, or its records changed (`records`: as they are now)


@dataclass(frozen=True)
class Gate:
    """The checks a create must pass before its writes: the account's cap and the project's quota counter."""

    cap_key: str | None = None
    usage_key: str | None = None
    legacy_cap_key: str | None = None
    legacy_usage_key: str | None = None
    quota_key: str | None = None
    quota_limit: int = 0
    quota_ttl: int = 0


@dataclass(frozen=True)
class Idempotency:
    key: str
    body_hash: str
    ttl: int


@dataclass(frozen=True)
class Admission:
    verdict: Verdict
    used: int = 0
    cap: int = 0
    earlier_job: str | None = None
    earlier_hash: str | None = None
    records: tuple[bytes, bytes | None] | None = None  # STALE: the guard's key and record now; None: key refused


class Admitter:
    """Runs a create's checks and recorded writes as one script."""

    def __init__(self, client: redis.Redis) -> None:
        self._script = client.register_script(_ADMIT)

    def admit(
        self,
        job_id: str,
        writes: CommandRecorder,
        gate: Gate | None,
        idempotency: Idempotency | None,
        guard: Guard | None = None,
    ) -> Admission:
        """Check, then write; nothing is written unless the verdict is CREATED (a use of the guard's key is
        counted unless the verdict is STALE)."""
        gate = gate or Gate()
        check_cap = gate.cap_key is not None and gate.usage_key is not None
        keys = [
            gate.cap_key or _UNUSED,
            gate.usage_key or _UNUSED,
            idempotency.key if idempotency else _UNUSED,
            gate.quota_key or _UNUSED,
            gate.legacy_cap_key or _UNUSED,
            gate.legacy_usage_key or _UNUSED,
        ]
        args = [
            int(check_cap),
            int(idempotency is not None),
            idempotency.body_hash if idempotency else "",
            job_id,
            idempotency.ttl if idempotency else 0,
            gate.quota_limit if gate.quota_key else 0,
            gate.quota_ttl,
            *writes.encoded(),
        ]
        if guard is not None:
            keys += guard.keys()
            args += guard.args()
        reply = self._script(keys=keys, args=args)
        verdict = Verdict(text(reply[0]))
        if verdict is Verdict.STALE:
            return Admission(verdict, records=(reply[1], reply[2]) if len(reply) > 1 else None)
        if verdict is Verdict.REPLAY:
            return Admission(verdict, earlier_job=text(reply[1]), earlier_hash=text(reply[2] or b""))
        if verdict is Verdict.CAPPED:
            return Admission(verdict, used=int(reply[1]), cap=int(reply[2]))
        return Admission(verdict, used=int(reply[1]))
