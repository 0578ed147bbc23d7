"""Dashboard sign-in sessions kept in Redis; the browser holds only an opaque id in an HttpOnly cookie."""

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import cast

import redis

from bot.github.codehost import HOST as GITHUB_HOST
from service.codehost.local import HOST as LOCAL_HOST
from service.models import Project
from service.sealing import Sealer

OPERATOR = "operator"  # the `source` of a session opened with `copydesk dashboard login-link`
GITHUB = "github"
LOCAL_KIND = "Local"  # the `kind` of the operator's accounts, which own the local code host's projects
ONCE_SEALER_INFO = b"copydesk dashboard one-time value"


@dataclass
class Account:
    """An account (GitHub org or user, or a local account) the signed-in person can see, and their role there."""

    login: str
    kind: str  # "Organization", "User" or LOCAL_KIND
    admin: bool
    installation_id: int | None = None

    @property
    def host(self) -> str:
        """The code host family of the account's projects: local accounts own local ones, the others GitHub's."""
        return LOCAL_HOST if self.kind == LOCAL_KIND else GITHUB_HOST

    def owns(self, project: Project) -> bool:
        """Whether `project` is this account's: the same name and, as names are shared, the same code host."""
        return self.login.lower() == project.account.lower() and self.host == project.host


@dataclass
class Session:
    login: str  # a GitHub login, or "operator"
    source: str  # GITHUB or OPERATOR
    csrf: str
    created_at: float
    seen_at: float
    # When accounts and roles were last confirmed (with GitHub, or for the operator from the local projects); after
    # GitHub failed to answer, set so that the next try comes only a short while later (see bot.dashboard.access).
    checked_at: float = 0.0
    accounts: list = field(default_factory=list)  # Account dicts
    sealed_token: str | None = None  # the user-to-server token, encrypted; GitHub sessions only
    id_hash: str = ""  # the Redis key's part; never the cookie value itself
    max_seconds: float | None = None  # this session's own absolute limit, when shorter than the store's

    def ends_at(self, store_max_seconds: float) -> float:
        """When the session ends, however it is used: the store's absolute limit or its own, if shorter."""
        own = store_max_seconds if self.max_seconds is None else self.max_seconds
        return self.created_at + min(store_max_seconds, own)

    def visible(self) -> list[Account]:
        return [Account(**a) for a in self.accounts]


class SessionStore:
    """Creates, reads (with idle and absolute expiry) and ends sessions, and keeps their one-time values sealed."""

    def __init__(
        self, client: redis.Redis, *, idle_seconds: int, max_seconds: int, seal_key: Callable[[], bytes]
    ) -> None:
        """`seal_key`: the key material one-time values are sealed with, asked for when first needed."""
        self._redis = client
        self.idle_seconds = idle_seconds
        self.max_seconds = max_seconds
        self._seal_key = seal_key
        self._sealer: Sealer | None = None

    def create(
        self,
        *,
        login: str,
        source: str,
        accounts: list[Account],
        sealed_token: str | None = None,
        max_seconds: float | None = None,
    ) -> str:
        """Open a session, ending after `max_seconds` if that is sooner than the store's limit; returns the cookie
        value (shown to the browser only)."""
        session_id = secrets.token_urlsafe(32)
        stamp = time.time()
        session = Session(
            login=login,
            source=source,
            csrf=secrets.token_urlsafe(32),
            created_at=stamp,
            seen_at=stamp,
            checked_at=stamp,
            accounts=[asdict(a) for a in accounts],
            sealed_token=sealed_token,
            id_hash=_digest(session_id),
            max_seconds=max_seconds,
        )
        self._write(session)
        return session_id

    def load(self, session_id: str | None) -> Session | None:
        """The live session for a cookie value, its idle clock restarted; None when unknown or expired."""
        if not session_id or len(session_id) > 100:
            return None
        raw = self._redis.get(_key(_digest(session_id)))
        if raw is None:
            return None
        session = Session(**json.loads(raw))
        stamp = time.time()
        if stamp > session.ends_at(self.max_seconds) or stamp - session.seen_at > self.idle_seconds:
            self.end(session)
            return None
        session.seen_at = stamp
        self._write(session)
        return session

    def live(self, session: Session) -> bool:
        """Whether the session is still signed in (not ended, not past its idle or absolute limit), without
        counting this as a use: long-lived connections ask again."""
        raw = self._redis.get(_key(session.id_hash))
        if raw is None:
            return False
        current = Session(**json.loads(raw))
        stamp = time.time()
        return stamp <= current.ends_at(self.max_seconds) and stamp - current.seen_at <= self.idle_seconds

    def save(self, session: Session) -> None:
        """Write back changed accounts or roles."""
        self._write(session)

    def end(self, session: Session) -> None:
        slots = cast(set[bytes], self._redis.smembers(_once_slots_key(session.id_hash)))
        self._redis.delete(
            _key(session.id_hash),
            _once_slots_key(session.id_hash),
            *(_once_key(session.id_hash, slot.decode()) for slot in slots),
        )

    def keep_once(self, session: Session, slot: str, value: str, ttl_seconds: int) -> None:
        """Hold `value` for this session until `take_once` reads it, or for `ttl_seconds` at most; sealed while it
        waits, so Redis never holds it in plain text. Ending the session drops it."""
        sealed = self._once_sealer().seal(value).decode("ascii")
        slots = _once_slots_key(session.id_hash)
        with self._redis.pipeline() as pipe:
            # Each value its own key and expiry: a newer value never shortens the wait of one kept earlier.
            pipe.set(_once_key(session.id_hash, slot), sealed, ex=ttl_seconds)
            # The slot names only (nothing secret), for `end`; they outlive every value, and the session too.
            pipe.sadd(slots, slot)
            pipe.expire(slots, max(ttl_seconds, self.max_seconds))
            pipe.execute()

    def take_once(self, session: Session, slot: str) -> str | None:
        """The value kept in `slot`, removed in the same step, so that only one request ever gets it."""
        with self._redis.pipeline() as pipe:
            pipe.getdel(_once_key(session.id_hash, slot))  # one command: two tabs cannot both read it
            pipe.srem(_once_slots_key(session.id_hash), slot)
            sealed, _removed = pipe.execute()
        # None too when it cannot be opened (sealed with a key since replaced, or altered): it is not shown.
        return self._once_sealer().unseal(sealed) if sealed else None

    def _once_sealer(self) -> Sealer:
        if self._sealer is None:
            self._sealer = Sealer(self._seal_key(), ONCE_SEALER_INFO)
        return self._sealer

    def _write(self, session: Session) -> None:
        left = int(min(self.idle_seconds, session.ends_at(self.max_seconds) - time.time()))
        if left <= 0:
            self._redis.delete(_key(session.id_hash))
            return
        self._redis.set(_key(session.id_hash), json.dumps(asdict(session)), ex=left)


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _key(id_hash: str) -> str:
    return f"cd:dash:session:{id_hash}"


def _once_key(id_hash: str, slot: str) -> str:
    # Apart from the session record, which every request rewrites: a stale rewrite cannot bring a taken value back.
    return f"cd:dash:once:{id_hash}:{slot}"


def _once_slots_key(id_hash: str) -> str:
    return f"cd:dash:once-slots:{id_hash}"
