"""Webhook endpoints of projects and their delivery logs, in Redis."""

import hashlib
from datetime import timedelta
from typing import cast

import redis

from service.clock import iso, now, now_iso, parse_iso
from service.errors import DeliveryNotFound, WebhookNotFound
from service.ids import UlidGenerator, new_id
from service.models import Delivery, DeliveryStatus, WebhookEndpoint
from service.store.codec import dump, load
from service.store.events import endpoints_key
from service.store.replies import text

LOG_LENGTH = 200  # deliveries kept in an endpoint's log, newest first
DELIVERY_TTL_SECONDS = 30 * 24 * 3600
CLAIM_TTL_SECONDS = 3 * 24 * 3600
DISABLE_AFTER = timedelta(days=5)  # an endpoint whose every attempt failed this long is disabled
PREVIOUS_SECRET_GRACE = timedelta(hours=24)  # a rotated secret still signs this long


def _endpoint_key(endpoint_id: str) -> str:
    return f"cd:webhook:{endpoint_id}"


def _log_key(endpoint_id: str) -> str:
    return f"cd:webhook:{endpoint_id}:deliveries"


def _delivery_key(delivery_id: str) -> str:
    return f"cd:delivery:{delivery_id}"


UNSENT = "cd:deliveries:unsent"  # deliveries whose first attempt is not made yet, scored by when to make it anyway


def _claim_key(delivery_id: str, attempt: int) -> str:
    return f"cd:delivery:{delivery_id}:attempt:{attempt}"


def delivery_id_for(endpoint_id: str, outbox_id: str) -> str:
    """The same id for the same event and endpoint, so a fan-out done twice makes one delivery."""
    return "dlv_" + hashlib.sha256(f"{endpoint_id}\0{outbox_id}".encode()).hexdigest()[:26]


