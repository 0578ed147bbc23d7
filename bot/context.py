"""Builds Copydesk's object graph from settings: the one place where parts are wired together."""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import requests

from bot.github.apps import GitHubApp
from bot.github.codehost import GitHubCodeHost
from bot.github.events import GitHubBot
from bot.github.registration import load_registration
from bot.github.settings import GitHubSettings
from service import redisconn
from service.agent.model import ModelFactory
from service.agent.providers import build_providers
from service.codehost.base import CodeHost
from service.codehost.local import LocalCodeHost
from service.faults import Faults
from service.runner import JobRunner
from service.services import Services, build_services
from service.settings import Settings
from service.workspace.git import Git
from service.workspace.mirror import MirrorStore

# The worker's entry point, by name: the service enqueues it without importing `bot`.
TASK = "bot.tasks.process_job"
DELIVERY_TASK = "bot.tasks.deliver_webhook"
BUNDLED_SCRIPTS = {"demo": Path(__file__).parent / "demo_script.json"}


def run_job_id(rq_job) -> str | None:
    """The Copydesk job id of an RQ job that is a run (a TASK job's first argument); None for any other job, or
    one whose payload cannot be read."""
    try:
        return rq_job.args[0] if rq_job.func_name == TASK and rq_job.args else None
    except Exception:  # noqa: BLE001 - a job whose payload cannot be read is not one of our runs
        return None


@dataclass
class Context:
    settings: Settings
    services: Services
    git: Git
    local: LocalCodeHost
    github_settings: GitHubSettings
    github_app: GitHubApp | None  # None until a GitHub App is configured
    github: GitHubCodeHost | None

    def runner(self, worker: str = "") -> JobRunner:
        """The job runner a worker uses (mirrors live under the data directory); `worker` names the RQ worker
        process that also renews its leases."""
        mirrors = MirrorStore(self.settings.mirrors_dir, self.git, max_file_bytes=self.settings.max_file_bytes)
        return JobRunner(self.services, mirrors, self.models(), faults=Faults(self.settings.test_faults),
                         worker=worker)

    def models(self) -> ModelFactory:
        """The model factory runs pick their model from: the scripted provider and the vendors'."""
        return ModelFactory(scripts=BUNDLED_SCRIPTS, providers=build_providers(self.settings))

    def github_bot(self) -> GitHubBot:
        """What the webhook event handlers work with; only for a configured GitHub App."""
        if self.github is None or self.github_app is None:
            raise RuntimeError("no GitHub App is configured (GITHUB_APP_ID, GITHUB_PRIVATE_KEY, "
                               "GITHUB_WEBHOOK_SECRET)")
        return GitHubBot(services=self.services, app=self.github_app, host=self.github)


def github_settings(settings: Settings, environ: Mapping[str, str] | None = None) -> GitHubSettings:
    """The GitHub App's settings: the environment, over what `/github/register` saved in the data directory."""
    env = os.environ if environ is None else environ
    if env.get("GITHUB_APP_ID"):
        # An app configured in the environment wins whole; mixing in the saved file could pair keys wrongly.
        return GitHubSettings.from_env(env)
    return GitHubSettings.from_env({**load_registration(settings.data_dir), **env})


def build(settings: Settings, environ: Mapping[str, str] | None = None) -> Context:
    """Wire Redis, stores, code hosts and queue for `settings`."""
    client = redisconn.client(settings.redis_url, health_check_interval=30)
    git = Git()
    local = LocalCodeHost(client, git, settings.base_url, Faults(settings.test_faults))
    hosts: dict[str, CodeHost] = {local.name: local}
    gh_settings = github_settings(settings, environ)
    github_app = github = None
    if gh_settings.configured:
        github_app = GitHubApp(gh_settings, client, requests.Session())
        github = GitHubCodeHost(github_app, web_url=gh_settings.web_url)
        hosts[github.name] = github
    services = build_services(settings, client, task=TASK, delivery_task=DELIVERY_TASK, code_hosts=hosts)
    return Context(settings=settings, services=services, git=git, local=local, github_settings=gh_settings,
                   github_app=github_app, github=github)
