"""Seals values kept in Redis (installation tokens) so they are never stored in plain text."""

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

INFO = b"copydesk token cache"


class SecretBox:
    """Fernet (AES-CBC + HMAC) with a key derived from the App's private key, so every process derives the same one."""

    def __init__(self, private_key_pem: str) -> None:
        key = serialization.load_pem_private_key(private_key_pem.encode("ascii"), password=None)
        # The canonical DER encoding, so a key read from a file and the same key from an env var agree.
        material = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption())
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=INFO).derive(material)
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
        return "SecretBox(<key hidden>)"
