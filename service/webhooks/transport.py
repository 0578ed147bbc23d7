"""Sends a webhook request to the address the guard vetted: a name that resolves elsewhere by the time of the
connect (DNS rebinding) cannot lead the request inside the operator's network."""

from collections.abc import Mapping
from urllib.parse import urlsplit

import requests
from requests.adapters import DEFAULT_POOLBLOCK, HTTPAdapter

from service.webhooks.addresses import VettedUrl

DEFAULT_PORTS = {"http": 80, "https": 443}


class PinnedAdapter(HTTPAdapter):
    """A requests transport that connects to `vetted.address` whatever the URL's host resolves to, keeping the host
    name in the Host header and, for https, in SNI and the certificate check."""

    def __init__(self, vetted: VettedUrl) -> None:
        self._vetted = vetted  # before super().__init__, which calls init_poolmanager
        super().__init__(max_retries=0)

    def init_poolmanager(self, connections, maxsize, block=DEFAULT_POOLBLOCK, **pool_kwargs) -> None:
        """The pool manager, told the TLS server name: the pools connect to an IP literal."""
        if self._vetted.scheme == "https":
            # server_hostname alone: the ssl module then checks the certificate against it (check_hostname stays
            # on). assert_hostname would make urllib3 turn check_hostname off on requests' shared SSL context.
            pool_kwargs["server_hostname"] = self._vetted.host
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)

    def send(self, request: requests.PreparedRequest, *args, **kwargs) -> requests.Response:
        """Send `request`, a request to the vetted URL, to the vetted address."""
        parts = urlsplit(request.url or "")
        if (parts.hostname or "").lower() != self._vetted.host.lower():
            raise requests.exceptions.InvalidURL(f"this transport only sends to {self._vetted.host!r}")
        request.url = parts._replace(netloc=_netloc(self._vetted.address, self._vetted.port)).geturl()
        request.headers["Host"] = host_header(self._vetted)
        return super().send(request, *args, **kwargs)


def post(vetted: VettedUrl, body: bytes, headers: Mapping[str, str], *, timeout: float,
         verify: bool | str = True) -> int:
    """POST `body` to the vetted URL over a connection to its vetted address; returns the response's status.

    No redirect is followed and nothing is retried. No proxy from the environment is used either: a proxy would
    resolve the name again itself. `verify` is a CA bundle's path in tests.
    """
    request = requests.Request("POST", vetted.url, data=body, headers=dict(headers)).prepare()
    adapter = PinnedAdapter(vetted)
    try:
        response = adapter.send(request, timeout=timeout, verify=verify)
        response.close()  # the body is not read: only the status counts
        return response.status_code
    finally:
        adapter.close()


def host_header(vetted: VettedUrl) -> str:
    """The Host header a client connecting to the URL by name would send."""
    host = f"[{vetted.host}]" if ":" in vetted.host else vetted.host
    return host if DEFAULT_PORTS[vetted.scheme] == vetted.port else f"{host}:{vetted.port}"


def _netloc(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
