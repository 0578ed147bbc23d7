"""The guard against webhooks aimed inside the operator's network (SSRF): loopback, private, link-local targets."""

import ipaddress
import socket
from urllib.parse import urlsplit

MAX_URL_LENGTH = 2000


class UnsafeUrl(ValueError):
    """A webhook URL that is malformed or resolves to an address Copydesk must not call."""


def check_url(url: str, *, allow_private: bool) -> None:
    """Raise UnsafeUrl unless `url` is an http(s) URL whose host resolves only to public addresses
    (any address when `allow_private`)."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise UnsafeUrl(f"the URL must be a string of 1 to {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise UnsafeUrl(f"the URL is not valid: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeUrl("the URL must be http:// or https:// with a host")
    if parts.username or parts.password:
        raise UnsafeUrl("the URL must not carry a user name or password")
    if allow_private:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnsafeUrl(f"the host {parts.hostname!r} does not resolve: {exc}") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if _internal(address):
            raise UnsafeUrl(f"the host {parts.hostname!r} resolves to {address}, a loopback, private or link-local "
                            "address; the operator has not allowed those (COPYDESK_WEBHOOK_ALLOW_PRIVATE)")


def _internal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    return (address.is_loopback or address.is_private or address.is_link_local or address.is_reserved
            or address.is_multicast or address.is_unspecified)
