"""The guard against webhooks aimed inside the operator's network (SSRF): only globally routable addresses, and
the address checked is the one connected to (service.outbound.transport), so a name cannot rebind in between."""

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit

import idna

MAX_URL_LENGTH = 2000
_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network
# IANA's special-purpose registries, the blocks not globally reachable (or "N/A"), listed here rather than
# left to `ipaddress`, whose tables differ between Python versions (3.11 lets 192.0.0.8 and 3fff::/20 pass).
_NOT_GLOBAL_V4 = tuple(
    _V4(block)
    for block in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",  # IETF protocol assignments, all of it: DS-Lite, the dummy address, NAT64 discovery, anycasts
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",  # multicast: in no "private" table, so `is_global` lets it through
        "240.0.0.0/4",
        "255.255.255.255/32",
    )
)
_NOT_GLOBAL_V6 = tuple(
    _V6(block)
    for block in (
        "::/128",
        "::1/128",
        "64:ff9b:1::/48",
        "100::/64",
        "100:0:0:1::/64",
        "2001::/23",  # IETF protocol assignments, Teredo's 2001::/32 among them, whatever it carries
        "2001:db8::/32",
        "3fff::/20",
        "5f00::/16",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
)
_GLOBAL_UNICAST = _V6("2000::/3")  # everything outside it is reserved, special or unassigned
# IPv6 forms that carry an IPv4 address a host, gateway or tunnel connects to, and the bit where it starts:
# IPv4-compatible (deprecated), IPv4-mapped, IPv4-translated (SIIT) and NAT64's well-known prefix in the low
# 32 bits; 6to4 right after its 16-bit prefix. Teredo's two addresses are read by `ipaddress`.
_CARRIERS = (
    (_V6("::/96"), 0),
    (_V6("::ffff:0:0/96"), 0),
    (_V6("::ffff:0:0:0/96"), 0),
    (_V6("64:ff9b::/96"), 0),
    (_V6("2002::/16"), 80),
)

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
    """Whether `address` is globally reachable: in no special-purpose block, and every IPv4 address it carries
    (IPv4-compatible, mapped, translated, NAT64, 6to4, Teredo) public too."""
    if isinstance(address, ipaddress.IPv4Address):
        return address.is_global and not any(address in block for block in _NOT_GLOBAL_V4)
    embedded = _embedded_ipv4(address)
    if any(not is_public(carried) for carried in embedded):
        return False
    if embedded and not address.teredo:
        return True  # a wrapper only: where it leads is the IPv4 address, judged above
    return address in _GLOBAL_UNICAST and address.is_global and not any(address in block for block in _NOT_GLOBAL_V6)


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
            raise UnsafeUrl(
                f"the host {host!r} resolves to {address}, not a public address (loopback, private or "
                "link-local, shared, multicast, reserved or special-purpose, or an IPv6 form of one); the "
                "operator has not allowed those (COPYDESK_WEBHOOK_ALLOW_PRIVATE)"
            )
    # All must pass, so a name cannot slip an internal address in behind a public one; the first is used, as a
    # plain connect would try it first (no fallback to the others: one attempt, one vetted address).
    return host, str(addresses[0])


def _address(info: tuple[Any, ...]) -> IpAddress:
    # A scope id (fe80::1%eth0) is no part of the address judged.
    return ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (Teredo carries two: its server and its client)."""
    if address.teredo is not None:
        return list(address.teredo)
    for block, shift in _CARRIERS:
        if address in block:
            return [ipaddress.IPv4Address((int(address) >> shift) & 0xFFFFFFFF)]
    return []
