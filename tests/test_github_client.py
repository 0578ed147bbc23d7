"""The GitHub client against a scripted HTTP server: headers, pagination, retries, rate limits, errors, 401s."""

import json
import logging
import time
from contextlib import ExitStack

import pytest
import requests
from gidgethub import BadRequest, InvalidField

from bot.github.client import API_VERSION, GitHubClient, GitHubRateLimited, GitHubUnavailable
from tests.conftest import free_port
from tests.harness import LiveServer
from tests.scripted_github import Answer

TOKEN = "ghs_secretTokenValue123"
NOW = 1_700_000_000.0


@pytest.fixture
def github(scripted_github_server):
    return scripted_github_server.reset()


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def client(github, sleeps):
    return make_client(github.url, sleeps)


def make_client(url, sleeps, **options):
    options = {"auth": lambda: f"token {TOKEN}", "sleep": sleeps.append, "clock": lambda: NOW, "timeout": 2, **options}
    return GitHubClient(requests.Session(), api_url=url, **options)


def test_requests_carry_github_headers_and_json(github, client):
    github.then(Answer(body={"name": "docs"}))
    assert client.getitem("/repos/{owner}/{repo}", {"owner": "acme", "repo": "docs"}) == {"name": "docs"}
    assert client.post("/repos/acme/docs/issues/1/comments", data={"body": "hi ✓"}) == {"ok": True}
    get, post = github.seen
    assert (get.method, get.path) == ("GET", "/repos/acme/docs")
    assert get.headers["Authorization"] == f"token {TOKEN}"
    assert get.headers["User-Agent"] == "copydesk"
    assert get.headers["Accept"] == "application/vnd.github.v3+json"
    assert get.headers["X-Github-Api-Version"] == API_VERSION
    assert (post.method, json.loads(post.body)) == ("POST", {"body": "hi ✓"})
    assert post.headers["Content-Type"].startswith("application/json")


def test_auth_is_asked_for_every_request(github, sleeps):
    tokens = iter(["token one", "token two", "token three"])
    client = make_client(github.url, sleeps, auth=lambda: next(tokens))
    github.then(Answer(502), Answer(200))
    client.getitem("/a")
    client.patch("/b", data={"x": 1})
    assert [s.headers["Authorization"] for s in github.seen] == ["token one", "token two", "token three"]


def test_no_auth_sends_no_authorization(github, sleeps):
    make_client(github.url, sleeps, auth=None).getitem("/zen")
    assert "Authorization" not in github.seen[0].headers


def test_put_and_delete_without_body_and_204(github, client):
    github.then(Answer(204, body=None), Answer(204, body=None))
    assert client.put("/user/starred/acme/docs") is None
    assert client.delete("/repos/acme/docs/git/refs/heads/x") is None
    assert [(s.method, s.body) for s in github.seen] == [("PUT", b""), ("DELETE", b"")]


def test_getiter_follows_next_links(github, client):
    base = github.url
    github.then(
        Answer(body=[1, 2], headers={"Link": f'<{base}/items?page=2>; rel="next", <{base}/items?page=3>; rel="last"'}),
        Answer(body=[3, 4], headers={"Link": f'<{base}/items?page=3>; rel="next", <{base}/items?page=1>; rel="first"'}),
        Answer(body=[5]),
    )
    assert list(client.getiter("/items{?per_page}", {"per_page": 2})) == [1, 2, 3, 4, 5]
    assert [s.path for s in github.seen] == ["/items?per_page=2", "/items?page=2", "/items?page=3"]


def test_getiter_takes_the_list_under_iterable_key(github, client):
    github.then(
        Answer(
            body={"total_count": 3, "repositories": ["a", "b"]},
            headers={"Link": f'<{github.url}/installation/repositories?page=2>; rel="next"'},
        ),
        Answer(body={"total_count": 3, "repositories": ["c"]}),
    )
    assert list(client.getiter("/installation/repositories", iterable_key="repositories")) == ["a", "b", "c"]


