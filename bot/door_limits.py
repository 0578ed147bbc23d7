"""Per-client-address limits on the doors anyone may use before signing in: GitHub sign-in starts, the operator's
login link, the GitHub App registration links."""

import enum
import ipaddress

import redis

from service.errors import RateLimited
from service.store.ratelimit import RateLimiter

WINDOW_SECONDS = 60
# One IPv6 client usually holds a whole /64; counted per address it could knock from 2^64 of them.
IPV6_CLIENT_PREFIX = 64


class Door(enum.Enum):
    SIGN_IN = "sign-in"
    LOGIN_LINK = "login-link"
    REGISTRATION = "registration"


class DoorLimits:
    """A fixed window of `per_minute` requests per client address at each door, counted in Redis so that every web
    process shares it."""

    def __init__(self, client: redis.Redis, *, per_minute: int) -> None:
        self._limiter = RateLimiter(client, limit=per_minute, window_seconds=WINDOW_SECONDS)

    def admit(self, door: Door, address: str | None) -> None:
        """Count one request from `address` at `door`; RateLimited (with its Retry-After) past the limit."""
        quota = self._limiter.consume(f"door:{door.value}:{client_of(address)}")
        if not quota.allowed:
            raise RateLimited(
                f"too many requests from your address here ({quota.limit} a minute); try again in "
                f"{quota.reset_seconds} s",
                retry_after=quota.reset_seconds,
            )


def client_of(address: str | None) -> str:
    """The client an address counts for: itself for IPv4, its /64 for IPv6."""
    try:
        parsed = ipaddress.ip_address((address or "").split("%", 1)[0])
    except ValueError:
        return "unknown"  # not from a TCP peer (a Unix socket behind a proxy): all such share one count
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:  # an IPv4 client on a dual-stack socket
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, IPV6_CLIENT_PREFIX), strict=False).network_address)
    return str(parsed)