class WebhookStore:
    def __init__(self, client: redis.Redis, ids: UlidGenerator) -> None:
        self._redis = client
        self._ids = ids

    # -- endpoints ---------------------------------------------------------------------------

    def add(self, project_id: str, *, url: str, sealed_secret: str, description: str,
            events: list[str]) -> WebhookEndpoint:
        endpoint = WebhookEndpoint(id=new_id("whk", self._ids), project_id=project_id, url=url,
                                   sealed_secret=sealed_secret, created_at=now_iso(), description=description,
                                   events=events)
        pipe = self._redis.pipeline(transaction=True)
        pipe.set(_endpoint_key(endpoint.id), dump(endpoint))
        pipe.sadd(endpoints_key(project_id), endpoint.id)
        pipe.execute()
        return endpoint

    def find(self, endpoint_id: str) -> WebhookEndpoint | None:
        if not endpoint_id.startswith("whk_"):
            return None
        return load(WebhookEndpoint, self._redis.get(_endpoint_key(endpoint_id)))

    def get(self, project_id: str, endpoint_id: str) -> WebhookEndpoint:
        """The project's endpoint, or WebhookNotFound (also for another project's)."""
        endpoint = self.find(endpoint_id)
        if endpoint is None or endpoint.project_id != project_id:
            raise WebhookNotFound(f"no webhook endpoint {endpoint_id} in project {project_id}")
        return endpoint

    def of_project(self, project_id: str) -> list[WebhookEndpoint]:
        ids = sorted(text(i) for i in cast(set, self._redis.smembers(endpoints_key(project_id))))
        raws = self._redis.mget([_endpoint_key(i) for i in ids]) if ids else []
        return [load(WebhookEndpoint, raw) for raw in raws if raw is not None]

    def delete(self, project_id: str, endpoint_id: str) -> None:
        self.get(project_id, endpoint_id)
        pipe = self._redis.pipeline(transaction=True)
        pipe.delete(_endpoint_key(endpoint_id), _log_key(endpoint_id))
        pipe.srem(endpoints_key(project_id), endpoint_id)
        pipe.execute()

    def rotate(self, project_id: str, endpoint_id: str, sealed_secret: str) -> WebhookEndpoint:
        """Replace the secret; the previous one keeps signing for a day so receivers can switch over."""
        endpoint = self.get(project_id, endpoint_id)
        endpoint.sealed_previous, endpoint.previous_until = endpoint.sealed_secret, iso(now() + PREVIOUS_SECRET_GRACE)
        endpoint.sealed_secret = sealed_secret
        self._save(endpoint)
        return endpoint

    def enable(self, project_id: str, endpoint_id: str) -> WebhookEndpoint:
        endpoint = self.get(project_id, endpoint_id)
        endpoint.enabled, endpoint.disabled_reason, endpoint.failing_since = True, None, None
        self._save(endpoint)
        return endpoint

    def _save(self, endpoint: WebhookEndpoint) -> None:
        # Written only if it still exists: a delete meanwhile wins.
        self._redis.set(_endpoint_key(endpoint.id), dump(endpoint), xx=True)

    # -- deliveries --------------------------------------------------------------------------

    def add_delivery(self, delivery: Delivery, *, send_by: float) -> bool:
        """Store a new delivery and log it on its endpoint; False when it exists already (a repeated fan-out).
        Its first attempt is due by `send_by` (a Unix time): if nobody made it by then, `overdue` lists it."""
        if not self._redis.set(_delivery_key(delivery.id), dump(delivery), nx=True, ex=DELIVERY_TTL_SECONDS):
            return False
        pipe = self._redis.pipeline(transaction=True)
        pipe.lpush(_log_key(delivery.endpoint_id), delivery.id)
        pipe.ltrim(_log_key(delivery.endpoint_id), 0, LOG_LENGTH - 1)
        pipe.zadd(UNSENT, {delivery.id: send_by})
        pipe.execute()
        return True

    def overdue(self, now_ts: float, limit: int = 100) -> list[str]:
        """Deliveries whose first attempt is overdue (the process that fanned them out died), taken off the list:
        the caller makes those attempts."""
        taken = []
        for raw in cast(list, self._redis.zrangebyscore(UNSENT, "-inf", now_ts, start=0, num=limit)):
            if self._redis.zrem(UNSENT, raw):  # only one taker per delivery
                taken.append(text(raw))
        return taken

    def delivery(self, delivery_id: str) -> Delivery | None:
        if not delivery_id.startswith("dlv_"):
            return None
        return load(Delivery, self._redis.get(_delivery_key(delivery_id)))

    def endpoint_delivery(self, endpoint: WebhookEndpoint, delivery_id: str) -> Delivery:
        delivery = self.delivery(delivery_id)
        if delivery is None or delivery.endpoint_id != endpoint.id:
            raise DeliveryNotFound(f"no delivery {delivery_id} for webhook endpoint {endpoint.id}")
        return delivery

    def log(self, endpoint_id: str, limit: int = LOG_LENGTH) -> list[Delivery]:
        """The endpoint's deliveries, newest first."""
        ids = [text(i) for i in cast(list, self._redis.lrange(_log_key(endpoint_id), 0, limit - 1))]
        raws = self._redis.mget([_delivery_key(i) for i in ids]) if ids else []
        return [load(Delivery, raw) for raw in raws if raw is not None]

    def claim_attempt(self, delivery_id: str, attempt: int) -> bool:
        """Take attempt number `attempt` of a delivery; only one sender gets it (the fan-out's, an overdue
        one's taker, a retry or a re-send)."""
        if not self._redis.set(_claim_key(delivery_id, attempt), 1, nx=True, ex=CLAIM_TTL_SECONDS):
            return False
        if attempt == 1:
            self._redis.zrem(UNSENT, delivery_id)
        return True

    def record_attempt(self, delivery: Delivery, *, ok: bool, response_status: int | None, latency_ms: int,
                       error: str | None, next_attempt_at: str | None) -> WebhookEndpoint | None:
        """Log one attempt on the delivery and its endpoint; returns the endpoint (disabled after 5 days of
        failures, and then no retry is left), None when it was deleted meanwhile."""
        stamp = now_iso()
        endpoint = self.find(delivery.endpoint_id)
        if endpoint is not None:
            if ok:
                endpoint.failing_since = None
            else:
                endpoint.failing_since = endpoint.failing_since or stamp
                if endpoint.enabled and now() - parse_iso(endpoint.failing_since) >= DISABLE_AFTER:
                    endpoint.enabled = False
                    endpoint.disabled_reason = (f"every delivery failed since {endpoint.failing_since} (5 days); the "
                                                f"last attempt: {error or f'HTTP {response_status}'}")
            self._save(endpoint)
        if endpoint is None or not endpoint.enabled:
            next_attempt_at = None
        delivery.attempts += 1
        delivery.response_status, delivery.latency_ms, delivery.error = response_status, latency_ms, error
        delivery.last_attempt_at, delivery.next_attempt_at = stamp, next_attempt_at
        delivery.status = (DeliveryStatus.SUCCEEDED if ok else
                           DeliveryStatus.PENDING if next_attempt_at else DeliveryStatus.FAILED)
        self._redis.set(_delivery_key(delivery.id), dump(delivery), keepttl=True)
        return endpoint
