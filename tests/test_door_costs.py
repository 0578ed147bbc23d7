"""What a caller can make `copydesk web` spend before it knows who they are: linear time in the body, and for
`/github/webhooks` not even that until the signature is right."""

import hashlib
import hmac
import socket
import threading
import time

import pytest
import requests

from bot.github.inbound import HOOK_PATH, MAX_PAYLOAD_BYTES
from service.api.body import MAX_JSON_DEPTH, check_json_depth
from service.errors import InvalidJson
from tests.web_process import latency, shared_web_server

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running

# Generous: the quadratic pre-check took 12 s of CPU for one 64 KB body; these bodies now take milliseconds.
ANSWER_SECONDS = 5


def quotes(size: int) -> bytes:
    """`"` then `\\"` repeated: the body that made the old pre-check quadratic."""
    return b'"' + b'\\"' * ((size - 1) // 2)


def brackets(size: int) -> bytes:
    return b"[" * size


def _cpu_seconds(body: bytes) -> float:
    """The least of five timings, so a busy machine does not make a linear check look slow."""
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        try:
            check_json_depth(body)
        except InvalidJson:
            pass
        best = min(best, time.process_time() - started)
    return max(best, 1e-6)


@pytest.mark.parametrize("shape", [quotes, brackets])
def test_the_depth_check_takes_time_linear_in_the_body(shape):
    # Each step is 4 times the body: linear is about 4 times the time, quadratic 16; only a broken check misses
    # 10. From 8 KB up, so a quadratic one fails at the first step (seconds), not after hours at the last.
    sizes = [8 * 1024, 32 * 1024, 128 * 1024, 512 * 1024]
    timings = [_cpu_seconds(shape(size)) for size in sizes[:1]]
    for size in sizes[1:]:
        timings.append(_cpu_seconds(shape(size)))
        assert timings[-1] / timings[-2] < 10, f"{size // 1024} KB: {timings}"
    assert _cpu_seconds(shape(4 * 1024 * 1024)) < 1.0


def test_strings_hide_brackets_and_escaped_quotes_end_no_string():
    check_json_depth(b'{"a": "' + b"[" * 1000 + b'\\"' + b"{" * 1000 + b'"}')
    with pytest.raises(InvalidJson):
        check_json_depth(b'["\\\\"' + b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH + b"]")


@pytest.fixture(scope="module")
def shared_web(redis_server, github_app, tmp_path_factory):
    """`copydesk web` (gevent) with a GitHub App configured, so `/github/webhooks` is served. No test here changes
    the server: they send bodies it refuses, and ask while it is busy."""
    env = {
        "GITHUB_APP_ID": str(github_app.id),
        "GITHUB_PRIVATE_KEY": github_app.private_key_pem,
        "GITHUB_WEBHOOK_SECRET": github_app.webhook_secret,
    }
    with shared_web_server(redis_server, tmp_path_factory.mktemp("web"), env, workers=1) as server:
        yield server


@pytest.fixture
def web(shared_web, stack):
    """The module's server, on this test's emptied Redis with its project and key (`stack`)."""
    return shared_web


def _delivery(body: bytes, signature: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "d-1"}
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    return headers


def _signed(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[requests.Response, float]:
    started = time.monotonic()
    response = requests.post(url, data=body, headers=headers, timeout=30)
    return response, time.monotonic() - started


def test_an_unsigned_delivery_is_refused_before_its_body_is_read(web):
    # Headers promising GitHub's largest body, and no body at all: the answer cannot wait for it.
    with socket.create_connection(("127.0.0.1", web.port), timeout=ANSWER_SECONDS) as sock:
        sock.sendall(
            (
                f"POST {HOOK_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"X-GitHub-Event: ping\r\nX-GitHub-Delivery: d-0\r\nContent-Length: {MAX_PAYLOAD_BYTES}\r\n"
                "\r\n"
            ).encode()
        )
        assert sock.recv(100).startswith(b"HTTP/1.1 401 ")


@pytest.mark.parametrize("shape", [quotes, brackets])
def test_a_wrongly_signed_delivery_is_refused_without_being_parsed(web, github_app, shape):
    body = shape(4 * 1024 * 1024)
    # Signed with another secret: parsed, this body would be refused as invalid JSON (400), not as unsigned (401).
    response, took = _post(web.url + HOOK_PATH, body, _delivery(body, _signed("not-the-secret", body)))
    assert response.status_code == 401 and response.json()["code"] == "unauthorized"
    assert took < ANSWER_SECONDS
    # The same body signed with the App's secret is parsed, and refused in linear time as well.
    response, took = _post(web.url + HOOK_PATH, body, _delivery(body, _signed(github_app.webhook_secret, body)))
    assert response.status_code == 400 and response.json()["code"] == "invalid_json"
    assert took < ANSWER_SECONDS


def test_hostile_bodies_do_not_stall_the_process_for_others(web, stack):
    job_url = f"{web.url}/v2/agent/{stack.project_id}/jobs"
    auth = {"Authorization": f"Bearer {stack.key}"}
    # The attack of the issue (four unsigned 48 KB bodies at once), ten times over, with the API's own limit too.
    body, api_body = quotes(48 * 1024), quotes(60 * 1024)
    unsigned = _delivery(body, "sha256=" + "0" * 64)
    answers: list[int] = []

    def attack() -> None:
        for _ in range(10):
            answers.append(requests.post(web.url + HOOK_PATH, data=body, headers=unsigned, timeout=30).status_code)
            answers.append(
                requests.post(
                    f"{web.url}/v2/agent/{stack.project_id}/job",
                    data=api_body,
                    timeout=30,
                    headers={**auth, "Content-Type": "application/json"},
                ).status_code
            )

    attackers = [threading.Thread(target=attack, daemon=True) for _ in range(4)]
    for thread in attackers:
        thread.start()
    probes = [
        max(latency(f"{web.url}/healthz", timeout=ANSWER_SECONDS), latency(job_url, auth, timeout=ANSWER_SECONDS))
        for _ in range(5)
    ]
    deadline = time.monotonic() + 60
    for thread in attackers:
        thread.join(timeout=max(0, deadline - time.monotonic()))
    assert max(probes) < ANSWER_SECONDS, probes
    assert not any(thread.is_alive() for thread in attackers)
    assert sorted(set(answers)) == [400, 401] and len(answers) == 80


def test_bodies_over_the_limits_are_refused_from_their_declared_length(web, stack):
    auth = {"Authorization": f"Bearer {stack.key}", "Content-Type": "application/json"}
    response = requests.post(
        f"{web.url}/v2/agent/{stack.project_id}/job", data=b" " * (64 * 1024 + 1), headers=auth, timeout=30
    )
    assert response.status_code == 413 and response.json()["code"] == "payload_too_large"
    # Without a length (chunked), the read stops at the limit.
    chunks = (b" " * 16 * 1024 for _ in range(64))
    response = requests.post(f"{web.url}/v2/agent/{stack.project_id}/job", data=chunks, headers=auth, timeout=30)
    assert response.status_code == 413 and response.json()["code"] == "payload_too_large"
    # A signature header gets the body read, up to GitHub's limit and not past it.
    with socket.create_connection(("127.0.0.1", web.port), timeout=ANSWER_SECONDS) as sock:
        sock.sendall(
            (
                f"POST {HOOK_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"X-Hub-Signature-256: sha256={'0' * 64}\r\nX-GitHub-Event: ping\r\nX-GitHub-Delivery: d-0\r\n"
                f"Content-Length: {MAX_PAYLOAD_BYTES + 1}\r\n\r\n"
            ).encode()
        )
        assert sock.recv(100).startswith(b"HTTP/1.1 413 ")
