"""Builds Copydesk's object graph from settings: the one place where parts are wired together."""

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import requests

from bot.github.apps import GitHubApp
from bot.github.bot import GitHubBot
from bot.github.codehost import GitHubCodeHost
from bot.github.registration import load_registration
from bot.github.settings import GitHubSettings
from bot.github.sources import announce_sources
from service import redisconn
from service.agent.model import ModelFactory
from service.agent.providers import HttpClients, build_providers
from service.codehost.base import CodeHost
from service.codehost.local import LocalCodeHost
from service.faults import Faults
from service.queues import RUN_TASK
from service.runner import JobRunner
from service.services import Services, build_services
from service.settings import Settings
from service.timeouts import client_options, stream_client_options
from service.workspace.git import Git
from service.workspace.mirror import MirrorStore

BUNDLED_SCRIPTS = {"demo": Path(__file__).parent / "demo_script.json"}


def run_job_id(rq_job) -> str | None:
    """The Copydesk job id of an RQ job that is a run (a RUN_TASK job's first argument); None for any other job, or
    one whose payload cannot be read."""
    try:
        return rq_job.args[0] if rq_job.func_name == RUN_TASK and rq_job.args else None
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
    # The model SDKs' HTTP clients a worker builds before it forks (service.agent.providers.preload).
    model_http: HttpClients = field(default_factory=dict)

    def runner(self, worker: str = "") -> JobRunner:
        """The job runner a worker uses (mirrors live under the data directory); `worker` names the RQ worker
        process that also renews its leases."""
        mirrors = MirrorStore(self.settings.mirrors_dir, self.git, max_file_bytes=self.settings.max_file_bytes)
        return JobRunner(self.services, mirrors, self.models(), faults=Faults(self.settings.test_faults), worker=worker)

    def models(self) -> ModelFactory:
        """The model factory runs pick their model from: the scripted provider and the vendors'."""
        return ModelFactory(scripts=BUNDLED_SCRIPTS, providers=build_providers(self.settings, self.model_http))

    def after_fork(self) -> None:
        """Make this context safe to use in a process forked from the one that built it (a work horse).

        Redis needs nothing: redis-py's pool sees the new process id and opens its own connections, never
        touching the parent's sockets. The GitHub App's HTTP session gets a new, empty pool: a keep-alive
        connection the parent opened must not carry two processes' requests.
        """
        if self.github_app is not None:
            self.github_app.session = requests.Session()

    def github_bot(self) -> GitHubBot:
        """What the webhook event handlers work with; only for a configured GitHub App."""
        if self.github is None or self.github_app is None:
            raise RuntimeError("no GitHub App is configured (GITHUB_APP_ID, GITHUB_PRIVATE_KEY, GITHUB_WEBHOOK_SECRET)")
        return GitHubBot(services=self.services, app=self.github_app, host=self.github)


def github_settings(settings: Settings, environ: Mapping[str, str] | None = None) -> GitHubSettings:
    """The GitHub App's settings: the environment, over what `/github/register` saved in the data directory."""
    env = os.environ if environ is None else environ
    if env.get("GITHUB_APP_ID"):
        # An app configured in the environment wins whole; mixing in the saved file could pair keys wrongly.
        return GitHubSettings.from_env(env)
    # An empty variable (a compose file's `${GITHUB_PRIVATE_KEY:-}`) is unset: it must not blank the saved value.
    return GitHubSettings.from_env({**load_registration(settings.data_dir), **{k: v for k, v in env.items() if v}})


def build(settings: Settings, environ: Mapping[str, str] | None = None) -> Context:
    """Wire Redis, stores, code hosts and queue for `settings`."""
    client = redisconn.client(settings.redis_url, **client_options(settings))
    # Event streams block in XREAD on connections of their own, so they can never take those requests need.
    stream_client = redisconn.client(settings.redis_url, **stream_client_options(settings))
    git = Git()
    local = LocalCodeHost(client, git, settings.base_url, Faults(settings.test_faults))
    hosts: dict[str, CodeHost] = {local.name: local}
    gh_settings = github_settings(settings, environ)
    github_app = github = None
    if gh_settings.configured:
        github_app = GitHubApp(gh_settings, client, requests.Session())
        github = GitHubCodeHost(github_app, web_url=gh_settings.web_url, announcer=announce_sources)
        hosts[github.name] = github
    services = build_services(settings, client, task=RUN_TASK, code_hosts=hosts, stream_client=stream_client)
    return Context(
        settings=settings,
        services=services,
        git=git,
        local=local,
        github_settings=gh_settings,
        github_app=github_app,
        github=github,
    )
