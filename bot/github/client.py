"""A synchronous GitHub REST client: gidgethub's sans-I/O helpers over a `requests.Session`.

Retries 5xx answers, connection errors and time-outs with exponential backoff and jitter; a POST that
is not marked idempotent is retried only when it certainly never reached GitHub, since GitHub often
carries out a POST and then answers 502 or times out. Waits out primary and secondary rate limits when
the wait fits the bound; on a 401 calls `on_unauthorized` (when given) and tries once more; every other
4xx is raised at once as gidgethub's exception (`BadRequest`, `InvalidField`, `ValidationError`, ...).
"""

import json
import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import requests
import urllib3
from gidgethub.sansio import accept_format, create_headers, decipher_response, format_url

from service import metrics

log = logging.getLogger(__name__)

API_VERSION = "2022-11-28"
DEFAULT_TIMEOUT = (10.0, 60.0)  # connect, read (seconds)
# GitHub's advice for a secondary rate limit that names no wait: at least one minute.
SECONDARY_LIMIT_DEFAULT_WAIT = 60.0

_NO_BODY = object()
# Failures worth another attempt: the request may not have reached GitHub, or the answer was cut off.
_TRANSIENT = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)


class GitHubUnavailable(Exception):
    """GitHub kept failing (5xx, connection errors, time-outs) after every retry, or a POST that may have
    been carried out failed and was not retried."""


class GitHubRateLimited(GitHubUnavailable):
    """A rate limit asks for a longer wait than the client may spend; `retry_at` is when to try again."""

    def __init__(self, message: str, retry_at: float) -> None:
        super().__init__(message)
        self.retry_at = retry_at


