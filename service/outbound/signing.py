"""Standard Webhooks signatures: `whsec_` secrets and `v1,` HMAC-SHA256 signatures of `id.timestamp.body`."""

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"


def new_secret() -> str:
    """A fresh signing secret: `whsec_` + base64 of 32 random bytes."""
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def signature(secret: str, msg_id: str, timestamp: int, body: str) -> str:
    """The `v1,<base64>` signature of one message under one secret."""
    key = base64.b64decode(secret.removeprefix(PREFIX))
    digest = hmac.new(key, f"{msg_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def headers(secrets_: list[str], msg_id: str, timestamp: int, body: str) -> dict[str, str]:
    """The three Standard Webhooks headers; one signature per secret (two while a rotated one is still valid)."""
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signature(s, msg_id, timestamp, body) for s in secrets_),
    }
