"""Sends a webhook request to the address the guard vetted: a name that resolves elsewhere by the time of the
connect (DNS rebinding) cannot lead the request inside the operator's network. The whole attempt (connect,
request, status line and headers) has one deadline."""

import http.client
import socket
import threading
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

import requests
from requests.adapters import DEFAULT_POOLBLOCK, HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from service.outbound.addresses import VettedUrl

DEFAULT_PORTS = {"http": 80, "https": 443}


class AttemptDeadline:
    """Cuts an attempt's connections when its time is up, whatever they are doing. Socket time-outs bound each read
    alone: a receiver that drips a header byte just under them would hold the attempt for ever."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.passed = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True
        self._ends = float("inf")

    def __enter__(self) -> "AttemptDeadline":
        self._ends = time.monotonic() + self.seconds
        self._timer.start()
        return self

    def over(self) -> bool:
        """Whether the attempt's time is up: its connections were cut, or a socket time-out of the same length
        fired first (on a busy machine the timer's thread may not have run yet)."""
        return self.passed or time.monotonic() >= self._ends

    def __exit__(self, *exc) -> None:
        self._timer.cancel()

    def watch(self, sock: socket.socket | None) -> None:
        """Cut `sock` at the deadline (at once if it has passed)."""
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            if self.passed:
                _shut(sock)

    def _cut(self) -> None:
        with self._lock:
            self.passed = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    # The plain socket's shutdown, also for a TLS socket (whose own would drop its TLS state under the reader):
    # a read blocked in another thread returns at once.
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # closed already, or never connected


class _Watched:
    """Hands each connection's socket to the attempt's deadline: the TCP one as soon as it connects, the TLS one
    after the handshake."""

    deadline: AttemptDeadline

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()  # type: ignore[misc]
        self.deadline.watch(sock)
        return sock

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        self.deadline.watch(self.sock)  # type: ignore[attr-defined]


def _pools_under(deadline: AttemptDeadline) -> dict[str, type]:
    """Connection pool classes whose connections `deadline` cuts."""
    plain = type("WatchedHTTPConnection", (_Watched, HTTPConnection), {"deadline": deadline})
    tls = type("WatchedHTTPSConnection", (_Watched, HTTPSConnection), {"deadline": deadline})
    return {
        "http": type("WatchedPool", (HTTPConnectionPool,), {"ConnectionCls": plain}),
        "https": type("WatchedTlsPool", (HTTPSConnectionPool,), {"ConnectionCls": tls}),
    }


class PinnedAdapter(HTTPAdapter):
    """A requests transport that connects to `vetted.address` whatever the URL's host resolves to, keeping the host
    name in the Host header and, for https, in SNI and the certificate check; with `deadline`, that deadline cuts
    its connections."""

    def __init__(self, vetted: VettedUrl, deadline: AttemptDeadline | None = None) -> None:
        self._vetted = vetted  # before super().__init__, which calls init_poolmanager
        self._deadline = deadline
        super().__init__(max_retries=0)

    def init_poolmanager(self, connections, maxsize, block=DEFAULT_POOLBLOCK, **pool_kwargs) -> None:
        """The pool manager, told the TLS server name: the pools connect to an IP literal."""
        if self._vetted.scheme == "https":
            # server_hostname alone: the ssl module then checks the certificate against it (check_hostname stays
            # on). assert_hostname would make urllib3 turn check_hostname off on requests' shared SSL context.
            pool_kwargs["server_hostname"] = self._vetted.host
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        if self._deadline is not None:
            self.poolmanager.pool_classes_by_scheme = _pools_under(self._deadline)

    def send(self, request: requests.PreparedRequest, *args, **kwargs) -> requests.Response:
        """Send `request`, a request to the vetted URL, to the vetted address."""
        parts = urlsplit(request.url or "")
        if (parts.hostname or "").lower() != self._vetted.host.lower():
            raise requests.exceptions.InvalidURL(f"this transport only sends to {self._vetted.host!r}")
        request.url = parts._replace(netloc=_netloc(self._vetted.address, self._vetted.port)).geturl()
        request.headers["Host"] = host_header(self._vetted)
        return super().send(request, *args, **kwargs)


def post(
    vetted: VettedUrl, body: bytes, headers: Mapping[str, str], *, timeout: float, verify: bool | str = True
) -> int:
    """POST `body` to the vetted URL over a connection to its vetted address; returns the response's status.

    `timeout` bounds the whole attempt, from the connect to the last header (requests.Timeout past it). No
    redirect is followed and nothing is retried. No proxy from the environment is used either: a proxy would
    resolve the name again itself. `verify` is a CA bundle's path in tests.
    """
    request = requests.Request("POST", vetted.url, data=body, headers=dict(headers)).prepare()
    with AttemptDeadline(timeout) as deadline:
        adapter = PinnedAdapter(vetted, deadline)
        try:
            response = adapter.send(request, timeout=timeout, verify=verify)
            response.close()  # the body is not read: only the status counts
        except (requests.RequestException, OSError, http.client.HTTPException) as exc:
            if deadline.over():
                raise _late(timeout) from None
            if isinstance(exc, requests.RequestException):
                raise
            raise requests.exceptions.ConnectionError(str(exc)) from None
        finally:
            adapter.close()
        if deadline.passed:  # headers cut short read as complete ones: a status that came late does not count
            raise _late(timeout)
        return response.status_code


def _late(timeout: float) -> requests.exceptions.Timeout:
    return requests.exceptions.Timeout(
        f"no answer within the attempt's deadline of {timeout:g} s (connect, request and response headers)"
    )


def host_header(vetted: VettedUrl) -> str:
    """The Host header a client connecting to the URL by name would send."""
    host = f"[{vetted.host}]" if ":" in vetted.host else vetted.host
    return host if DEFAULT_PORTS[vetted.scheme] == vetted.port else f"{host}:{vetted.port}"


def _netloc(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