def test_getiter_is_lazy(github, client):
    github.then(Answer(body=[1], headers={"Link": f'<{github.url}/items?page=2>; rel="next"'}))
    assert next(iter(client.getiter("/items"))) == 1
    assert len(github.seen) == 1


def test_5xx_is_retried_with_growing_jittered_backoff(github, client, sleeps):
    github.then(Answer(502), Answer(503), Answer(500), Answer(200, body={"done": 1}))
    assert client.getitem("/flaky") == {"done": 1}
    assert len(github.seen) == 4
    assert len(sleeps) == 3
    assert all(0 <= delay <= 2**i for i, delay in enumerate(sleeps))  # backoff 1 s * 2^(n-1), full jitter


def test_5xx_after_every_retry_is_unavailable(github, client, sleeps):
    github.then(*[Answer(502, body={"message": "Server Error"})] * 5)
    with pytest.raises(GitHubUnavailable, match=r"failed GET http://127.0.0.1:\d+/broken 4 times \(last: HTTP 502\)"):
        client.getitem("/broken")
    assert len(github.seen) == 4 and len(sleeps) == 3


def test_timeouts_are_retried(github, sleeps):
    client = make_client(github.url, sleeps, timeout=0.3)
    github.then(Answer(delay=3.0), Answer(body={"fast": True}))
    assert client.getitem("/slow") == {"fast": True}
    assert len(sleeps) == 1


def test_connection_refused_is_retried_then_unavailable(sleeps):
    client = make_client(f"http://127.0.0.1:{free_port()}", sleeps, retries=2)
    with pytest.raises(GitHubUnavailable, match=r"3 times \(last: ConnectionError\)"):
        client.getitem("/nobody-home")
    assert len(sleeps) == 2


# -- a body that is not JSON (a diff), capped in size and time --------------------------------------


def streaming(chunks: int, size: int, pause: float = 0.0):
    """A WSGI app that answers 200 with `chunks` chunks of `size` bytes each (lines of "x"), `pause` s apart."""

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/vnd.github.diff; charset=utf-8")])

        def body():
            for _ in range(chunks):
                yield b"x" * (size - 1) + b"\n"
                time.sleep(pause)

        return body()

    return app


def test_getbytes_reads_at_most_the_cap_and_says_whether_there_was_more(sleeps):
    with LiveServer(streaming(chunks=1000, size=1000)) as server:  # 1 MB, of which the client reads a little
        client = make_client(server.url, sleeps)
        line = b"x" * 999 + b"\n"
        assert client.getbytes("/diff", accept="application/vnd.github.diff", limit=2500) == (
            line * 2 + b"x" * 500,
            True,
        )
        assert client.getbytes("/diff", accept="application/vnd.github.diff", limit=1_000_000)[1] is False


def test_getbytes_gives_up_on_a_body_that_trickles_past_the_read_timeout(sleeps):
    # Each chunk in time, the whole (20 s) not; the bound is ten read time-outs, which only reading it all misses.
    with LiveServer(streaming(chunks=200, size=10, pause=0.1)) as server:
        client = make_client(server.url, sleeps, timeout=(2, 1), retries=0)
        started = time.monotonic()
        with pytest.raises(GitHubUnavailable, match="ReadTimeout"):
            client.getbytes("/diff", accept="application/vnd.github.diff", limit=10_000)
        assert time.monotonic() - started < 10


def test_getbytes_retries_5xx_and_raises_4xx_like_a_get(github, client, sleeps):
    github.then(Answer(502, body={"message": "Server Error"}), Answer(404, body={"message": "Not Found"}))
    with pytest.raises(BadRequest) as raised:
        client.getbytes("/repos/acme/docs/compare/main...x", accept="application/vnd.github.diff", limit=100)
    assert raised.value.status_code == 404 and len(sleeps) == 1


# -- POST: retried only when it cannot have been carried out, or when doing it twice is harmless ----


