"""The workers' fan-out: each outbox event becomes one delivery per interested endpoint, its first attempt due at
once in the account's delivery lane."""

import json
from typing import cast

import redis

from service.clock import now_iso
from service.models import Delivery, WebhookEndpoint
from service.outbound.queue import DeliveryQueue
from service.store.job_events import OUTBOX
from service.store.outbound_webhooks import WebhookStore, delivery_id_for

GROUP = "fanout"
STALE_MS = 60_000  # an entry a fan-out took this long ago and never acknowledged (its worker died) is taken over


class Fanout:
    def __init__(self, client: redis.Redis, store: WebhookStore, queue: DeliveryQueue, *, consumer: str) -> None:
        self._redis = client
        self._store = store
        self._queue = queue
        self._consumer = consumer
        self._grouped = False

    def run_once(self, block_ms: int = 1000) -> int:
        """Fan out what is waiting (stale entries of dead workers first); returns how many events it handled."""
        self._ensure_group()
        claimed: list = self._redis.xautoclaim(OUTBOX, GROUP, self._consumer, STALE_MS, "0-0", count=100)
        _next, stale, *_ = claimed
        entries = list(stale)
        fresh = cast(
            list,
            self._redis.xreadgroup(
                GROUP, self._consumer, {OUTBOX: ">"}, count=100, block=None if entries else block_ms
            ),
        )
        entries += [entry for _stream, items in (fresh or []) for entry in items]
        endpoints: dict[str, list[WebhookEndpoint]] = {}  # each project's, read once per batch
        for entry_id, fields in entries:
            if fields:  # an entry trimmed away before it was read comes back empty
                self._fan(entry_id.decode(), fields, endpoints)
            self._redis.xack(OUTBOX, GROUP, entry_id)
        return len(entries)

    def _ensure_group(self) -> None:
        if self._grouped:
            return
        try:
            # From the start of the outbox: it only holds events of projects that have endpoints.
            self._redis.xgroup_create(OUTBOX, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._grouped = True

    def _fan(self, outbox_id: str, raw: dict, endpoints: dict[str, list[WebhookEndpoint]]) -> None:
        # Read as text, not through decode_entry: an event type this process does not know (a newer worker wrote
        # it during a rolling deploy) is still delivered, where the enum would raise and hold up the outbox.
        fields = {key.decode(): value.decode() for key, value in raw.items()}
        body = json.dumps(
            {"type": fields["type"], "timestamp": fields["ts"], "data": json.loads(fields["data"])},
            separators=(",", ":"),
        )
        project_id = fields["project"]
        if project_id not in endpoints:
            endpoints[project_id] = self._store.of_project(project_id)
        for endpoint in endpoints[project_id]:
            if not endpoint.wants(fields["type"]):
                continue
            delivery = Delivery(
                id=delivery_id_for(endpoint.id, outbox_id),
                endpoint_id=endpoint.id,
                job_id=fields["job"],
                event_id=outbox_id,
                event_type=fields["type"],
                payload=body,
                created_at=now_iso(),
            )
            self._store.add_delivery(delivery)
            # Scheduled even when the delivery existed (an entry taken over from a fan-out that died in between);
            # an attempt already made is not made again (WebhookStore.claim_attempt).
            self._queue.now(delivery.id, 1)
