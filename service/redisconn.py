"""Turns COPYDESK_REDIS_URL into a redis-py client: a plain `redis://` URL, or a `redis+sentinel://` one whose
primary Redis Sentinel names (and names again after a failover)."""

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote

import redis
from redis.sentinel import Sentinel, SentinelConnectionPool, SentinelManagedConnection, SentinelManagedSSLConnection

from service.settings import SettingsError

SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}  # scheme -> TLS
DEFAULT_SENTINEL_PORT = 26379
# Query options of a Sentinel URL: credentials of the sentinels themselves, and TLS files and checks.
_SENTINEL_OPTIONS = ("sentinel_username", "sentinel_password")
_TLS_OPTIONS = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile", "ssl_cert_reqs", "ssl_check_hostname")
_BOOLEAN = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


class RedisUrlError(SettingsError):
    """A COPYDESK_REDIS_URL that cannot be used; the message says what is wrong (never the password)."""


@dataclass(frozen=True)
class SentinelUrl:
    """The parts of a `redis+sentinel://[user:pass@]host:port[,host:port...]/service[/db][?options]` URL."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    sentinel_username: str | None = None
    sentinel_password: str | None = field(default=None, repr=False)
    tls: bool = False
    tls_options: tuple[tuple[str, object], ...] = ()

    def describe(self) -> str:
        """Where it points, for messages and logs: no credentials."""
        hosts = ",".join(f"{host}:{port}" for host, port in self.sentinels)
        return f"Sentinel {hosts}, service {self.service!r}, db {self.db}"


def is_sentinel_url(url: str) -> bool:
    return url.split("://", 1)[0].lower() in SENTINEL_SCHEMES


def parse_sentinel_url(url: str) -> SentinelUrl:
    """Read a Sentinel URL; RedisUrlError names what is wrong."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SENTINEL_SCHEMES:
        raise RedisUrlError(
            f"COPYDESK_REDIS_URL: a Sentinel URL starts with redis+sentinel:// or "
            f"rediss+sentinel://, not {scheme or url!r}://"
        )
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    parts = [p for p in path.split("/") if p]
    if not parts or len(parts) > 2:
        raise RedisUrlError(
            "COPYDESK_REDIS_URL: a Sentinel URL names its service after the hosts, and optionally "
            "a database: redis+sentinel://host:26379[,host:26379...]/SERVICE[/DB]"
        )
    db = _db(parts[1]) if len(parts) == 2 else 0
    options = _options(query)
    if "db" in options:
        db = _db(str(options.pop("db")))
    tls = SENTINEL_SCHEMES[scheme.lower()] or bool(options.pop("ssl", False))
    tls_options = tuple((name, options.pop(name)) for name in _TLS_OPTIONS if name in options)
    sentinel_username = options.pop("sentinel_username", None)
    sentinel_password = options.pop("sentinel_password", None)
    if options:
        raise RedisUrlError(
            f"COPYDESK_REDIS_URL: unknown option(s) {sorted(options)}; known: "
            f"{['db', 'ssl', *_SENTINEL_OPTIONS, *_TLS_OPTIONS]}"
        )
    if tls_options and not tls:
        raise RedisUrlError("COPYDESK_REDIS_URL: TLS options need rediss+sentinel:// (or ssl=true)")
    return SentinelUrl(
        sentinels=tuple(_host(h) for h in hosts.split(",")),
        service=unquote(parts[0]),
        db=db,
        username=username,
        password=password,
        sentinel_username=str(sentinel_username) if sentinel_username else None,
        sentinel_password=str(sentinel_password) if sentinel_password else None,
        tls=tls,
        tls_options=tls_options,
    )


