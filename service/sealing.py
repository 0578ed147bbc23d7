"""Seals values kept in Redis (webhook secrets, installation tokens) so they are never stored in plain text."""

import base64
import os
import secrets
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

KEY_FILE = "secret.key"


class Sealer:
    """Fernet (AES-CBC + HMAC) with a key derived from `material`, so every process with it derives the same one."""

    def __init__(self, material: bytes, info: bytes) -> None:
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(material)
        self._fernet = Fernet(base64.urlsafe_b64encode(derived))

    def seal(self, value: str) -> bytes:
        """Encrypt and authenticate `value`."""
        return self._fernet.encrypt(value.encode("utf-8"))

    def unseal(self, sealed: bytes | str) -> str | None:
        """The value inside `sealed`, or None when it was sealed with another key (a rotated one) or altered."""
        try:
            return self._fernet.decrypt(sealed).decode("utf-8")
        except InvalidToken:
            return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(<key hidden>)"


def operator_key(secret_key: str | None, data_dir: Path) -> bytes:
    """The operator's `COPYDESK_SECRET_KEY`, else a random key kept (mode 0600) in the data directory."""
    if secret_key:
        return secret_key.encode("utf-8")
    path = data_dir / KEY_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process made it first
        else:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_urlsafe(32))
    return path.read_bytes().strip()
