"""Seals values kept in Redis (installation tokens) so they are never stored in plain text."""

from cryptography.hazmat.primitives import serialization

from bot.github import privatekey
from service.sealing import Sealer

INFO = b"copydesk token cache"


class SecretBox(Sealer):
    """A Sealer whose key is derived from the App's private key, so every process derives the same one."""

    def __init__(self, private_key_pem: str, info: bytes = INFO) -> None:
        """`info` separates the keys of different uses (token cache, dashboard sessions)."""
        key = privatekey.load(private_key_pem.encode("ascii"))
        # The canonical DER encoding, so a key read from a file and the same key from an env var agree.
        material = key.private_bytes(
            serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        super().__init__(material, info)

    def __repr__(self) -> str:
        return "SecretBox(<key hidden>)"
