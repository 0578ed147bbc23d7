"""Webhook endpoints of projects and their delivery logs, in Redis."""

import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import cast

import redis

from service.clock import iso, now, now_iso, parse_iso
from service.errors import DeliveryNotFound, WebhookLimitReached, WebhookNotFound
from service.ids import UlidGenerator, new_id
from service.models import Delivery, DeliveryStatus, WebhookEndpoint
from service.store.codec import dump, load
from service.store.job_events import endpoints_key
from service.store.replies import text, transaction

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


def _claim_key(delivery_id: str, attempt: int, *, manual: bool = False) -> str:
    # Re-sends are numbered apart from the retry chain: a re-send must never take the number the next scheduled
    # retry will claim, or that retry finds its attempt taken and the chain stops.
    return f"cd:delivery:{delivery_id}:{'resend' if manual else 'attempt'}:{attempt}"


def _resends_key(delivery_id: str) -> str:
    return f"cd:delivery:{delivery_id}:resends"


def delivery_id_for(endpoint_id: str, outbox_id: str) -> str:
    """The same id for the same event and endpoint, so a fan-out done twice makes one delivery."""
    return "dlv_" + hashlib.sha256(f"{endpoint_id}\0{outbox_id}".encode()).hexdigest()[:26]


class WebhookStore:
    def __init__(self, client: redis.Redis, ids: UlidGenerator) -> None:
        self._redis = client
        self._ids = ids

    # -- endpoints ---------------------------------------------------------------------------

    def add(
        self,
        project_id: str,
        *,
        url: str,
        sealed_secret: str,
        description: str,
        events: list[str],
        limit: int | None = None,
    ) -> WebhookEndpoint:
        """Add an endpoint to the project; WebhookLimitReached when it has `limit` already (checked atomically, so
        requests made at once cannot pass it together)."""
        endpoint = WebhookEndpoint(
            id=new_id("whk", self._ids),
            project_id=project_id,
            url=url,
            sealed_secret=sealed_secret,
            created_at=now_iso(),
            description=description,
            events=events,
        )
        members = endpoints_key(project_id)

        def attempt(pipe) -> WebhookEndpoint:
            if limit is not None and pipe.scard(members) >= limit:
                raise WebhookLimitReached(
                    f"project {project_id} has {limit} webhook endpoints, as many as it may "
                    "(COPYDESK_WEBHOOK_MAX_ENDPOINTS); delete one first"
                )
            pipe.multi()
            pipe.set(_endpoint_key(endpoint.id), dump(endpoint))
            pipe.sadd(members, endpoint.id)
            return endpoint

        return transaction(self._redis, attempt, members)

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

        def change(endpoint: WebhookEndpoint) -> None:
            endpoint.sealed_previous = endpoint.sealed_secret
            endpoint.previous_until = iso(now() + PREVIOUS_SECRET_GRACE)
            endpoint.sealed_secret = sealed_secret

        return self._update(project_id, endpoint_id, change)

    def enable(self, project_id: str, endpoint_id: str) -> WebhookEndpoint:
        """Take deliveries again after the endpoint was disabled; its failure record starts afresh."""

        def change(endpoint: WebhookEndpoint) -> None:
            endpoint.enabled, endpoint.disabled_reason, endpoint.failing_since = True, None, None

        return self._update(project_id, endpoint_id, change)

    def _update(self, project_id: str, endpoint_id: str, change: Callable[[WebhookEndpoint], None]) -> WebhookEndpoint:
        """Read, change and write the project's endpoint in one WATCH/MULTI transaction, so that concurrent
        writers (a rotation, an enable, a sender's failure bookkeeping, a delete) never undo each other."""
        key = _endpoint_key(endpoint_id)

        def attempt(pipe) -> WebhookEndpoint:
            endpoint = load(WebhookEndpoint, pipe.get(key)) if endpoint_id.startswith("whk_") else None
            if endpoint is None or endpoint.project_id != project_id:
                raise WebhookNotFound(f"no webhook endpoint {endpoint_id} in project {project_id}")
            change(endpoint)
            pipe.multi()
            pipe.set(key, dump(endpoint))
            return endpoint

        return transaction(self._redis, attempt, key)

    def _save(self, endpoint: WebhookEndpoint) -> None:
        """Overwrite the endpoint if it still exists (a delete meanwhile wins); for tests that set a state."""
        self._redis.set(_endpoint_key(endpoint.id), dump(endpoint), xx=True)

    # -- deliveries --------------------------------------------------------------------------

    def add_delivery(self, delivery: Delivery) -> bool:
        """Store a new delivery and log it on its endpoint; False when it exists already (a repeated fan-out)."""
        if not self._redis.set(_delivery_key(delivery.id), dump(delivery), nx=True, ex=DELIVERY_TTL_SECONDS):
            return False
        pipe = self._redis.pipeline(transaction=True)
        pipe.lpush(_log_key(delivery.endpoint_id), delivery.id)
        pipe.ltrim(_log_key(delivery.endpoint_id), 0, LOG_LENGTH - 1)
        pipe.execute()
        return True

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

    def next_resend(self, delivery_id: str) -> int:
        """A new number for a manual re-send of the delivery (1, 2, ...), counted apart from its attempts."""
        pipe = self._redis.pipeline(transaction=True)
        pipe.incr(_resends_key(delivery_id))
        pipe.expire(_resends_key(delivery_id), DELIVERY_TTL_SECONDS)
        return int(pipe.execute()[0])

    def claim_attempt(self, delivery_id: str, attempt: int, *, manual: bool = False) -> bool:
        """Take attempt number `attempt` of a delivery (with `manual`, re-send number `attempt`); only one sender
        gets it, however often it was scheduled or taken (a repeated fan-out, a lease that ended)."""
        return bool(self._redis.set(_claim_key(delivery_id, attempt, manual=manual), 1, nx=True, ex=CLAIM_TTL_SECONDS))

    def record_attempt(
        self,
        delivery: Delivery,
        *,
        ok: bool,
        response_status: int | None,
        latency_ms: int,
        error: str | None,
        next_attempt_at: str | None,
        manual: bool = False,
    ) -> Delivery | None:
        """Log one attempt on the delivery and its endpoint; returns the delivery as stored, None when it expired.

        The endpoint is disabled after 5 days of failures, and then no retry is left. A failed re-send
        (`manual`) leaves the delivery's schedule as it was: a retry still due is still made.
        """
        stamp = now_iso()
        endpoint = self._note_outcome(
            delivery.endpoint_id, ok=ok, stamp=stamp, last_error=error or f"HTTP {response_status}"
        )
        if endpoint is None or not endpoint.enabled:
            next_attempt_at = None
        key = _delivery_key(delivery.id)

        def attempt(pipe) -> Delivery | None:
            current = load(Delivery, pipe.get(key))
            if current is None:
                return None
            _attempt_made(
                current,
                ok=ok,
                manual=manual,
                stamp=stamp,
                response_status=response_status,
                latency_ms=latency_ms,
                error=error,
                next_attempt_at=next_attempt_at,
            )
            pipe.multi()
            pipe.set(key, dump(current), keepttl=True)
            return current

        # Atomic: a re-send and a retry of one delivery may be recorded at the same time.
        return transaction(self._redis, attempt, key)

    def _note_outcome(self, endpoint_id: str, *, ok: bool, stamp: str, last_error: str) -> WebhookEndpoint | None:
        """Update the endpoint's failure record after an attempt, atomically: a rotation, an enable or a delete
        made meanwhile is never overwritten. Returns the endpoint, None when it was deleted."""
        key = _endpoint_key(endpoint_id)

        def attempt(pipe) -> WebhookEndpoint | None:
            endpoint = load(WebhookEndpoint, pipe.get(key))
            if endpoint is not None and _failure_record(endpoint, ok=ok, stamp=stamp, last_error=last_error):
                pipe.multi()
                pipe.set(key, dump(endpoint))
            return endpoint

        return transaction(self._redis, attempt, key)


