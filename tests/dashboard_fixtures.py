"""Fixtures for the dashboard: `dash`, Copydesk with sign-in through the GitHub emulator and a local project,
and people with different rights; `browser`, one headless Debian chromium for the session."""

import json
import os
import re
import signal
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin

import pytest
import requests

from bot import context
from bot.app import create_app
from bot.dashboard.operator import issue_login_link
from service.settings import Settings
from tests.conftest import DOCS
from tests.harness import LiveServer, drain_queues


@pytest.fixture
def time_bound(request):
    """Fail a test that runs over its module's TEST_SECONDS (SIGALRM) instead of hanging the suite."""
    seconds = getattr(request.module, "TEST_SECONDS", 60)

    def over(_signum, _frame):
        raise TimeoutError(f"test ran over {seconds} s")

    previous = signal.signal(signal.SIGALRM, over)
    signal.alarm(seconds)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Set COPYDESK_SCREENSHOTS=docs/screenshots to refresh the README's pictures; else they go to a temp folder.
SCREENSHOTS_ENV = "COPYDESK_SCREENSHOTS"
# Deque's accessibility engine, from the npm registry, pinned and checked like the GitHub schemas' packages.
AXE = (
    "axe-core",
    "4.14.1",
    "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==",
)
AXE_CACHE = Path.home() / ".cache" / "copydesk-tests"


@dataclass
class Dash:
    """Copydesk (web app, store) wired to the GitHub emulator's App, with its OAuth client."""

    github: object
    ctx: context.Context
    url: str
    script_path: Path
    projects: dict = field(default_factory=dict)  # name -> project

    def script(self, *runs: list[dict]) -> None:
        self.script_path.write_text(json.dumps({"runs": [{"steps": steps} for steps in runs]}))

    def drain(self) -> None:
        drain_queues(self.ctx.services.redis, self.ctx.settings.queue_name)

    def login_link(self) -> str:
        return issue_login_link(self.ctx.services.redis, self.url)

    def operator(self) -> "Browserless":
        session = Browserless(self.url)
        assert session.get(self.login_link()).url.endswith("/dashboard/")
        return session

    def signed_in(self, login: str) -> "Browserless":
        """A requests session that went through the OAuth web flow as `login`."""
        self.github.sign_in_browser(login)
        session = Browserless(self.url)
        authorize = session.get("/dashboard/login/github", allow_redirects=True)
        assert authorize.status_code == 200 and "Authorize" in authorize.text, authorize.text
        fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', authorize.text))
        back = session.post(authorize.url, data={**fields, "decision": "authorize"})
        assert back.url.startswith(self.url), back.url
        return session


class Browserless(requests.Session):
    """A requests session against the dashboard that reads CSRF tokens off pages like a browser's form would."""

    def __init__(self, base_url: str) -> None:
        super().__init__()
        self.base_url = base_url
        self.last = None

    def request(self, method, url, *args, **kwargs):
        kwargs.setdefault("timeout", 10)
        self.last = super().request(method, urljoin(self.base_url, url), *args, **kwargs)
        return self.last

    def csrf(self, page: str = "/dashboard/") -> str:
        found = re.search(r'name="csrf_token" value="([^"]+)"', self.get(page).text)
        assert found, "no CSRF token on " + page
        return found.group(1)

    def form(self, path: str, data: dict, *, page: str = "/dashboard/", **kwargs):
        """POST a form the way the page's own form would (with the page's CSRF token)."""
        return self.post(path, data={"csrf_token": self.csrf(page), **data}, **kwargs)


@pytest.fixture
def dash(github, redis_url, tmp_path, make_repo, monkeypatch):
    """acme (alice admin, bob member) and globex (carol admin) installed the App; dave has no installation;
    a local project for the operator. Copydesk reads the App and its OAuth client from the environment."""
    github.add_repo("acme/docs", files=DOCS)
    github.add_repo("globex/site", files=DOCS)
    installs = {
        "acme": github.add_installation("acme", ["acme/docs"]),
        "globex": github.add_installation("globex", ["globex/site"]),
    }
    github.add_member("acme", "alice", "admin")
    github.add_member("acme", "bob", "member")
    github.add_member("globex", "carol", "admin")
    github.add_user("dave")
    script_path = tmp_path / "script.json"
    script_path.write_text('{"runs": []}')
    server = LiveServer()  # bound first: its URL goes into the settings and the OAuth callback
    base = server.url
    github.oauth_callback = f"{base}/dashboard/login/github/callback"
    # On top of what the test set in the environment (e.g. COPYDESK_WEBHOOK_ALLOW_PRIVATE).
    settings = Settings.from_env().with_overrides(
        redis_url=redis_url,
        data_dir=tmp_path / "data",
        base_url=base,
        model=f"scripted:{script_path}",
        models=(f"scripted:{script_path}", "scripted:demo"),
    )
    env = {
        **settings.to_env(),
        "GITHUB_APP_ID": str(github.app.id),
        "GITHUB_PRIVATE_KEY": github.app.private_key_pem,
        "GITHUB_WEBHOOK_SECRET": github.app.webhook_secret,
        "GITHUB_API_URL": github.url,
        "GITHUB_WEB_URL": github.url,
        "GITHUB_CLIENT_ID": github.app.client_id,
        "GITHUB_CLIENT_SECRET": github.app.client_secret,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # the worker's task builds its context from the environment
    settings = Settings.from_env()
    ctx = context.build(settings)
    projects = {}
    for account, name in (("acme", "acme/docs"), ("globex", "globex/site")):
        repo = github.state.repo(name)
        projects[name], _ = ctx.services.projects.ensure(
            account=account,
            host="github",
            repository=name,
            web_url=f"{github.url}/{name}",
            ref="main",
            host_data={"installation_id": installs[account], "repository_id": repo.id},
        )
    projects["local"] = ctx.local.register(ctx.services.projects, path=make_repo(DOCS, name="widgets"), ref="main")
    with server.mount(create_app(settings, ctx)):
        yield Dash(github, ctx, base, script_path, projects)


@pytest.fixture(scope="session")
def chromium():
    """One headless Debian chromium for the whole session, driven by Playwright (no browser download)."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing; .ci/run installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium):
    """A fresh browser context (no cookies) and a page in it."""
    with ExitStack() as stack:
        context_ = chromium.new_context(viewport={"width": 1280, "height": 900})
        stack.callback(context_.close)
        page = context_.new_page()
        page.set_default_timeout(15_000)
        yield page


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe.min.js of the pinned axe-core (downloaded once into ~/.cache/copydesk-tests, integrity checked)."""
    from scripts.extract_github_schemas import fetch_tarball, read_text_member

    return read_text_member(fetch_tarball(AXE, AXE_CACHE), "package/axe.min.js")


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory) -> Path:
    """Where the browser tests put their screenshots."""
    folder = os.environ.get(SCREENSHOTS_ENV)
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path
