"""End-to-end test rig: the real app on a real HTTP server, real RQ workers, a local project and a key."""

import json
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests
import rq
from werkzeug.serving import make_server

from bot import context
from service.queues import worker_queues
from service.settings import Settings


def wait_until(predicate, timeout: float, what: str, interval: float = 0.05):
    """Poll `predicate` until it returns something truthy, and return that; fail with `what` after `timeout`
    seconds."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out after {round(timeout, 1)} s waiting for {what}"
        time.sleep(interval)
    return value


def within_one_window(window_seconds: int, needed: float) -> None:
    """Return once the current fixed rate-limit window (service.store.ratelimit: aligned to the clock) has
    `needed` seconds left, so that what a test counts next falls in one window."""

    def left() -> float:
        return window_seconds - time.time() % window_seconds

    if left() < needed:
        wait_until(lambda: left() >= needed, needed + 1, "the next rate-limit window")


class LiveServer:
    """A WSGI app served on 127.0.0.1 (or another loopback `host`) from a background thread, over TLS with
    `ssl_context`. An app that needs the server's URL to be built is given later with `mount`."""

    def __init__(
        self,
        app=None,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.host = host
        self.scheme = "https" if ssl_context else "http"
        # Without a given port the socket takes one itself (0): a port picked free beforehand can be taken by
        # another process before the bind, which failed a whole module's set-up.
        self._server = make_server(host, port or 0, app, threaded=True, ssl_context=ssl_context)
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def mount(self, app) -> "LiveServer":
        """Serve `app` from now on (the socket is already bound, so its URL could go into the app's settings)."""
        self._server.app = app
        return self

    def __enter__(self) -> "LiveServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._thread.join()


class CheckedSession(requests.Session):
    """A requests session that validates every API response against the OpenAPI document."""

    def __init__(self, base_url: str, validator) -> None:
        super().__init__()
        self.base_url = base_url
        self._validator = validator

    def request(self, method, url, *args, **kwargs):
        full = url if url.startswith("http") else self.base_url + url
        kwargs.setdefault("timeout", 10)
        response = super().request(method, full, *args, **kwargs)
        path = full[len(self.base_url) :].split("?", 1)[0]
        if path.startswith("/v2/") and self._validator is not None:
            body = response.json() if response.content else None
            self._validator.validate(method, path, response.status_code, body, response.headers)
        return response


@dataclass
class Stack:
    settings: Settings
    ctx: context.Context
    url: str
    repo: Path
    project_id: str
    key: str
    api: CheckedSession
    script_path: Path
    extra: dict = field(default_factory=dict)

    def script(self, *runs: list[dict]) -> None:
        """Set the scripted model's runs: each a list of {"tool", "args"} steps."""
        self.script_path.write_text(json.dumps({"runs": [{"steps": steps} for steps in runs]}))

    def create(self, prompt: str = "Improve the docs", **fields) -> requests.Response:
        return self.api.post(f"/v2/agent/{self.project_id}/job", json={"prompt": prompt, **fields})

    def message(self, job_id: str, prompt: str) -> requests.Response:
        return self.api.post(f"/v2/agent/{self.project_id}/job/{job_id}/message", json={"prompt": prompt})

    def job(self, job_id: str) -> dict:
        response = self.api.get(f"/v2/agent/{self.project_id}/job/{job_id}")
        assert response.status_code == 200, response.text
        return response.json()

    def conversation(self, job_id: str) -> list[dict]:
        return self.api.get(f"/v2/agent/{self.project_id}/job/{job_id}/messages").json()["messages"]

    def operator(self) -> requests.Session:
        """A requests session signed in to the dashboard with the operator's one-time link."""
        from bot.dashboard.operator import issue_login_link

        session = requests.Session()
        response = session.get(issue_login_link(self.ctx.services.redis, self.url), timeout=10)
        assert response.status_code == 200 and response.url.endswith("/dashboard/"), response.text
        return session

    def drain(self) -> None:
        """Run a worker in this process until the events and runs queues are empty (events first, as
        `copydesk worker` serves them)."""
        drain_queues(self.ctx.services.redis, self.settings.queue_name)

    def env(self) -> dict[str, str]:
        """Environment variables that point a `copydesk` process at this stack (all of its settings)."""
        return self.settings.to_env()


class _BurstWorker(rq.SimpleWorker):
    """An in-process RQ worker without RQ's command channel (nothing sends it commands: Copydesk uses none). RQ's
    channel thread reads with a 60 s time-out; when the worker ends, the reply to its UNSUBSCRIBE often wakes the
    thread before RQ sets the thread's stop flag, and RQ's 1 s join then waits in vain: up to a second a drain."""

    def subscribe(self) -> None:
        pass


def lines_until(stream, marker: str, timeout: float) -> list[str]:
    """The lines a process writes to `stream` (a text pipe) up to and including the first that holds `marker`;
    fails, with what was read, if the stream ends first or `timeout` seconds pass."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while not lines or marker not in lines[-1]:
        line = stream.readline()
        assert line and time.monotonic() < deadline, "".join(lines)
        lines.append(line)
    return lines


def drain_queues(redis_client, queue_name: str) -> None:
    """Run a worker in this process on the GitHub events, webhook attempts and runs queues of `queue_name`, in
    the order `copydesk worker` serves them, until they are empty."""
    queues = [rq.Queue(name, connection=redis_client) for name in worker_queues(queue_name)]
    _BurstWorker(queues, connection=redis_client).work(burst=True, logging_level="WARNING")


def deliver_webhooks(ctx, timeout: float = 30) -> None:
    """Fan the outbox out once in this process, then make the webhook attempts due now on this process's delivery
    lanes until none is left or being made (as `copydesk worker` does beside its runs)."""
    from bot.worker import delivery_lanes, fanout

    fanout(ctx).run_once(block_ms=100)
    lanes = delivery_lanes(ctx)
    try:
        wait_until(lambda: not lanes.run_once() and not lanes.busy, timeout, "the due webhook attempts", interval=0.02)
    finally:
        lanes.close()
