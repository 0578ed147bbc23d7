"""Open event streams are partitioned between callers and end when access does: caps per key and per account
(429) below the per-process cap, and a key revoked or expired, or a dashboard session signed out, ends its
streams within a keep-alive period."""

import threading
import time
from contextlib import ExitStack
from datetime import timedelta

import pytest
import requests

from bot.dashboard.operator import issue_login_link
from service.clock import iso, now
from service.models import KeyEvent
from service.store.apikeys import ApiKeyStore
from tests.conftest import DOCS, free_port
from tests.dashboard_fixtures import Browserless
from tests.event_reading import events_url, read_sse
from tests.web_process import WebServer

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running

KEEPALIVE = 1
ENDS_WITHIN = KEEPALIVE + 4  # the re-check comes within a keep-alive period; the rest is slack for a busy machine


class OpenStream:
    """A streaming GET read into `records` by a thread; `ended_at` is when the server closed it."""

    def __init__(self, session: requests.Session, url: str, **kwargs) -> None:
        self.records: list[dict] = []
        self.ended_at: float | None = None
        self._closing = False
        self.response = session.get(url, stream=True, timeout=30, **kwargs)
        assert self.response.status_code == 200, self.response.text
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            read_sse(self.response, time.monotonic() + 60, self.records)
        except Exception:
            if not self._closing:  # reading a stream this side closed fails, and that is no finding
                raise
        finally:
            self.ended_at = time.monotonic()

    def close(self) -> None:
        """Go away as a client does."""
        self._closing = True
        self.response.close()
        self._thread.join(timeout=10)

    def wait_for_keepalive(self) -> None:
        deadline = time.monotonic() + 10
        while {"comment": "keep-alive"} not in self.records:
            assert time.monotonic() < deadline and self.ended_at is None, "no keep-alive on the open stream"
            time.sleep(0.05)

    def ends_within(self, seconds: float) -> float:
        """How long after now the server ended the stream; fails if it is still open after `seconds`."""
        started = time.monotonic()
        self._thread.join(timeout=seconds)
        assert self.ended_at is not None, f"the stream was still open {seconds} s later"
        self.response.close()
        return self.ended_at - started


def _active_job(stack) -> str:
    return stack.create().json()["id"]  # no worker runs it: its stream stays open until something else ends it


def test_a_revoked_key_stops_its_open_stream_within_a_keepalive(stack_factory):
    stack = stack_factory(sse_keepalive_seconds=KEEPALIVE)
    job_id = _active_job(stack)
    key = stack.ctx.services.keys.authenticate(f"Bearer {stack.key}")
    stream = OpenStream(requests.Session(), events_url(stack, job_id), headers={"Authorization": f"Bearer {stack.key}"})
    stream.wait_for_keepalive()
    stack.ctx.services.keys.revoke(key.id)
    assert stream.ends_within(ENDS_WITHIN) < ENDS_WITHIN
    assert stream.records[-1] == {"comment": "access ended"}
    again = requests.get(events_url(stack, job_id), headers={"Authorization": f"Bearer {stack.key}"}, timeout=10)
    assert again.status_code == 401  # an EventSource that reconnects is refused, and stops


def test_a_key_that_expires_stops_its_open_stream_within_a_keepalive(stack_factory):
    stack = stack_factory(sse_keepalive_seconds=KEEPALIVE)
    job_id = _active_job(stack)
    store = ApiKeyStore(stack.ctx.services.redis)
    key = store.find(stack.ctx.services.keys.authenticate(f"Bearer {stack.key}").id)
    assert key is not None
    stream = OpenStream(requests.Session(), events_url(stack, job_id), headers={"Authorization": f"Bearer {stack.key}"})
    stream.wait_for_keepalive()
    # The expiry is set once the stream is open (the stream asks for the key afresh), so a slow start cannot
    # use it up before the stream opens.
    expires = now() + timedelta(seconds=1)
    key.expires_at = iso(expires)
    store.add(key, KeyEvent(at=iso(now()), account=key.account, actor="test", action="created", key_id=key.id))
    time.sleep(max(0.0, (expires - now()).total_seconds()))  # the expiry itself: a moment in time, not an event
    assert stream.ends_within(ENDS_WITHIN) < ENDS_WITHIN
    assert stream.records[-1] == {"comment": "access ended"}


