"""API keys: `cdk_` + base62, shown once, kept as a SHA-256 hash, checked in constant time; scoped, read-only or
read-write, expiring, counted and audited."""

import hashlib
import re
import secrets
import string
from dataclasses import dataclass
from datetime import timedelta

from service.clock import iso, now, now_iso
from service.errors import InvalidRequest, RateLimited, Unauthorized
from service.models import ApiKey, KeyAccess, KeyEvent
from service.store.apikeys import ApiKeyStore, Guard, KeyCheck, use_stamps
from service.store.codec import load

PREFIX = "cdk_"
_ALPHABET = string.digits + string.ascii_letters
_LOOKUP_LEN = 12  # public part: the key id is `key_` + these characters
_SECRET_LEN = 32
_FORMAT = re.compile(rf"^{PREFIX}[0-9A-Za-z]{{{_LOOKUP_LEN + _SECRET_LEN}}}$")
EXPIRY_DAYS = (7, 30, 60, 90)  # or None: never
DEFAULT_EXPIRY_DAYS = 90
NEW_KEYS_PER_HOUR = 10  # per account
NAME_MAX = 100


def _random(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def _digest(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def _bearer(authorization: str | None) -> str:
    """The key an `Authorization: Bearer` header carries, stripped; "" for any other header."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def key_id_of(plaintext: str) -> str | None:
    """The public id embedded in a well-formed key, or None for anything else."""
    if not _FORMAT.match(plaintext):
        return None
    return "key_" + plaintext[len(PREFIX) : len(PREFIX) + _LOOKUP_LEN]


def expiry_days(text: str | None) -> int | None:
    """Read an expiry choice ("7", "30", "60", "90" or "never"); empty means the default."""
    text = (text or "").strip().lower()
    if not text:
        return DEFAULT_EXPIRY_DAYS
    if text == "never":
        return None
    if text.isdigit() and int(text) in EXPIRY_DAYS:
        return int(text)
    raise InvalidRequest(f"expiry must be one of {', '.join(map(str, EXPIRY_DAYS))} (days) or never", field="expiry")


@dataclass(frozen=True)
class Seen:
    """A presented key and another record (as stored; None: missing) as this process last read them, and the guard
    that confirms, in a create script, that the key still passes and neither record changed since."""

    key: ApiKey
    record: bytes | None
    guard: Guard


@dataclass(frozen=True)
class _Read:
    key_record: bytes
    key: ApiKey
    record: bytes | None


class ApiKeys:
    """Creates, checks and revokes API keys."""

    SEEN_LIMIT = 1024  # (key, record) pairs `guarded` remembers; the oldest read is forgotten first

    def __init__(self, store: ApiKeyStore) -> None:
        self._store = store
        # Records as read, never trusted as they are: every create checks them again in its script (Guard), so a
        # revocation or a change still holds from the next request on.
        self._seen: dict[tuple[str, str], _Read] = {}

    def create(
        self,
        *,
        account: str,
        name: str = "",
        projects: list[str] | None = None,
        access: KeyAccess = KeyAccess.READ_WRITE,
        expires_in_days: int | None = DEFAULT_EXPIRY_DAYS,
        created_by: str = "operator",
        host: str | None = None,
    ) -> tuple[ApiKey, str]:
        """Make a key for `account` on code host family `host`; returns the record and the plaintext, which is never
        available again. At most NEW_KEYS_PER_HOUR per account (RateLimited past it); the creation is audited."""
        name = name.strip()
        if len(name) > NAME_MAX or not name.isprintable():
            raise InvalidRequest(f"a key's name is at most {NAME_MAX} printable characters", field="name")
        if expires_in_days is not None and expires_in_days not in EXPIRY_DAYS:
            raise InvalidRequest(f"expiry must be one of {EXPIRY_DAYS} days or never", field="expiry")
        lookup = _random(_LOOKUP_LEN)
        # Counted per code host family too, so a same-named account on the other host cannot use up this one's.
        scope = account if host is None else f"{host}:{account}"
        wait = self._store.claim_creation(scope, "key_" + lookup, limit=NEW_KEYS_PER_HOUR, window_seconds=3600)
        if wait:
            raise RateLimited(
                f"account {account} may create {NEW_KEYS_PER_HOUR} API keys per hour; "
                f"try again in {int(wait) // 60 + 1} minutes",
                retry_after=int(wait),
            )
        plaintext = PREFIX + lookup + _random(_SECRET_LEN)
        created = now()
        key = ApiKey(
            id="key_" + lookup,
            account=account,
            hash=_digest(plaintext),
            created_at=iso(created),
            name=name,
            projects=list(projects or []),
            access=KeyAccess(access),
            created_by=created_by,
            host=host,
            expires_at=iso(created + timedelta(days=expires_in_days)) if expires_in_days else None,
        )
        self._store.add(
            key,
            KeyEvent(
                at=key.created_at, account=account, actor=created_by, action="created", key_id=key.id, key_name=name
            ),
        )
        return key, plaintext

    def authenticate(self, authorization: str | None) -> ApiKey:
        """The live key named by an `Authorization: Bearer` header, or Unauthorized."""
        return self.authorize(authorization, [])[0]

    def authorize(self, authorization: str | None, reads: list[str]) -> tuple[ApiKey, list]:
        """The live key named by an `Authorization: Bearer` header (or Unauthorized), its use counted, and the
        JSON records named by `reads`, decoded (None where missing), in one round trip."""
        token = _bearer(authorization)
        if not token:
            raise Unauthorized("send an API key as `Authorization: Bearer cdk_...`")
        key_id = key_id_of(token)
        if key_id is None:
            raise Unauthorized("the API key is not valid or has been revoked")
        check, key, records = self._store.authorize(key_id, _digest(token), reads)
        if check is KeyCheck.EXPIRED:
            raise Unauthorized("the API key has expired; create a new one on the dashboard's API keys page")
        if key is None:
            raise Unauthorized("the API key is not valid or has been revoked")
        return key, records

    def guarded(self, authorization: str | None, record_key: str) -> Seen | None:
        """The key an `Authorization: Bearer` header names and the record at `record_key`, as this process last
        read them (read now, without counting a use, the first time), with their guard; None for a header or key
        that does not pass (`authorize` says why)."""
        token = _bearer(authorization)
        key_id = key_id_of(token)
        if key_id is None:
            return None
        digest = _digest(token)
        read = self._seen.get((key_id, record_key))
        if read is None:
            check, key_record, record = self._store.records(key_id, digest, record_key)
            if check is not KeyCheck.OK:
                return None
            read = self._remember(key_id, record_key, key_record, record)
        stamp, cutoff = use_stamps()
        guard = Guard(key_id, digest, stamp, cutoff, read.key_record, record_key, read.record or b"")
        return Seen(read.key, read.record, guard)

    def saw(self, guard: Guard, records: tuple[bytes, bytes | None] | None) -> None:
        """What a guard that did not hold found: the key's record and the other record as they are now, which the
        next `guarded` starts from (None: the key did not pass; both are read again next time)."""
        self._seen.pop((guard.key_id, guard.record_key), None)
        if records is not None:
            self._remember(guard.key_id, guard.record_key, *records)

    def _remember(self, key_id: str, record_key: str, key_record: bytes, record: bytes | None) -> _Read:
        if len(self._seen) >= self.SEEN_LIMIT:
            del self._seen[next(iter(self._seen))]
        read = _Read(key_record, load(ApiKey, key_record), record)
        self._seen[(key_id, record_key)] = read
        return read

    def live(self, key_id: str) -> bool:
        """Whether the key still works (not revoked, not expired): long-lived connections ask again."""
        key = self.find(key_id)
        return key is not None and not key.revoked_at and not key.expired(now_iso())

    def find(self, key_id: str) -> ApiKey | None:
        return self._store.find(key_id) if key_id.startswith("key_") else None

    def revoke(self, key_id: str, *, by: str = "operator") -> ApiKey:
        """Revoke a key at once; `by` is recorded in the audit list."""
        return self._store.revoke(key_id, by=by)

    def all(self) -> list[ApiKey]:
        return self._store.all()

    def delete(self, key_id: str) -> None:
        """Delete a key and its counters for good (revoke keeps it, for the audit)."""
        self._store.delete(key_id)

    def forget_audit(self, account: str) -> None:
        self._store.forget_audit(account)

    def of_account(self, account: str, host: str | None = None) -> list[ApiKey]:
        """The account's keys, newest first; given `host`, only those that work on that code host family."""
        keys = (k for k in self._store.all() if k.account == account and (host is None or k.works_on(host)))
        return sorted(keys, key=lambda k: k.created_at, reverse=True)

    def audit(self, account: str, limit: int = 100) -> list[KeyEvent]:
        """Who created or revoked which of the account's keys, and when; newest first."""
        return self._store.audit(account, limit)
