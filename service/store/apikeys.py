"""API keys at rest: a SHA-256 hash and a public id, never the key itself; their use counts and audit list."""

import enum
import functools
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import redis

from service import fastjson
from service.clock import iso, now, now_iso
from service.errors import KeyNotFound
from service.models import ApiKey, KeyEvent
from service.store.codec import dump, load
from service.store.replies import text
from service.store.schema import stamp_new

log = logging.getLogger(__name__)

_INDEX = "cd:apikeys"
# lastUsedAt is refreshed at most this often, so a busy key does not cost a write per request.
_LAST_USED_RESOLUTION_SECONDS = 60
AUDIT_LENGTH = 500  # audit lines kept per account, newest first
# A sliding window of creation times: count the last hour's, refuse past the limit, else record this one.
_CLAIM = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1] - ARGV[2])
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, oldest[2]}
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {1, ARGV[1]}
"""


# The key check and the use count, as Lua functions the scripts below and the create script (service.store.admission)
# share. The digests compared are SHA-256 of the presented key and of the real one: a caller cannot steer a
# digest's bytes, so this comparison's timing tells nothing about the key. `checked_key` reads the key's record
# and gives it with the word for a key that may not be used (KeyCheck), nil for one that may; `count_use` counts a
# use and refreshes lastUsedAt at most once a minute, and returns both.
KEY_CHECK = """
local function refusal_of(raw, digest, stamp)
  if not raw then return 'unknown' end
  local key = cjson.decode(raw)
  if key['hash'] ~= digest then return 'unknown' end
  local revoked = key['revoked_at']
  if revoked and revoked ~= cjson.null and revoked ~= '' then return 'revoked' end
  local expires = key['expires_at']
  if expires and expires ~= cjson.null and expires <= stamp then return 'expired' end
  return nil
end
local function checked_key(name, digest, stamp)
  local raw = redis.call('GET', name)
  return raw, refusal_of(raw, digest, stamp)
end
local function count_use(last_key, uses_key, stamp, cutoff)
  local uses = redis.call('INCR', uses_key)
  local last = redis.call('GET', last_key)
  if not last or last < cutoff then
    last = stamp
    redis.call('SET', last_key, last)
  end
  return last, uses
end
"""

# Checks a presented key, counts its use and reads the records the request needs, in one round trip. Nothing a
# process remembers about a key is trusted without a check in Redis (a create's guard, below, checks it in the
# create script), so a revocation holds from the next request on. A key that passes gets one JSON array back,
# [lastUsedAt, uses, the key's record, the records read], parsed at once rather than as so many replies; any other
# key gets a word (KeyCheck). The reply is put together by one table.concat: joining it and then bracketing it
# copied every record a second time, an eighth of the script's time in Redis.
_AUTHORIZE = (
    KEY_CHECK
    + """
local raw, refusal = checked_key(KEYS[1], ARGV[1], ARGV[2])
if refusal then return refusal end
local last, uses
if ARGV[4] == '1' then
  last, uses = count_use(KEYS[2], KEYS[3], ARGV[2], ARGV[3])
else
  last = redis.call('GET', KEYS[2]) or false
  uses = tonumber(redis.call('GET', KEYS[3]) or '0')