def _failure_record(endpoint: WebhookEndpoint, *, ok: bool, stamp: str, last_error: str) -> bool:
    """Apply one attempt's outcome to the endpoint's failure record; True when that changed it."""
    before = (endpoint.failing_since, endpoint.enabled)
    if ok:
        endpoint.failing_since = None
    else:
        endpoint.failing_since = endpoint.failing_since or stamp
        if endpoint.enabled and now() - parse_iso(endpoint.failing_since) >= DISABLE_AFTER:
            endpoint.enabled = False
            endpoint.disabled_reason = (
                f"every delivery failed since {endpoint.failing_since} (5 days); the last attempt: {last_error}"
            )
    return (endpoint.failing_since, endpoint.enabled) != before


def _attempt_made(
    delivery: Delivery,
    *,
    ok: bool,
    manual: bool,
    stamp: str,
    response_status: int | None,
    latency_ms: int,
    error: str | None,
    next_attempt_at: str | None,
) -> None:
    """Apply one attempt to the delivery record: its counters, last result and what comes next."""
    delivery.attempts += 1
    delivery.response_status, delivery.latency_ms, delivery.error = response_status, latency_ms, error
    delivery.last_attempt_at = stamp
    if manual and not ok and delivery.status is DeliveryStatus.PENDING:
        return  # a retry (or the first attempt) is still due; the failed re-send changes nothing of that
    delivery.next_attempt_at = None if ok else next_attempt_at
    delivery.status = (
        DeliveryStatus.SUCCEEDED
        if ok
        else DeliveryStatus.PENDING
        if delivery.next_attempt_at
        else DeliveryStatus.FAILED
    )
