"""The guard against webhooks aimed inside the operator's network (SSRF): only globally routable addresses, and
the address checked is the one connected to (service.webhooks.transport), so a name cannot rebind in between."""

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit

import idna

MAX_URL_LENGTH = 2000
# Where IPv6 addresses carry an IPv4 one that a gateway or tunnel connects to: judged by that IPv4 address.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# socket.getaddrinfo's signature; tests plug in their own name service.
Resolver = Callable[..., Sequence[tuple[Any, ...]]]


class UnsafeUrl(ValueError):
    """A webhook URL that is malformed or resolves to an address Copydesk must not call."""


@dataclass(frozen=True)
class VettedUrl:
    """A webhook URL whose host resolved to `address`, an address Copydesk may call: the one to connect to."""

    url: str
    scheme: str
    host: str  # ASCII (IDNA) host name, or an IP literal without brackets
    port: int
    address: str


def check_url(url: str, *, allow_private: bool, resolver: Resolver = socket.getaddrinfo) -> None:
    """Raise UnsafeUrl unless `url` is an http(s) URL whose host resolves only to globally routable addresses
    (any address, unresolved, when `allow_private`)."""
    parts, port = _parse(url)
    if not allow_private:
        _resolve(parts, port, allow_private=False, resolver=resolver)


def vet_url(url: str, *, allow_private: bool, resolver: Resolver = socket.getaddrinfo) -> VettedUrl:
    """Check `url` as check_url does and return the address to connect to; it is resolved even when
    `allow_private`, so that every connection goes to the address resolved here, once."""
    parts, port = _parse(url)
    host, address = _resolve(parts, port, allow_private=allow_private, resolver=resolver)
    return VettedUrl(url=url, scheme=parts.scheme, host=host, port=port, address=address)


def is_public(address: IpAddress) -> bool:
    """Whether `address` is globally routable, an IPv4 address embedded in it (mapped, 6to4, NAT64) too."""
    embedded = _embedded_ipv4(address)
    if embedded is not None and not is_public(embedded):
        return False
    # `is_global` alone lets multicast through (224.0.0.0/4 is in no "private" table).
    return address.is_global and not address.is_multicast


def _parse(url: str) -> tuple[SplitResult, int]:
    """The URL's parts and port, or UnsafeUrl."""
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
    return parts, port


def _ascii_host(hostname: str) -> str:
    """The host as it goes on the wire, encoded the way requests encodes it (IDNA 2008, UTS 46)."""
    if hostname.isascii():
        return hostname
    try:
        return idna.encode(hostname, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise UnsafeUrl(f"the host {hostname!r} is not a valid name: {exc}") from None


def _resolve(parts: SplitResult, port: int, *, allow_private: bool, resolver: Resolver) -> tuple[str, str]:
    """(ASCII host, the first address it resolves to); refused if any address is not public."""
    host = _ascii_host(parts.hostname or "")
    try:
        infos = resolver(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
        raise UnsafeUrl(f"the host {host!r} does not resolve: {exc}") from None
    addresses = [_address(info) for info in infos]
    if not addresses:
        raise UnsafeUrl(f"the host {host!r} resolves to no address")
    for address in addresses:
        if not allow_private and not is_public(address):
            raise UnsafeUrl(f"the host {host!r} resolves to {address}, not a public address (loopback, private or "
                            "link-local, shared, multicast or reserved); the operator has not allowed those "
                            "(COPYDESK_WEBHOOK_ALLOW_PRIVATE)")
    # All must pass, so a name cannot slip an internal address in behind a public one; the first is used, as a
    # plain connect would try it first (no fallback to the others: one attempt, one vetted address).
    return host, str(addresses[0])


def _address(info: tuple[Any, ...]) -> IpAddress:
    # A scope id (fe80::1%eth0) is no part of the address judged.
    return ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])


def _embedded_ipv4(address: IpAddress) -> ipaddress.IPv4Address | None:
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None