def test_a_post_answered_5xx_is_not_retried(github, client, sleeps):
    github.then(Answer(502, body={"message": "Server Error"}), Answer(201, body={"id": 2}))
    with pytest.raises(
        GitHubUnavailable,
        match=r"failed POST http://127.0.0.1:\d+/repos/acme/docs/issues/1/comments "
        r"\(HTTP 502\); not retried, as GitHub may have carried it out",
    ):
        client.post("/repos/acme/docs/issues/1/comments", data={"body": "once"})
    assert len(github.seen) == 1 and sleeps == []


def test_a_post_that_times_out_is_not_retried(github, sleeps):
    client = make_client(github.url, sleeps, timeout=0.3)
    github.then(Answer(201, delay=3.0))
    with pytest.raises(GitHubUnavailable, match=r"\(ReadTimeout\); not retried") as caught:
        client.post("/repos/acme/docs/pulls/1/comments/5/replies", data={"body": "once"})
    assert isinstance(caught.value.__cause__, requests.exceptions.ReadTimeout)
    assert len(github.seen) == 1 and sleeps == []


def test_a_post_that_cannot_connect_is_retried(github):
    port = free_port()
    with ExitStack() as servers:

        def sleep(delay):  # GitHub comes back while the client backs off
            servers.enter_context(LiveServer(github, port=port))

        client = make_client(f"http://127.0.0.1:{port}", [], sleep=sleep)
        github.then(Answer(201, body={"id": 3}))
        assert client.post("/repos/acme/docs/issues/1/comments", data={"body": "once"}) == {"id": 3}
    assert [(s.method, json.loads(s.body)) for s in github.seen] == [("POST", {"body": "once"})]


def test_a_post_that_never_connects_is_unavailable(sleeps):
    client = make_client(f"http://127.0.0.1:{free_port()}", sleeps, retries=2)
    with pytest.raises(GitHubUnavailable, match=r"failed POST .* 3 times \(last: ConnectionError\)"):
        client.post("/nobody-home", data={})
    assert len(sleeps) == 2


def test_an_idempotent_post_answered_5xx_is_retried(github, client, sleeps):
    github.then(Answer(502), Answer(503), Answer(201, body={"id": 4}))
    assert client.post("/repos/acme/docs/pulls", data={"head": "b"}, idempotent=True) == {"id": 4}
    assert [s.method for s in github.seen] == ["POST"] * 3 and len(sleeps) == 2


def test_an_idempotent_post_that_times_out_is_retried(github, sleeps):
    client = make_client(github.url, sleeps, timeout=0.3)
    github.then(Answer(delay=3.0), Answer(201, body={"content": "eyes"}))
    assert client.post("/reactions", data={"content": "eyes"}, idempotent=True) == {"content": "eyes"}
    assert len(sleeps) == 1


def test_the_other_methods_are_still_retried_after_5xx(github, client, sleeps):
    github.then(Answer(502), Answer(200), Answer(502), Answer(204, body=None), Answer(502), Answer(204, body=None))
    client.patch("/a", data={"x": 1})
    client.put("/b")
    client.delete("/c")
    assert [s.method for s in github.seen] == ["PATCH", "PATCH", "PUT", "PUT", "DELETE", "DELETE"]
    assert len(sleeps) == 3


# -- 401: new credentials, one more try -------------------------------------------------------------


def test_a_401_asks_for_new_credentials_and_tries_once_more(github, sleeps):
    tokens, refused = iter(["token revoked", "token fresh"]), []
    client = make_client(github.url, sleeps, auth=lambda: next(tokens), on_unauthorized=lambda: refused.append(1))
    github.then(Answer(401, body={"message": "Bad credentials"}), Answer(201, body={"id": 5}))
    assert client.post("/repos/acme/docs/issues/1/comments", data={"body": "once"}) == {"id": 5}
    assert refused == [1] and sleeps == []
    assert [s.headers["Authorization"] for s in github.seen] == ["token revoked", "token fresh"]


