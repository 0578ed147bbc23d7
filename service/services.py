"""The service's collaborators, held together so the composition root can hand them around."""

import socket
from dataclasses import dataclass
from functools import partial

import redis

from service.apikeys import ApiKeys
from service.automations.store import AutomationStore
from service.codehost.base import CodeHost
from service.dispatch import Dispatcher
from service.ids import UlidGenerator
from service.outbound.addresses import Resolver
from service.outbound.queue import DeliveryQueue, account_lane
from service.outbound.sender import WebhookSender
from service.queues import runs_queue
from service.replication import Durability
from service.sealing import operator_key
from service.settings import Settings
from service.store.apikeys import ApiKeyStore
from service.store.job_events import EventLog
from service.store.jobs import JobStore
from service.store.outbound_webhooks import WebhookStore
from service.store.projects import ProjectStore
from service.store.ratelimit import RateLimiter
from service.store.usage import UsageLedger


@dataclass
class Services:
    settings: Settings
    redis: redis.Redis
    projects: ProjectStore
    jobs: JobStore
    keys: ApiKeys
    limiter: RateLimiter
    dispatcher: Dispatcher
    code_hosts: dict[str, CodeHost]
    events: EventLog
    usage: UsageLedger
    webhooks: WebhookStore
    deliveries: DeliveryQueue
    sender: WebhookSender
    durability: Durability
    automations: AutomationStore


def build_services(
    settings: Settings,
    client: redis.Redis,
    *,
    task: str,
    code_hosts: dict[str, CodeHost],
    stream_client: redis.Redis | None = None,
) -> Services:
    """Wire the stores and queues over one Redis client; `task` is the worker's entry point for a run; event
    streams block on `stream_client` (default: `client`)."""
    ids = UlidGenerator()
    projects = ProjectStore(client, ids)
    events = EventLog(
        client, retention=settings.event_retention, ttl_seconds=settings.event_ttl_days * 86400, blocking=stream_client
    )
    usage = UsageLedger(client)
    jobs = JobStore(client, ids, events)
    webhooks = WebhookStore(client, ids)
    deliveries = DeliveryQueue(client, account_lane(webhooks, projects))
    return Services(
        settings=settings,
        redis=client,
        projects=projects,
        jobs=jobs,
        keys=ApiKeys(ApiKeyStore(client)),
        limiter=RateLimiter(client, limit=settings.rate_limit_per_hour),
        dispatcher=Dispatcher(
            client,
            jobs,
            queue_name=runs_queue(settings.queue_name),
            task=task,
            job_timeout=settings.run_timeout_seconds + 120,
        ),
        code_hosts=code_hosts,
        events=events,
        usage=usage,
        webhooks=webhooks,
        deliveries=deliveries,
        sender=webhook_sender(settings, webhooks, deliveries),
        durability=Durability(client, min_replicas=settings.redis_min_replicas, wait_ms=settings.redis_replica_wait_ms),
        automations=AutomationStore(client, ids),
    )


def webhook_sender(
    settings: Settings, webhooks: WebhookStore, deliveries: DeliveryQueue, *, resolver: Resolver = socket.getaddrinfo
) -> WebhookSender:
    """The sender of webhook attempts; `resolver` stands for the name service (tests give their own)."""
    return WebhookSender(
        webhooks,
        partial(operator_key, settings.secret_key, settings.data_dir),
        deliveries,
        allow_private=settings.webhook_allow_private,
        retry_seconds=settings.webhook_retry_seconds,
        timeout=settings.webhook_timeout_seconds,
        resolver=resolver,
    )
