"""Redis client time-outs and pool sizes chosen from settings, and how long a blocking call may block under them."""

from service.settings import Settings

HEALTH_CHECK_SECONDS = 30  # a pooled connection idle this long is PINGed before reuse


def client_options(settings: Settings) -> dict:
    """Options of the Redis client every ordinary call uses: the chosen time-outs, and the connections of
    COPYDESK_REDIS_MAX_CONNECTIONS that event streams do not hold."""
    return {
        "socket_timeout": settings.redis_socket_timeout,
        "socket_connect_timeout": settings.redis_connect_timeout,
        "max_connections": settings.redis_max_connections - settings.max_streams,
        "health_check_interval": HEALTH_CHECK_SECONDS,
    }


def stream_client_options(settings: Settings) -> dict:
    """Options of the client event streams block on: a pool of its own, one connection per stream the process
    may serve, whose read time-out leaves a whole keep-alive period of XREAD BLOCK room above the usual one."""
    return {
        "socket_timeout": settings.redis_socket_timeout + settings.sse_keepalive_seconds,
        "socket_connect_timeout": settings.redis_connect_timeout,
        "max_connections": settings.max_streams,
        "health_check_interval": HEALTH_CHECK_SECONDS,
    }


def block_seconds(settings: Settings) -> int:
    """How long a blocking call on the ordinary client (RQ's dequeue) may block: half its read time-out, so a
    reply to the end of the block is never taken for a dead server."""
    return max(1, settings.redis_socket_timeout // 2)