end
local reply = {'[', last and cjson.encode(last) or 'null', ',', string.format('%d', uses), ',', raw}
for i = 4, #KEYS do
  reply[#reply + 1] = ','
  reply[#reply + 1] = redis.call('GET', KEYS[i]) or 'null'
end
reply[#reply + 1] = ']'
return table.concat(reply)
"""
)

# The key's record and one other record as stored, for a key that passes the check; no use is counted. What a
# create's guard (below) is then built from.
_RECORDS = (
    KEY_CHECK
    + """
local raw, refusal = checked_key(KEYS[1], ARGV[1], ARGV[2])
if refusal then return refusal end
return {raw, redis.call('GET', KEYS[2])}
"""
)

# A create's key check inside its create script (service.store.admission), against records the process read before:
# `guard(k, a)` reads the key check's keys from KEYS[k] on (the key, its lastUsedAt, its uses, the other record)
# and its arguments from ARGV[a] on (digest, stamp, cutoff, the key's record and the other record as read). nil:
# the key passes and both records are byte for byte as read, so every check the process made on them holds now,
# and the use is counted. Otherwise {'stale'} (the key does not pass) or {'stale', key, record} as they are now,
# and nothing was counted or written.
GUARD = (
    KEY_CHECK
    + """
local function guard(k, a)
  local raw, refusal = checked_key(KEYS[k], ARGV[a], ARGV[a + 1])
  if refusal then return {'stale'} end
  local record = redis.call('GET', KEYS[k + 3])
  if raw ~= ARGV[a + 3] or record ~= ARGV[a + 4] then return {'stale', raw, record} end
  count_use(KEYS[k + 1], KEYS[k + 2], ARGV[a + 1], ARGV[a + 2])
  return nil
end
"""
)


@dataclass(frozen=True)
class Guard:
    """What GUARD checks: key `key_id` against the presented key's `digest` at `stamp`, and that the key's record
    and the record at `record_key` are still `key_record` and `record` (b"" for a record not read yet)."""

    key_id: str
    digest: str
    stamp: str
    cutoff: str  # lastUsedAt is refreshed when older (use_stamps)
    key_record: bytes
    record_key: str
    record: bytes

    def keys(self) -> list[str]:
        return [_key(self.key_id), _last_used_key(self.key_id), _uses_key(self.key_id), self.record_key]

    def args(self) -> list:
        return [self.digest, self.stamp, self.cutoff, self.key_record, self.record]


class KeyCheck(enum.Enum):
    """What the key check found about a presented key."""

    OK = "ok"
    UNKNOWN = "unknown"  # no such key, or the secret part does not match
    REVOKED = "revoked"
    EXPIRED = "expired"


def _key(key_id: str) -> str:
    return f"cd:apikey:{key_id}"


def _last_used_key(key_id: str) -> str:
    # Kept apart from the record, so writing it can never undo a revocation made meanwhile.
    return f"cd:apikey:{key_id}:last-used"


def _uses_key(key_id: str) -> str:
    return f"cd:apikey:{key_id}:uses"


def _created_key(account: str) -> str:
    return f"cd:apikeys:created:{account}"


def _audit_key(account: str) -> str:
    return f"cd:apikeys:audit:{account}"


def use_stamps(at_ns: int | None = None) -> tuple[str, str]:
    """The timestamp of a key's use at `at_ns` (epoch nanoseconds; now by default), as `service.clock.iso` writes
    it, and the cutoff before which its lastUsedAt is refreshed: the same whole second a minute earlier."""
    second, rest = divmod(time.time_ns() if at_ns is None else at_ns, 1_000_000_000)
    prefix, cutoff = _second_stamps(second)
    return f"{prefix}.{rest // 1_000_000:03d}Z", cutoff


@functools.lru_cache(maxsize=4)
def _second_stamps(second: int) -> tuple[str, str]:
    # Worked out once a second: every API request stamps a key's use, and formatting two datetimes cost more than
    # the rest of the key check's Python. A cutoff at whole seconds still refreshes lastUsedAt at most once a
    # minute (at most a second later than one to the millisecond would).
    cutoff = iso(datetime.fromtimestamp(second - _LAST_USED_RESOLUTION_SECONDS, UTC))
    return iso(datetime.fromtimestamp(second, UTC))[: -len(".000Z")], cutoff


class ApiKeyStore:
    def __init__(self, client: redis.Redis) -> None:
        self._redis = client
        self._claim = client.register_script(_CLAIM)
        self._authorize = client.register_script(_AUTHORIZE)
        self._records = client.register_script(_RECORDS)

    def authorize(self, key_id: str, digest: str, reads: list[str]) -> tuple[KeyCheck, ApiKey | None, list]:
        """Check the key `key_id` against the presented key's `digest` (revocation, expiry), count one use and
        read the JSON records named by `reads`, all in one round trip. The records come back decoded (dicts, None
        where missing), and all None unless the check is OK."""
        stamp, cutoff = use_stamps()
        keys = [_key(key_id), _last_used_key(key_id), _uses_key(key_id), *reads]
        try:
            reply = self._authorize(keys=keys, args=[digest, stamp, cutoff, 1])
        except (redis.ReadOnlyError, redis.ResponseError, redis.ConnectionError) as exc:
            # A demoted primary answers READONLY, or NOREPLICAS (a ConnectionError with a Sentinel URL, which then
            # asks the sentinels again); a real outage fails the second try too.
            if type(exc) is redis.ResponseError and not str(exc).startswith("NOREPLICAS"):
                raise
            # Counting the use is bookkeeping, not the caller's write: while Redis takes no writes (a failover),
            # the key is still checked and the request's reads still served.
            log.debug("could not count a use of key %s: %s", key_id, exc)
            reply = self._authorize(keys=keys, args=[digest, stamp, cutoff, 0])
        if not reply.startswith(b"["):
            return KeyCheck(text(reply)), None, [None] * len(reads)
        last_used, uses, record, *found = fastjson.loads(reply)
        key = ApiKey.from_dict(record)
        key.last_used_at, key.use_count = last_used, uses
        return KeyCheck.OK, key, found

    def records(self, key_id: str, digest: str, record_key: str) -> tuple[KeyCheck, bytes, bytes | None]:
        """The key's record and the record at `record_key` as stored (None: missing), when the key passes the check
        (no use is counted); else the check's word and empty records."""
        reply = self._records(keys=[_key(key_id), record_key], args=[digest, use_stamps()[0]])
        if not isinstance(reply, list):
            return KeyCheck(text(reply)), b"", None
        return KeyCheck.OK, reply[0], reply[1]

    def claim_creation(self, account: str, key_id: str, *, limit: int, window_seconds: int) -> float:
        """Record a new key of `account` if fewer than `limit` were made in the last window; else return the
        seconds until one more may be made (0 when this one was recorded)."""
        stamp = now().timestamp()
        allowed, oldest = self._claim(keys=[_created_key(account)], args=[stamp, window_seconds, limit, key_id])
        return 0.0 if allowed else max(1.0, float(oldest) + window_seconds - stamp)

    def add(self, key: ApiKey, event: KeyEvent) -> None:
        """Store a new key and its audit line together."""
        stamp_new(self._redis)  # the first key of a new Redis records the schema version
        with self._redis.pipeline() as pipe:
            pipe.set(_key(key.id), dump(key))
            pipe.zadd(_INDEX, {key.id: 0})
            self._audit(pipe, event)
            pipe.execute()

    def find(self, key_id: str) -> ApiKey | None:
        return self._with_usage([key_id])[0]

    def all(self) -> list[ApiKey]:
        ids = [text(i) for i in self._redis.zrangebylex(_INDEX, "-", "+")]
        return [key for key in self._with_usage(ids) if key is not None]

    def _with_usage(self, ids: list[str]) -> list[ApiKey | None]:
        if not ids:
            return []
        raws = self._redis.mget([k for i in ids for k in (_key(i), _last_used_key(i), _uses_key(i))])
        keys = []
        for raw, last_used, uses in zip(raws[::3], raws[1::3], raws[2::3], strict=True):
            key = load(ApiKey, raw)
            if key is not None:
                key.last_used_at = text(last_used) if last_used is not None else key.last_used_at
                key.use_count = int(uses or 0)
            keys.append(key)
        return keys

    def revoke(self, key_id: str, *, by: str = "operator") -> ApiKey:
        """Mark a key revoked; it stops working at once. Revoking twice is harmless (and audited once)."""
        key = self.find(key_id)
        if key is None:
            raise KeyNotFound(f"no API key {key_id}")
        if not key.revoked_at:
            key.revoked_at, key.revoked_by = now_iso(), by
            stored = load(ApiKey, self._redis.get(_key(key.id)))
            stored.revoked_at, stored.revoked_by = key.revoked_at, by
            with self._redis.pipeline() as pipe:
                pipe.set(_key(key.id), dump(stored))
                self._audit(
                    pipe,
                    KeyEvent(
                        at=key.revoked_at,
                        account=key.account,
                        actor=by,
                        action="revoked",
                        key_id=key.id,
                        key_name=key.name,
                    ),
                )
                pipe.execute()
        return key

    def delete(self, key_id: str) -> None:
        """Forget a key for good, with its use counters (an account's purge; revoking keeps the record)."""
        with self._redis.pipeline() as pipe:
            pipe.delete(_key(key_id), _last_used_key(key_id), _uses_key(key_id))
            pipe.zrem(_INDEX, key_id)
            pipe.execute()

    def forget_audit(self, account: str) -> None:
        """Drop the account's audit list (an account's purge, once it has no keys left)."""
        self._redis.delete(_audit_key(account))

    def audit(self, account: str, limit: int = 100) -> list[KeyEvent]:
        """The account's key events, newest first."""
        return [load(KeyEvent, raw) for raw in self._redis.lrange(_audit_key(account), 0, limit - 1)]

    @staticmethod
    def _audit(pipe, event: KeyEvent) -> None:
        pipe.lpush(_audit_key(event.account), dump(event))
        pipe.ltrim(_audit_key(event.account), 0, AUDIT_LENGTH - 1)
