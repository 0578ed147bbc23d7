"""Webhook receivers on 127.0.0.1 and helpers to register endpoints and read deliveries."""

import json
import socket
import ssl
import threading
import time
from datetime import timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from service.clock import now
from tests.harness import deliver_webhooks


class Receiver:
    """A webhook receiver on 127.0.0.1 that verifies every delivery with the `standardwebhooks` reference library
    and answers 500 to the first `fail_first` deliveries."""

    def __init__(self, fail_first: int = 0) -> None:
        self.secrets: list[str] = []
        self.fail_first = fail_first
        self.received: list[dict] = []  # {"headers", "body", "verified", "status"}
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        headers["content-type"] = environ.get("CONTENT_TYPE", "")
        verified = []
        for secret in self.secrets:
            try:
                Webhook(secret).verify(body, headers)
                verified.append(secret)
            except WebhookVerificationError:
                pass
        with self._lock:
            status = 500 if len(self.received) < self.fail_first else 200
            self.received.append(
                {
                    "headers": headers,
                    "body": json.loads(body),
                    "verified": verified,
                    "status": status,
                    "at": time.monotonic(),
                }
            )
        start_response(f"{status} {'OK' if status == 200 else 'Failing on purpose'}", [("Content-Type", "text/plain")])
        return [b"ok"]


def register(stack, url: str, **fields):
    response = stack.api.post(f"/v2/agent/{stack.project_id}/webhooks", json={"url": url, **fields})
    assert response.status_code == 201, response.text
    return response.json()


def deliveries(stack, webhook_id: str) -> list[dict]:
    response = stack.api.get(f"/v2/agent/{stack.project_id}/webhooks/{webhook_id}/deliveries")
    assert response.status_code == 200, response.text
    return response.json()["deliveries"]


def _fan_out(stack) -> int:
    """Run the worker's fan-out once in this process, then make the attempts due now (first attempts included);
    returns how many events it fanned out."""
    from bot.worker import fanout

    fanned = fanout(stack.ctx).run_once(block_ms=100)
    deliver_webhooks(stack.ctx)
    return fanned


class RebindingResolver:
    """The name service of a DNS rebinding attack on one name: `first` to the first question, `then` to every
    later one. Other names do not resolve."""

    def __init__(self, name: str, first: str, then: str | None = None) -> None:
        self.name, self.first, self.then = name, first, then or first
        self.questions = 0

    def __call__(self, host: str, port: int, *_args, **_kwargs) -> list[tuple]:
        if host != self.name:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} is not {self.name}")
        address = self.first if self.questions == 0 else self.then
        self.questions += 1
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]


def self_signed(tmp_path, name: str) -> tuple[ssl.SSLContext, str]:
    """A TLS server context whose certificate names `name` only, and the certificate's path (the CA bundle to
    trust); the context records the SNI names clients send in `.sni_names`."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    start = now() - timedelta(minutes=5)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    sni_names: list[str | None] = []
    context.sni_callback = lambda _sock, server_name, _context: sni_names.append(server_name)
    context.sni_names = sni_names  # type: ignore[attr-defined]
    return context, str(cert_path)


def stored_values(store) -> bytes:
    """Every string and hash value in Redis, run together: what a copy of the store would give away."""
    values = []
    for key in store.keys("*"):
        kind = store.type(key)
        if kind == b"string":
            values.append(store.get(key) or b"")
        elif kind == b"hash":
            values += store.hvals(key)
    return b"".join(values)