def test_a_second_401_is_raised(github, sleeps):
    refused = []
    client = make_client(github.url, sleeps, on_unauthorized=lambda: refused.append(1))
    github.then(*[Answer(401, body={"message": "Bad credentials"})] * 3)
    with pytest.raises(BadRequest) as caught:
        client.getitem("/repos/acme/docs")
    assert caught.value.status_code == 401
    assert refused == [1] and len(github.seen) == 2


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_rate_limit_waits_retry_after(github, client, sleeps, status):
    github.then(
        Answer(status, body={"message": "You have exceeded a secondary rate limit."}, headers={"Retry-After": "7"}),
        Answer(body={"after": "wait"}),
    )
    assert client.post("/repos/acme/docs/issues/1/comments", data={"body": "x"}) == {"after": "wait"}
    assert sleeps == [7.0]
    assert len(github.seen) == 2


def test_secondary_rate_limit_without_headers_waits_a_minute(github, client, sleeps):
    github.then(Answer(403, body={"message": "You have exceeded a secondary rate limit. Please wait."}))
    client.getitem("/x")
    assert sleeps == [60.0]


def test_wait_longer_than_the_bound_fails_with_when_to_retry(github, client, sleeps):
    github.then(Answer(429, headers={"Retry-After": "3600"}))
    with pytest.raises(GitHubRateLimited) as caught:
        client.getitem("/x")
    assert caught.value.retry_at == NOW + 3600
    assert "retry after 2023-11-14T23:13:20Z (in 3600 s)" in str(caught.value)
    assert sleeps == [] and len(github.seen) == 1


def test_waits_count_against_one_bound_per_request(github, sleeps):
    client = make_client(github.url, sleeps, max_wait=20)
    github.then(*[Answer(429, headers={"Retry-After": "8"})] * 3)
    with pytest.raises(GitHubRateLimited):
        client.getitem("/x")
    assert sleeps == [8.0, 8.0]  # a third wait would pass 20 s


def test_primary_rate_limit_waits_for_the_reset(github, client, sleeps):
    limited = {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 30)}
    github.then(Answer(403, body={"message": "API rate limit exceeded"}, headers=limited), Answer(body=[]))
    assert client.getitem("/x") == []
    assert sleeps == [31.0]  # until the reset second has passed


def test_primary_rate_limit_too_far_off_raises(github, client, sleeps):
    limited = {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 1800)}
    github.then(Answer(403, body={"message": "API rate limit exceeded"}, headers=limited))
    with pytest.raises(GitHubRateLimited) as caught:
        client.getitem("/x")
    assert caught.value.retry_at == NOW + 1801
    assert sleeps == []


@pytest.mark.parametrize(
    "status, body, error",
    [
        (404, {"message": "Not Found"}, BadRequest),
        (401, {"message": "Bad credentials"}, BadRequest),
        (403, {"message": "Resource not accessible by integration"}, BadRequest),
        (
            422,
            {
                "message": "Validation Failed",
                "errors": [{"resource": "PullRequest", "field": "head", "code": "invalid"}],
            },
            InvalidField,
        ),
    ],
)
def test_other_4xx_are_raised_at_once_as_gidgethub_errors(github, client, sleeps, status, body, error):
    github.then(Answer(status, body=body))
    with pytest.raises(error) as caught:
        client.post("/x", data={})
    assert caught.value.status_code == status
    assert body["message"] in str(caught.value)
    assert len(github.seen) == 1 and sleeps == []


def test_the_token_never_reaches_the_logs(github, client, caplog):
    caplog.set_level(logging.DEBUG)
    github.then(Answer(502), Answer(429, headers={"Retry-After": "1"}), Answer(404, body={"message": "Not Found"}))
    with pytest.raises(BadRequest):
        client.getitem("/repos/acme/docs")
    assert "retry 1 of 3" in caplog.text and "rate limit" in caplog.text
    assert TOKEN not in caplog.text
