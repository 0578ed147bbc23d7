"""The dashboard: sign-in, API keys, projects, jobs, webhooks, automations and the local code host's pull-request
pages."""

from functools import partial

import redis
from flask import Blueprint, Flask

from bot.dashboard import (
    github_diff,
    timefmt,
    views_auth,
    views_automations,
    views_jobs,
    views_keys,
    views_outbound_webhooks,
    views_projects,
    views_pulls,
)
from bot.dashboard.access import SESSION_BOX_INFO, Gate
from bot.dashboard.markdown import render_markdown
from bot.dashboard.oauth import GitHubSignIn
from bot.dashboard.sessions import SessionStore
from bot.dashboard.web import EXTENSION, Dashboard, register_handlers
from bot.door_limits import DoorLimits
from bot.github.secretbox import SecretBox
from bot.github.settings import GitHubSettings
from service.codehost.local import LocalCodeHost
from service.sealing import operator_key
from service.services import Services


def build(services: Services, local: LocalCodeHost, github: GitHubSettings, doors: DoorLimits) -> Dashboard:
    """The dashboard's collaborators for one app; `doors` limits its sign-in doors per client address."""
    settings = services.settings
    client: redis.Redis = services.redis
    sessions = SessionStore(
        client,
        idle_seconds=settings.session_idle_seconds,
        max_seconds=settings.session_max_seconds,
        seal_key=partial(operator_key, settings.secret_key, settings.data_dir),
    )
    sign_in = GitHubSignIn(github, client, settings.base_url) if github.sign_in else None
    box = SecretBox(github.private_key, info=SESSION_BOX_INFO) if github.sign_in and github.private_key else None
    return Dashboard(
        services=services,
        local=local,
        sessions=sessions,
        gate=Gate(sessions, services.projects, sign_in, box),
        sign_in=sign_in,
        secure_cookies=settings.base_url.startswith("https://"),
        github_diffs=github_diff.build(github, client),
        doors=doors,
    )


def register(app: Flask, deps: Dashboard) -> None:
    """Mount the dashboard (`/dashboard`) and the local pull-request pages (`/local`) on `app`."""
    app.extensions[EXTENSION] = deps
    app.jinja_env.filters.update(markdown=render_markdown, until=timefmt.until, when=timefmt.when)
    bp = Blueprint(
        "dashboard",
        __name__,
        url_prefix="/dashboard",
        template_folder="templates",
        static_folder="static",
        static_url_path="/static",
    )
    register_handlers(bp)
    for module in (views_auth, views_keys, views_projects, views_jobs, views_outbound_webhooks, views_automations):
        module.register(bp)
    app.register_blueprint(bp)
    app.register_blueprint(views_pulls.create_blueprint())
