"""API keys at rest: a SHA-256 hash and a public id, never the key itself."""

import redis

from service.clock import now, now_iso, parse_iso
from service.errors import KeyNotFound
from service.models import ApiKey
from service.store.codec import dump, load

_INDEX = "cd:apikeys"
# lastUsedAt is refreshed at most this often, so a busy key does not cost a write per request.
_LAST_USED_RESOLUTION_SECONDS = 60


def _key(key_id: str) -> str:
    return f"cd:apikey:{key_id}"


def _last_used_key(key_id: str) -> str:
    # Kept apart from the record, so writing it can never undo a revocation made meanwhile.
    return f"cd:apikey:{key_id}:last-used"


class ApiKeyStore:
    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def add(self, key: ApiKey) -> None:
        with self._redis.pipeline() as pipe:
            pipe.set(_key(key.id), dump(key))
            pipe.zadd(_INDEX, {key.id: 0})
            pipe.execute()

    def find(self, key_id: str) -> ApiKey | None:
        return self._with_last_used([key_id])[0]

    def all(self) -> list[ApiKey]:
        ids = [i.decode() for i in self._redis.zrangebylex(_INDEX, "-", "+")]
        return [key for key in self._with_last_used(ids) if key is not None]

    def _with_last_used(self, ids: list[str]) -> list[ApiKey | None]:
        if not ids:
            return []
        raws = self._redis.mget([k for i in ids for k in (_key(i), _last_used_key(i))])
        keys = []
        for raw, last_used in zip(raws[::2], raws[1::2]):
            key = load(ApiKey, raw)
            if key is not None and last_used is not None:
                key.last_used_at = last_used.decode()
            keys.append(key)
        return keys

    def revoke(self, key_id: str) -> ApiKey:
        """Mark a key revoked; it stops working at once. Revoking twice is harmless."""
        key = self.find(key_id)
        if key is None:
            raise KeyNotFound(f"no API key {key_id}")
        if not key.revoked_at:
            key.revoked_at = now_iso()
            stored = load(ApiKey, self._redis.get(_key(key.id)))
            stored.revoked_at = key.revoked_at
            self._redis.set(_key(key.id), dump(stored))
        return key

    def touch(self, key: ApiKey) -> None:
        """Record that the key was just used."""
        if key.last_used_at and (now() - parse_iso(key.last_used_at)).total_seconds() < _LAST_USED_RESOLUTION_SECONDS:
            return
        key.last_used_at = now_iso()
        self._redis.set(_last_used_key(key.id), key.last_used_at)
