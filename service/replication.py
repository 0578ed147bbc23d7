"""Redis replication as Copydesk relies on it: writes confirmed by replicas (WAIT), and whether the node the client
talks to is a primary that takes writes."""

import logging
from dataclasses import dataclass, field

import redis

from service.errors import WriteNotReplicated

log = logging.getLogger(__name__)

# Written right before each WAIT: WAIT counts the replicas that hold the writes of *its own* connection, and the
# writes being confirmed may have gone over other connections of the pool. Replication is one ordered stream, so a
# replica that holds this write holds every write the primary took before it.
BARRIER_KEY = "cd:replication:barrier"


class NotWritable(Exception):
    """The node cannot take writes now (a replica, or a primary short of the replicas it needs); says why."""


@dataclass(frozen=True)
class Replica:
    address: str
    state: str
    lag: int  # seconds since the replica last confirmed the stream (INFO replication's `lag`)


@dataclass(frozen=True)
class ReplicationState:
    """What `INFO replication` says about the node."""

    role: str
    replicas: tuple[Replica, ...] = ()
    # A primary with `min-replicas-to-write`: how many replicas it counts as good, and how many it needs.
    good_replicas: int | None = None
    replicas_to_write: int = 0
    primary: str | None = field(default=None)  # a replica's primary
    link: str | None = None  # a replica's link to its primary: up or down

    @classmethod
    def read(cls, client: redis.Redis) -> "ReplicationState":
        """Ask the node; raises redis.RedisError while it cannot be reached."""
        info = client.info("replication")
        replicas = tuple(
            Replica(f"{v.get('ip')}:{v.get('port')}", str(v.get("state")), int(v.get("lag", 0)))
            for k, v in sorted(info.items())
            if k.startswith("slave") and isinstance(v, dict)
        )
        good = info.get("min_slaves_good_slaves")
        needed = _config_int(client, "min-replicas-to-write") if good is not None else 0
        primary = f"{info.get('master_host')}:{info.get('master_port')}" if info.get("master_host") else None
        return cls(
            role=str(info.get("role")),
            replicas=replicas,
            good_replicas=None if good is None else int(good),
            replicas_to_write=needed,
            primary=primary,
            link=info.get("master_link_status"),
        )

    @property
    def online(self) -> int:
        return sum(1 for r in self.replicas if r.state == "online")

    def refusal(self, min_replicas: int) -> str | None:
        """Why the node cannot take Copydesk's writes now, or None when it can."""
        if self.role != "master":
            return (
                f"Redis is a read-only {self.role} (of {self.primary or 'no primary'}, link {self.link or '?'}), "
                "not a primary"
            )
        if self.good_replicas is not None and self.good_replicas < self.replicas_to_write:
            return (
                f"the primary refuses writes: {self.good_replicas} good replica(s), min-replicas-to-write is "
                f"{self.replicas_to_write}"
            )
        if self.online < min_replicas:
            return f"the primary has {self.online} replica(s) online; COPYDESK_REDIS_MIN_REPLICAS needs {min_replicas}"
        return None


class Durability:
    """Confirms that what was written so far reached `min_replicas` replicas (nothing to do when 0)."""

    def __init__(self, client: redis.Redis, *, min_replicas: int, wait_ms: int) -> None:
        self._client = client
        self.min_replicas = min_replicas
        self._wait_ms = wait_ms

    def confirm(self) -> None:
        """Return once enough replicas hold every write made before the call; WriteNotReplicated when they do not
        confirm within the wait (redis.RedisError while Redis cannot be reached)."""
        if self.min_replicas <= 0:
            return
        with self._client.pipeline(transaction=False) as pipe:
            pipe.set(BARRIER_KEY, b"1")
            pipe.wait(self.min_replicas, self._wait_ms)
            _, acknowledged = pipe.execute()
        if int(acknowledged) < self.min_replicas:
            raise WriteNotReplicated(
                f"the write reached {acknowledged} of the {self.min_replicas} Redis replica(s) "
                f"it needs within {self._wait_ms} ms; it may not survive a failover; try again"
            )

    def writable(self) -> None:
        """Raise NotWritable unless the node is a primary that takes writes with enough replicas online."""
        refusal = ReplicationState.read(self._client).refusal(self.min_replicas)
        if refusal is not None:
            raise NotWritable(refusal)


def _config_int(client: redis.Redis, name: str) -> int:
    try:
        return int(client.config_get(name).get(name) or 0)
    except (redis.ResponseError, ValueError):
        return 0  # CONFIG refused (managed Redis): trust min_slaves_good_slaves alone