def test_signing_out_stops_the_dashboards_open_stream_within_a_keepalive(stack_factory):
    stack = stack_factory(sse_keepalive_seconds=KEEPALIVE)
    job_id = _active_job(stack)
    browser = Browserless(stack.url)
    assert browser.get(issue_login_link(stack.ctx.services.redis, stack.url)).url.endswith("/dashboard/")
    token = browser.csrf()
    stream = OpenStream(browser, f"{stack.url}/dashboard/projects/{stack.project_id}/jobs/{job_id}/events")
    stream.wait_for_keepalive()
    assert browser.post("/dashboard/logout", data={"csrf_token": token}).url.endswith("/dashboard/signin")
    assert stream.ends_within(ENDS_WITHIN) < ENDS_WITHIN
    assert stream.records[-1] == {"comment": "access ended"}


def test_one_key_holding_its_caps_worth_of_streams_leaves_other_accounts_answered(
    stack_factory, make_repo, tmp_path, openapi_validator
):
    # Small caps, same shape as the defaults (20 per key, 50 per account, 200 per process, 300 connections).
    caps = dict(max_streams_per_key=3, max_streams_per_account=5, max_streams=10, redis_max_connections=20)
    stack = stack_factory(sse_keepalive_seconds=KEEPALIVE, **caps)
    services = stack.ctx.services
    job_id = _active_job(stack)
    other_project = stack.ctx.local.register(
        services.projects, path=make_repo(DOCS, name="other"), ref="main", account="other"
    )
    _, other_key = services.keys.create(account="other", name="bystander", host="local")
    _, second_key = services.keys.create(account="local", name="second", host="local")
    other_auth = {"Authorization": f"Bearer {other_key}"}
    port = free_port()
    env = {**stack.env(), "COPYDESK_BASE_URL": f"http://127.0.0.1:{port}"}
    with WebServer(env, port, tmp_path / "web.log", workers=1) as web, ExitStack() as held:
        other_job = requests.post(
            f"{web.url}/v2/agent/{other_project.id}/job", json={"prompt": "FAQ"}, headers=other_auth, timeout=10
        ).json()
        url = f"{web.url}/v2/agent/{stack.project_id}/job/{job_id}/events?follow=true"

        def attempt(plaintext: str) -> requests.Response:
            response = requests.get(url, headers={"Authorization": f"Bearer {plaintext}"}, stream=True, timeout=10)
            held.callback(response.close)
            return response

        # One key: 30 attempts, its cap's worth held, the rest refused with 429 and Retry-After.
        answers = [attempt(stack.key) for _ in range(30)]
        assert [r.status_code for r in answers].count(200) == 3
        refused = [r for r in answers if r.status_code != 200]
        assert {r.status_code for r in refused} == {429}
        assert all(int(r.headers["Retry-After"]) > 0 for r in refused)
        assert (
            refused[0].json()["code"] == "rate_limited"
            and "COPYDESK_MAX_STREAMS_PER_KEY" in refused[0].json()["detail"]
        )
        openapi_validator.validate(
            "GET", f"/v2/agent/{stack.project_id}/job/{job_id}/events", 429, refused[0].json(), refused[0].headers
        )
        # Another key of the same account: stopped by the account's cap.
        assert [attempt(second_key).status_code for _ in range(4)] == [200, 200, 429, 429]

        # Meanwhile another account's requests all answer, and it can still open a stream of its own.
        other_job_url = f"{web.url}/v2/agent/{other_project.id}/job/{other_job['id']}"
        assert [requests.get(other_job_url, headers=other_auth, timeout=10).status_code for _ in range(20)] == [
            200
        ] * 20
        dashboard = Browserless(web.url)
        assert dashboard.get(issue_login_link(services.redis, web.url)).url.endswith("/dashboard/")
        pages = [
            dashboard.get(f"/dashboard/projects/{other_project.id}/jobs/{other_job['id']}").status_code
            for _ in range(5)
        ]
        assert pages == [200] * 5
        own = requests.get(f"{other_job_url}/events", headers=other_auth, stream=True, timeout=10)
        held.callback(own.close)
        assert own.status_code == 200


def test_a_dashboard_session_is_capped_like_a_key(stack_factory):
    stack = stack_factory(sse_keepalive_seconds=KEEPALIVE, max_streams_per_key=2)
    job_id = _active_job(stack)
    browser = Browserless(stack.url)
    assert browser.get(issue_login_link(stack.ctx.services.redis, stack.url)).url.endswith("/dashboard/")
    url = f"{stack.url}/dashboard/projects/{stack.project_id}/jobs/{job_id}/events"
    held = [OpenStream(browser, url) for _ in range(2)]
    refused = browser.get(url, stream=True)
    assert refused.status_code == 429
    refused.close()
    held[0].close()  # the slot comes back once the server notices, at the next keep-alive at the latest
    deadline = time.monotonic() + 10
    while (again := browser.get(url, stream=True)).status_code != 200:
        again.close()
        assert time.monotonic() < deadline, "the closed stream's slot never came back"
        time.sleep(0.2)
    again.close()
    held[1].close()
