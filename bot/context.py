"""Builds Copydesk's object graph from settings: the one place where parts are wired together."""

from dataclasses import dataclass
from pathlib import Path

import redis

from service.agent.model import ModelFactory
from service.agent.providers import build_providers
from service.codehost.local import LocalCodeHost
from service.runner import JobRunner
from service.services import Services, build_services
from service.settings import Settings
from service.workspace.git import Git
from service.workspace.mirror import MirrorStore

# The worker's entry point, by name: the service enqueues it without importing `bot`.
TASK = "bot.tasks.process_job"
BUNDLED_SCRIPTS = {"demo": Path(__file__).parent / "demo_script.json"}


@dataclass
class Context:
    settings: Settings
    services: Services
    git: Git
    local: LocalCodeHost

    def runner(self) -> JobRunner:
        """The job runner a worker uses (mirrors live under the data directory)."""
        mirrors = MirrorStore(self.settings.mirrors_dir, self.git)
        models = ModelFactory(scripts=BUNDLED_SCRIPTS, providers=build_providers(self.settings))
        return JobRunner(self.services, mirrors, models)


def build(settings: Settings) -> Context:
    """Wire Redis, stores, code hosts and queue for `settings`."""
    client = redis.Redis.from_url(settings.redis_url, health_check_interval=30)
    git = Git()
    local = LocalCodeHost(client, git, settings.base_url)
    services = build_services(settings, client, task=TASK, code_hosts={local.name: local})
    return Context(settings=settings, services=services, git=git, local=local)