def client(url: str, **options) -> redis.Redis:
    """A client for `url`, with redis-py's connection `options` (time-outs, health checks). With a Sentinel URL
    the client asks the sentinels for the primary at each new connection, and drops its connections to a primary
    that was demoted (READONLY) or lost its replicas (NOREPLICAS), so it finds the new one by itself."""
    if not is_sentinel_url(url):
        try:
            return redis.Redis.from_url(url, **options)
        except ValueError as exc:
            raise RedisUrlError(f"COPYDESK_REDIS_URL: {exc}") from None
    parsed = parse_sentinel_url(url)
    return sentinel(parsed, **options).master_for(
        parsed.service,
        db=parsed.db,
        username=parsed.username,
        password=parsed.password,
        connection_class=FailoverSSLConnection if parsed.tls else FailoverConnection,
        **options,
    )


def sentinel(parsed: SentinelUrl, **options) -> Sentinel:
    """redis-py's Sentinel manager for `parsed`: its sentinels' own credentials, TLS like the data nodes."""
    tls = dict(parsed.tls_options)
    socket_options = {k: v for k, v in options.items() if k.startswith("socket_")}
    sentinel_kwargs = {
        **socket_options,
        "username": parsed.sentinel_username,
        "password": parsed.sentinel_password,
        **({"ssl": True, **tls} if parsed.tls else {}),
    }
    return Sentinel(list(parsed.sentinels), sentinel_kwargs=sentinel_kwargs, **tls)


def sentinel_of(client_: redis.Redis) -> Sentinel | None:
    """The Sentinel manager behind a client made by `client`, or None for a plain Redis URL."""
    pool = client_.connection_pool
    return pool.sentinel_manager if isinstance(pool, SentinelConnectionPool) else None


def address(client_: redis.Redis) -> str:
    """host:port (or socket path) of the node the client talks to, for messages: never the URL (a password)."""
    pool = client_.connection_pool
    if isinstance(pool, SentinelConnectionPool):
        master = pool.master_address
        return (
            f"{master[0]}:{master[1]} (primary of Sentinel service {pool.service_name!r})"
            if master
            else f"the primary of Sentinel service {pool.service_name!r}"
        )
    kwargs = pool.connection_kwargs
    return kwargs.get("path") or f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"


class _LeavesDemotedPrimary:
    """On a reply that says the node is no longer a usable primary, drop the connection and raise ConnectionError:
    the next connection asks the sentinels again, and redis-py's retry sends the command there."""

    def read_response(self, *args, **kwargs):
        try:
            return super().read_response(*args, **kwargs)
        except redis.ResponseError as exc:
            # READONLY is handled by redis-py's own connection; NOREPLICAS is the old primary of a failover that
            # min-replicas-to-write keeps from taking writes until Sentinel turns it into a replica.
            if str(exc).startswith("NOREPLICAS") and self.connection_pool.is_master:
                self.disconnect()
                raise redis.ConnectionError(f"the primary refuses writes ({exc}); asking Sentinel again") from exc
            raise


class FailoverConnection(_LeavesDemotedPrimary, SentinelManagedConnection):
    pass


class FailoverSSLConnection(_LeavesDemotedPrimary, SentinelManagedSSLConnection):
    pass


def _host(text: str) -> tuple[str, int]:
    text = text.strip()
    if not text:
        raise RedisUrlError("COPYDESK_REDIS_URL: a Sentinel URL needs at least one host:port (an empty one was given)")
    if text.startswith("["):  # [IPv6]:port
        host, _, port = text[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    try:
        number = int(port) if port else DEFAULT_SENTINEL_PORT
    except ValueError:
        raise RedisUrlError(f"COPYDESK_REDIS_URL: {text!r} is not host:port") from None
    if not host or not 0 < number < 65536:
        raise RedisUrlError(f"COPYDESK_REDIS_URL: {text!r} is not host:port")
    return host, number


def _db(text: str) -> int:
    if not text.isdigit():
        raise RedisUrlError(f"COPYDESK_REDIS_URL: the database must be a number, not {text!r}")
    return int(text)


def _options(query: str) -> dict[str, object]:
    options: dict[str, object] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name in ("ssl", "ssl_check_hostname"):
            if value.lower() not in _BOOLEAN:
                raise RedisUrlError(f"COPYDESK_REDIS_URL: {name} must be true or false, not {value!r}")
            options[name] = _BOOLEAN[value.lower()]
        else:
            options[name] = value
    return options
