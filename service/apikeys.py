"""API keys: `cdk_` + base62, shown once, kept as a SHA-256 hash, checked in constant time."""

import hashlib
import hmac
import re
import secrets
import string

from service.clock import now_iso
from service.errors import Unauthorized
from service.models import ApiKey
from service.store.apikeys import ApiKeyStore

PREFIX = "cdk_"
_ALPHABET = string.digits + string.ascii_letters
_LOOKUP_LEN = 12  # public part: the key id is `key_` + these characters
_SECRET_LEN = 32
_FORMAT = re.compile(rf"^{PREFIX}[0-9A-Za-z]{{{_LOOKUP_LEN + _SECRET_LEN}}}$")


def _random(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def _digest(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def key_id_of(plaintext: str) -> str | None:
    """The public id embedded in a well-formed key, or None for anything else."""
    if not _FORMAT.match(plaintext):
        return None
    return "key_" + plaintext[len(PREFIX):len(PREFIX) + _LOOKUP_LEN]


class ApiKeys:
    """Creates, checks and revokes API keys."""

    def __init__(self, store: ApiKeyStore) -> None:
        self._store = store

    def create(self, *, account: str, name: str = "", projects: list[str] | None = None) -> tuple[ApiKey, str]:
        """Make a key; returns the record and the plaintext, which is never available again."""
        lookup = _random(_LOOKUP_LEN)
        plaintext = PREFIX + lookup + _random(_SECRET_LEN)
        key = ApiKey(id="key_" + lookup, account=account, hash=_digest(plaintext), created_at=now_iso(),
                     name=name, projects=list(projects or []))
        self._store.add(key)
        return key, plaintext

    def authenticate(self, authorization: str | None) -> ApiKey:
        """The live key named by an `Authorization: Bearer` header, or Unauthorized."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("send an API key as `Authorization: Bearer cdk_...`")
        token = token.strip()
        key_id = key_id_of(token)
        key = self._store.find(key_id) if key_id else None
        # Compare even when the id is unknown, so timing does not tell which ids exist.
        expected = key.hash if key else _digest("")
        if not hmac.compare_digest(expected, _digest(token)) or key is None or key.revoked_at:
            raise Unauthorized("the API key is not valid or has been revoked")
        self._store.touch(key)
        return key

    def revoke(self, key_id: str) -> ApiKey:
        return self._store.revoke(key_id)

    def all(self) -> list[ApiKey]:
        return self._store.all()
