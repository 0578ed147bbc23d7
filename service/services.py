"""The service's collaborators, held together so the composition root can hand them around."""

from dataclasses import dataclass

import redis

from service.apikeys import ApiKeys
from service.codehost.base import CodeHost
from service.dispatch import Dispatcher
from service.ids import UlidGenerator
from service.settings import Settings
from service.store.apikeys import ApiKeyStore
from service.store.jobs import JobStore
from service.store.projects import ProjectStore
from service.store.ratelimit import RateLimiter


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


def build_services(settings: Settings, client: redis.Redis, *, task: str,
                   code_hosts: dict[str, CodeHost]) -> Services:
    """Wire the stores and queue over one Redis client; `task` is the worker's entry point."""
    ids = UlidGenerator()
    jobs = JobStore(client, ids)
    return Services(
        settings=settings,
        redis=client,
        projects=ProjectStore(client, ids),
        jobs=jobs,
        keys=ApiKeys(ApiKeyStore(client)),
        limiter=RateLimiter(client, limit=settings.rate_limit_per_hour),
        dispatcher=Dispatcher(client, jobs, queue_name=settings.queue_name, task=task,
                              job_timeout=settings.run_timeout_seconds + 120),
        code_hosts=code_hosts,
    )