class GitHubClient:
    """Calls GitHub's REST API; `auth` is asked for the Authorization value before every request."""

    def __init__(
        self,
        session: requests.Session,
        *,
        api_url: str,
        auth: Callable[[], str] | None = None,
        requester: str = "copydesk",
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        max_wait: float = 60,
        retries: int = 3,
        backoff: float = 1.0,
        timeout: float | tuple[float, float] = DEFAULT_TIMEOUT,
        on_unauthorized: Callable[[], None] | None = None,
    ) -> None:
        """`on_unauthorized` is called when GitHub refuses the credentials (401), before one more attempt."""
        self._session = session
        self.api_url = api_url.rstrip("/")
        self._auth = auth
        self._requester = requester
        self._sleep = sleep
        self._clock = clock
        self._max_wait = max_wait
        self._retries = retries
        self._backoff = backoff
        self._timeout = timeout
        self._on_unauthorized = on_unauthorized

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r})"

    def getitem(self, url: str, url_vars: Mapping[str, Any] | None = None, *, accept: str = accept_format()) -> Any:
        """GET one resource (decoded JSON)."""
        return self._request("GET", url, url_vars, _NO_BODY, accept, True)[0]

    def getbytes(
        self, url: str, url_vars: Mapping[str, Any] | None = None, *, accept: str, limit: int
    ) -> tuple[bytes, bool]:
        """GET a representation that is not JSON (a diff, a patch), reading at most `limit` bytes of it; returns
        them and whether GitHub had more. The whole body must arrive within the client's read time-out."""
        body = self._request("GET", url, url_vars, _NO_BODY, accept, True, limit=limit)[0]
        return body[:limit], len(body) > limit

    def getiter(
        self,
        url: str,
        url_vars: Mapping[str, Any] | None = None,
        *,
        iterable_key: str | None = None,
        accept: str = accept_format(),
    ) -> Iterator[Any]:
        """Every item of a paginated list, following the `Link: rel="next"` pages lazily.

        `iterable_key` names the list inside an object page (e.g. "repositories", "items").
        """
        next_url: str | None = format_url(url, url_vars, base_url=self.api_url)
        while next_url:
            page, next_url = self._request("GET", next_url, None, _NO_BODY, accept, True)
            yield from (page[iterable_key] if iterable_key else page)

    def post(
        self,
        url: str,
        url_vars: Mapping[str, Any] | None = None,
        *,
        data: Any,
        idempotent: bool = False,
        accept: str = accept_format(),
        guard: Callable[[], None] | None = None,
    ) -> Any:
        """POST; retried after a 5xx or a time-out only when `idempotent` (doing it twice does no harm).

        `guard` is called right before every attempt, a retry's included, and raises to send nothing more."""
        return self._request("POST", url, url_vars, data, accept, idempotent, guard)[0]

    def patch(
        self,
        url: str,
        url_vars: Mapping[str, Any] | None = None,
        *,
        data: Any,
        accept: str = accept_format(),
        guard: Callable[[], None] | None = None,
    ) -> Any:
        """PATCH, retried like a GET; `guard` as for `post`."""
        return self._request("PATCH", url, url_vars, data, accept, True, guard)[0]

    def put(
        self,
        url: str,
        url_vars: Mapping[str, Any] | None = None,
        *,
        data: Any = _NO_BODY,
        accept: str = accept_format(),
    ) -> Any:
        return self._request("PUT", url, url_vars, data, accept, True)[0]

    def delete(
        self,
        url: str,
        url_vars: Mapping[str, Any] | None = None,
        *,
        data: Any = _NO_BODY,
        accept: str = accept_format(),
    ) -> Any:
        return self._request("DELETE", url, url_vars, data, accept, True)[0]

    # -- one logical request, with its retries and waits ---------------------------------------

    def _request(
        self,
        method: str,
        url: str,
        url_vars: Mapping[str, Any] | None,
        data: Any,
        accept: str,
        repeatable: bool,
        guard: Callable[[], None] | None = None,
        *,
        limit: int | None = None,
    ) -> tuple[Any, str | None]:
        """One logical request; with a `limit`, a success answers (at most `limit` + 1 bytes of) its raw body."""
        full_url = format_url(url, url_vars, base_url=self.api_url)
        body = None if data is _NO_BODY else json.dumps(data).encode("utf-8")
        failures = waits = 0
        waited = 0.0
        reauthorized = False
        while True:
            if guard is not None:
                guard()  # after a backoff or a rate-limit wait too: the caller's right to write may be gone
            try:
                response = self._send(method, full_url, body, accept, stream=limit is not None)
                content = response.content if limit is None else self._read_capped(response, limit + 1)
            except _TRANSIENT as exc:
                what = exc.__class__.__name__
                if not (repeatable or _never_sent(exc)):
                    raise _maybe_done(method, full_url, what) from exc
                failures += 1
                self._backoff_or_give_up(method, full_url, failures, what, exc)
                continue
            status, headers = response.status_code, response.headers
            _note_rate_limit(headers)
            if status >= 500:
                if not repeatable:
                    raise _maybe_done(method, full_url, f"HTTP {status}")
                failures += 1
                self._backoff_or_give_up(method, full_url, failures, f"HTTP {status}")
                continue
            if status == 401 and self._on_unauthorized is not None and not reauthorized:
                # GitHub did not act on a refused request, so even a POST may be sent again.
                log.warning(
                    "GitHub refused the credentials for %s %s (401); retrying once with new ones",
                    method,
                    _path(full_url),
                )
                reauthorized = True
                self._on_unauthorized()
                continue
            wait = self._rate_limit_wait(status, headers, content)
            if wait is not None:
                waits += 1
                retry_at = self._clock() + wait
                if waited + wait > self._max_wait or waits > self._retries:
                    raise GitHubRateLimited(
                        f"GitHub's rate limit stopped {method} {_path(full_url)}; retry after "
                        f"{_iso(retry_at)} (in {wait:.0f} s)",
                        retry_at,
                    )
                log.warning("GitHub rate limit on %s %s: waiting %.1f s", method, _path(full_url), wait)
                self._sleep(wait)
                waited += wait
                continue
            if limit is not None and 200 <= status < 300:
                return content, None
            data, _rate, next_url = decipher_response(status, headers, content)
            return data, next_url

    def _read_capped(self, response: requests.Response, most: int) -> bytes:
        """Up to `most` bytes of a streamed body (decompressed: the cap bounds memory, not the wire), within the
        read time-out as a whole, so a body that trickles in cannot hold the caller for long."""
        read_timeout = self._timeout[1] if isinstance(self._timeout, tuple) else self._timeout
        deadline = time.monotonic() + read_timeout
        chunks, size = [], 0
        with response:  # closing drops the rest of a long body instead of reading it
            for chunk in response.iter_content(chunk_size=64 * 1024):
                chunks.append(chunk)
                size += len(chunk)
                if size >= most:
                    break
                if time.monotonic() > deadline:
                    raise requests.exceptions.ReadTimeout(f"the body took longer than {read_timeout} s")
        return b"".join(chunks)[:most]

    def _send(
        self, method: str, url: str, body: bytes | None, accept: str, *, stream: bool = False
    ) -> requests.Response:
        headers = create_headers(self._requester, accept=accept)
        headers["x-github-api-version"] = API_VERSION
        if self._auth is not None:
            # Asked per attempt: an installation token that expired meanwhile is replaced.
            headers["authorization"] = self._auth()
        if body is not None:
            headers["content-type"] = "application/json; charset=utf-8"
        return self._session.request(method, url, data=body, headers=headers, timeout=self._timeout, stream=stream)

    def _backoff_or_give_up(
        self, method: str, url: str, failures: int, what: str, exc: Exception | None = None
    ) -> None:
        if failures > self._retries:
            raise GitHubUnavailable(f"GitHub failed {method} {_path(url)} {failures} times (last: {what})") from exc
        # Full jitter: concurrent workers that failed together do not retry together.
        delay = random.uniform(0, self._backoff * 2 ** (failures - 1))
        log.warning(
            "GitHub %s on %s %s; retry %d of %d in %.2f s", what, method, _path(url), failures, self._retries, delay
        )
        self._sleep(delay)

    def _rate_limit_wait(self, status: int, headers: Mapping[str, str], content: bytes) -> float | None:
        """Seconds to wait before retrying a rate-limited answer, or None when it is not one."""
        if status not in (403, 429):
            return None
        retry_after = headers.get("retry-after")
        if retry_after is not None:
            try:
                return max(0.0, float(retry_after))
            except ValueError:
                pass
        if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
            try:
                reset = float(headers["x-ratelimit-reset"])
            except ValueError:
                return None
            return max(0.0, reset - self._clock()) + 1  # the reset second itself may still be limited
        if _mentions_secondary_limit(content):
            return SECONDARY_LIMIT_DEFAULT_WAIT
        return None


