"""Sends one attempt of a delivery, logs it, and schedules the next with exponential backoff for up to 24 hours."""

import logging
import socket
import time
from collections.abc import Callable
from datetime import timedelta
from functools import cached_property

import requests

from service import metrics
from service.clock import iso, now, parse_iso
from service.models import Delivery, DeliveryStatus, WebhookEndpoint
from service.outbound import signing
from service.outbound.addresses import Resolver, UnsafeUrl, vet_url
from service.outbound.queue import DeliveryQueue
from service.outbound.transport import post
from service.sealing import Sealer
from service.store.outbound_webhooks import WebhookStore

log = logging.getLogger(__name__)

RETRY_WINDOW = timedelta(hours=24)
MAX_DELAY_SECONDS = 6 * 3600
USER_AGENT = "Copydesk-Webhooks/1"


def retry_delay(attempt: int, first_seconds: float) -> float:
    """Seconds to wait after failed attempt number `attempt` (1-based): first, 3x, 9x... capped at 6 hours."""
    return min(first_seconds * 3 ** (attempt - 1), MAX_DELAY_SECONDS)


class WebhookSender:
    """Makes delivery attempts: signed, sent to the address the guard vetted, logged, retried later if they fail."""

    def __init__(
        self,
        store: WebhookStore,
        key: Callable[[], bytes],
        queue: DeliveryQueue,
        *,
        allow_private: bool,
        retry_seconds: float,
        timeout: float,
        resolver: Resolver = socket.getaddrinfo,
    ) -> None:
        self._store = store
        self._key = key  # read at first use, so processes that never touch webhooks need no key
        self._queue = queue
        self._allow_private = allow_private
        self._retry_seconds = retry_seconds
        self._timeout = timeout
        self._resolver = resolver

    @cached_property
    def _sealer(self) -> Sealer:
        return Sealer(self._key(), b"copydesk webhook secrets")

    def seal(self, secret: str) -> str:
        """`secret` sealed for storage in the endpoint's record."""
        return self._sealer.seal(secret).decode("ascii")

    def attempt(self, delivery_id: str, attempt: int, *, manual: bool = False) -> Delivery | None:
        """Make attempt number `attempt` unless another sender took it; returns the delivery as recorded.

        With `manual`, `attempt` is the re-send's own number (WebhookStore.next_resend): a re-send gets no
        retries and leaves the scheduled ones alone. A retry is not made once the delivery succeeded.
        """
        if not self._store.claim_attempt(delivery_id, attempt, manual=manual):
            return None
        delivery = self._store.delivery(delivery_id)
        endpoint = self._store.find(delivery.endpoint_id) if delivery else None
        if delivery is None or endpoint is None or not (endpoint.enabled or manual):
            return None  # expired, endpoint deleted or disabled: nothing to send
        if not manual and delivery.status is DeliveryStatus.SUCCEEDED:
            return None  # a re-send got it through meanwhile
        ok, status, error, latency_ms = self._send(endpoint, delivery)
        metrics.WEBHOOK_DELIVERIES.labels(_result(ok, error)).inc()
        next_at = None
        if not ok and not manual:
            delay = retry_delay(attempt, self._retry_seconds)
            if now() + timedelta(seconds=delay) - parse_iso(delivery.created_at) <= RETRY_WINDOW:
                next_at = iso(now() + timedelta(seconds=delay))
        recorded = self._store.record_attempt(
            delivery,
            ok=ok,
            response_status=status,
            latency_ms=latency_ms,
            error=error,
            next_attempt_at=next_at,
            manual=manual,
        )
        if next_at and recorded is not None and recorded.next_attempt_at == next_at:
            self._queue.later(retry_delay(attempt, self._retry_seconds), delivery_id, attempt + 1)
        return recorded

    def _send(self, endpoint: WebhookEndpoint, delivery: Delivery) -> tuple[bool, int | None, str | None, int]:
        started = time.monotonic()
        try:
            # Checked again at each attempt: the name may resolve elsewhere now than at registration. The request
            # goes to the address checked here, never to a second answer of the name (DNS rebinding).
            vetted = vet_url(endpoint.url, allow_private=self._allow_private, resolver=self._resolver)
            headers = signing.headers(self._secrets(endpoint), delivery.id, int(time.time()), delivery.payload)
            # post() follows no redirect: one could lead inside the network.
            status = post(
                vetted,
                delivery.payload.encode("utf-8"),
                timeout=self._timeout,
                headers={**headers, "Content-Type": "application/json", "User-Agent": USER_AGENT},
            )
        except UnsafeUrl as exc:
            return False, None, f"refused: {exc}", _ms(started)
        except requests.RequestException as exc:
            return False, None, f"{type(exc).__name__}: {str(exc)[:300]}", _ms(started)
        ok = 200 <= status < 300
        return ok, status, None if ok else f"HTTP {status}", _ms(started)

    def _secrets(self, endpoint: WebhookEndpoint) -> list[str]:
        sealed = [endpoint.sealed_secret]
        if endpoint.sealed_previous and endpoint.previous_until and now() < parse_iso(endpoint.previous_until):
            sealed.append(endpoint.sealed_previous)
        return [s for s in (self._sealer.unseal(x) for x in sealed) if s]


def _result(ok: bool, error: str | None) -> str:
    """An attempt's `result` label: succeeded, refused (the address guard said no) or failed."""
    if ok:
        return "succeeded"
    return "refused" if (error or "").startswith("refused:") else "failed"


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
