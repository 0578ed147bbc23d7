"""The doors anyone may use before signing in are limited per client address, answer 429 with Retry-After past
the limit, and keep little in Redis: GitHub sign-in starts, the operator's login link, the App registration
links. Driven against the real `copydesk web` (gunicorn, gevent)."""

import http.client
import time

import pytest

from bot.dashboard.operator import issue_login_link
from bot.dashboard.web import MAX_NEXT_CHARS
from bot.door_limits import WINDOW_SECONDS, client_of
from tests.conftest import free_port
from tests.harness import wait_until
from tests.web_process import WebServer, shared_web_server

PER_MINUTE = 4
# gunicorn refuses a request line past 4094 bytes; this `next` is about as long as one can be.
LONGEST_NEXT = "/dashboard/" + "a" * 3900
STATE_KEYS = "cd:dash:oauth-state:*"


@pytest.fixture(scope="module")
def shared_web(redis_server, github_app, tmp_path_factory):
    """`copydesk web` with a GitHub App and its OAuth client configured, so sign-in with GitHub is on. The limits'
    counts and the sign-in states are in Redis, which each test's `stack` empties: no test sees another's."""
    env = {
        "GITHUB_APP_ID": str(github_app.id),
        "GITHUB_PRIVATE_KEY": github_app.private_key_pem,
        "GITHUB_WEBHOOK_SECRET": github_app.webhook_secret,
        "GITHUB_CLIENT_ID": github_app.client_id,
        "GITHUB_CLIENT_SECRET": github_app.client_secret,
        "COPYDESK_ANONYMOUS_PER_MINUTE": str(PER_MINUTE),
    }
    with shared_web_server(redis_server, tmp_path_factory.mktemp("web"), env, workers=1) as server:
        yield server


@pytest.fixture
def web(shared_web, stack):
    """The module's server, on this test's emptied Redis (`stack`)."""
    return shared_web


def get(web: WebServer, path: str, *, source: str = "127.0.0.1") -> http.client.HTTPResponse:
    """GET `path` from the client address `source` (any 127.x address reaches the server on loopback)."""
    connection = http.client.HTTPConnection("127.0.0.1", web.port, timeout=10, source_address=(source, 0))
    connection.request("GET", path)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def _statuses_until_refused(web: WebServer, path: str, source: str = "127.0.0.1") -> list[int]:
    """Statuses of PER_MINUTE + 1 requests, within one window of the limiter."""
    # A fixed window: start far enough from its end that all requests fall in the same one.
    wait_until(lambda: time.time() % WINDOW_SECONDS < WINDOW_SECONDS - 10, timeout=15, what="a fresh window")
    return [get(web, path, source=source).status for _ in range(PER_MINUTE + 1)]


def test_sign_in_starts_are_limited_per_address_and_each_stores_little(web, redis_client):
    statuses = _statuses_until_refused(web, f"/dashboard/login/github?next={LONGEST_NEXT}")
    assert statuses == [303] * PER_MINUTE + [429]
    refused = get(web, "/dashboard/login/github")
    assert refused.status == 429 and 0 < int(refused.headers["Retry-After"]) <= WINDOW_SECONDS
    states = list(redis_client.scan_iter(STATE_KEYS))
    assert len(states) == PER_MINUTE  # the refused starts stored nothing
    stored = max(int(redis_client.memory_usage(key)) for key in states)
    assert stored < 300, f"{stored} bytes per sign-in start"  # about 4.4 KB before `next` was bounded
    assert all(b"aaaa" not in redis_client.get(key) for key in states)  # the long `next` fell back to home
    # Another address is counted on its own.
    assert get(web, "/dashboard/login/github", source="127.0.0.2").status == 303


def test_a_bounded_next_is_kept_for_after_sign_in(web, redis_client):
    wanted = "/dashboard/" + "b" * (MAX_NEXT_CHARS - len("/dashboard/"))
    assert get(web, f"/dashboard/login/github?next={wanted}", source="127.0.0.3").status == 303
    [key] = redis_client.scan_iter(STATE_KEYS)
    assert wanted.encode() in redis_client.get(key)
    assert int(redis_client.memory_usage(key)) < 800


def test_login_link_redemptions_are_limited_per_address(web, stack, redis_client):
    statuses = _statuses_until_refused(web, "/dashboard/login/link?token=guessed", source="127.0.0.4")
    assert statuses == [403] * PER_MINUTE + [429]
    # Even a good link waits out the window from that address; from another it signs in.
    link = issue_login_link(redis_client, web.url).removeprefix(web.url)
    assert get(web, link, source="127.0.0.4").status == 429
    assert get(web, link, source="127.0.0.5").status == 303


def test_registration_links_are_limited_per_address(web):
    statuses = _statuses_until_refused(web, "/github/register?token=guessed", source="127.0.0.6")
    assert statuses == [403] * PER_MINUTE + [429]
    refused = get(web, "/github/register/done?code=abc&state=forged", source="127.0.0.6")
    assert refused.status == 429 and int(refused.headers["Retry-After"]) > 0
    assert get(web, "/github/register/done?code=abc&state=forged", source="127.0.0.7").status == 400


@pytest.mark.parametrize(
    ("address", "client"),
    [
        ("203.0.113.9", "203.0.113.9"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::"),
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::"),
        ("::ffff:203.0.113.9", "203.0.113.9"),
        (None, "unknown"),
        ("", "unknown"),
    ],
)
def test_an_ipv6_client_counts_as_its_whole_slash_64(address, client):
    assert client_of(address) == client


def test_with_redis_down_the_doors_answer_503_not_500(stack, github_app, tmp_path):
    env = {
        **stack.env(),
        "COPYDESK_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
        "GITHUB_APP_ID": str(github_app.id),
        "GITHUB_PRIVATE_KEY": github_app.private_key_pem,
        "GITHUB_WEBHOOK_SECRET": github_app.webhook_secret,
        "GITHUB_CLIENT_ID": github_app.client_id,
        "GITHUB_CLIENT_SECRET": github_app.client_secret,
    }
    with WebServer(env, free_port(), tmp_path / "web.log", workers=1) as web:
        assert get(web, "/dashboard/login/github").status == 503
        assert get(web, "/dashboard/login/link?token=x").status == 503