def _note_rate_limit(headers: Mapping[str, str]) -> None:
    """Keep GitHub's remaining calls (per resource: core, search, graphql...) for `/metrics`."""
    remaining = headers.get("x-ratelimit-remaining")
    if remaining is not None and remaining.isdigit():
        metrics.GITHUB_RATE_REMAINING.labels(headers.get("x-ratelimit-resource") or "core").set(int(remaining))


def _never_sent(exc: Exception) -> bool:
    """Whether the request certainly never reached GitHub: the connection itself could not be made."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    # requests reports refused connections and unknown hosts as a plain ConnectionError wrapping urllib3's
    # MaxRetryError; a connection dropped mid-request is a ConnectionError too, so look at the reason.
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(exc, requests.ConnectionError) and isinstance(reason, urllib3.exceptions.NewConnectionError)


def _maybe_done(method: str, url: str, what: str) -> GitHubUnavailable:
    return GitHubUnavailable(
        f"GitHub failed {method} {_path(url)} ({what}); not retried, as GitHub may "
        "have carried it out: check before trying again"
    )


def _mentions_secondary_limit(content: bytes) -> bool:
    try:
        message = json.loads(content).get("message", "")
    except (ValueError, AttributeError):
        return False
    return isinstance(message, str) and "secondary rate limit" in message.lower()


def _path(url: str) -> str:
    """The URL without its query, for log lines and messages."""
    return url.split("?", 1)[0]


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
