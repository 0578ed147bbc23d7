"""The test GitHub App: its id, slug, RSA key pair, webhook secret and OAuth client credentials."""

import secrets
import time
from dataclasses import dataclass, field
from functools import cached_property

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

DEFAULT_PERMISSIONS = {
    "contents": "write",
    "pull_requests": "write",
    "issues": "write",
    "metadata": "read",
    "checks": "read",
    "statuses": "read",
}
DEFAULT_EVENTS = [
    "issue_comment",
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
    "check_run",
    "check_suite",
    "status",
]


@dataclass(frozen=True)
class TestApp:
    """A registered GitHub App as its owner sees it on the App's settings page."""

    __test__ = False  # not a pytest test class

    id: int
    slug: str
    name: str
    private_key_pem: str
    webhook_secret: str
    client_id: str
    client_secret: str
    owner: str = "copydesk-dev"
    permissions: dict = field(default_factory=lambda: dict(DEFAULT_PERMISSIONS))
    events: list = field(default_factory=lambda: list(DEFAULT_EVENTS))

    @classmethod
    def generate(cls, app_id: int = 424242, slug: str = "copydesk-test") -> "TestApp":
        """A new App with a fresh 2048-bit RSA key and random secrets."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        ).decode()
        return cls(
            id=app_id,
            slug=slug,
            name=slug.replace("-", " ").title(),
            private_key_pem=pem,
            webhook_secret=secrets.token_hex(20),
            client_id=f"Iv23{secrets.token_hex(8)}",
            client_secret=secrets.token_hex(20),
        )

    @cached_property
    def public_key_pem(self) -> str:
        key = serialization.load_pem_private_key(self.private_key_pem.encode(), password=None)
        return (
            key.public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            .decode()
        )

    @property
    def bot_login(self) -> str:
        return f"{self.slug}[bot]"

    def jwt(
        self, *, iat: float | None = None, exp: float | None = None, iss: object = None, key_pem: str | None = None
    ) -> str:
        """An App JWT as GitHub's docs describe it (iat 60 s back, exp 9 minutes ahead); each claim can be
        overridden so tests can build the bad ones."""
        now = int(time.time())
        claims = {
            "iat": int(iat if iat is not None else now - 60),
            "exp": int(exp if exp is not None else now + 540),
            "iss": str(self.id) if iss is None else iss,
        }
        return jwt.encode(claims, key_pem or self.private_key_pem, algorithm="RS256")
