"""Start-up checks: Redis keeps every key and persists, git is recent enough, the data folder is writable, models are usable."""

import enum
import logging
import re
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import redis

from service import redisconn
from service.agent.model import ModelError, ModelFactory
from service.replication import ReplicationState
from service.settings import Settings
from service.store import schema
from service.workspace.git import Git, GitError

log = logging.getLogger(__name__)

# GIT_CONFIG_GLOBAL (2.32) is how Copydesk keeps a user's global git config out of its commands.
MIN_GIT_VERSION = (2, 32)
EVICTION_FIX = (
    "run `redis-cli CONFIG SET maxmemory-policy noeviction` and put `maxmemory-policy noeviction` in "
    "redis.conf (or start redis-server with `--maxmemory-policy noeviction`)"
)
EVICTION_OVERRIDE = "; to start anyway, set COPYDESK_ALLOW_REDIS_EVICTION=1"
PERSISTENCE_FIX = (
    "turn on AOF: `redis-cli CONFIG SET appendonly yes` and `appendonly yes` in redis.conf "
    "(or `--appendonly yes`), with `appendfsync always` to lose no accepted message"
)


class Status(enum.Enum):
    OK = "ok"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class Check:
    """The outcome of one check: what was checked, what was found and, unless OK, how to fix it."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_json(self) -> dict:
        return {"check": self.name, "status": self.status.value, "detail": self.detail, "fix": self.fix or None}


def run_checks(
    settings: Settings,
    client: redis.Redis,
    git: Git,
    models: ModelFactory,
    missing_keys: Mapping[str, str],
    *,
    redis_required: bool,
) -> list[Check]:
    """Every start-up check. An unreachable Redis is an error when `redis_required`, else a warning (and the
    checks of its settings are skipped)."""
    return [
        *redis_checks(client, allow_eviction=settings.allow_redis_eviction, required=redis_required),
        *(replication_checks(client, min_replicas=settings.redis_min_replicas) if redis_required else []),
        git_check(git),
        data_dir_check(settings.data_dir),
        *model_checks(settings.allowed_models, models, missing_keys),
    ]


def failed(checks: list[Check]) -> bool:
    """Whether any check is an error (the process must not start)."""
    return any(check.status is Status.ERROR for check in checks)


def redis_checks(client: redis.Redis, *, allow_eviction: bool, required: bool = True) -> list[Check]:
    """Redis must never evict keys (`noeviction`) and should persist them (AOF, else RDB snapshots)."""
    try:
        return [*redis_settings_checks(client, allow_eviction=allow_eviction), schema_check(client)]
    except redis.RedisError as exc:
        where = _redis_address(client)
        if required:
            return [
                Check(
                    "redis",
                    Status.ERROR,
                    f"cannot reach Redis at {where}: {exc}",
                    "start redis-server or set COPYDESK_REDIS_URL",
                )
            ]
        return [
            Check(
                "redis",
                Status.WARNING,
                f"cannot reach Redis at {where} ({exc}); its settings were not checked",
                "run `copydesk doctor` once Redis is up",
            )
        ]


def redis_settings_checks(client: redis.Redis, *, allow_eviction: bool) -> list[Check]:
    """The eviction and persistence checks; raises redis.RedisError while Redis cannot be reached."""
    memory = client.info("memory")
    persistence = client.info("persistence")
    return [_eviction_check(memory, allow_eviction), _persistence_check(client, persistence)]


def schema_check(client: redis.Redis) -> Check:
    """The records in Redis must have this Copydesk's schema version (`copydesk migrate` upgrades them)."""
    found = schema.status(client)
    ok = found.state in (schema.SchemaState.CURRENT, schema.SchemaState.EMPTY)
    return Check("schema", Status.OK if ok else Status.ERROR, found.describe(), found.fix)


def replication_checks(client: redis.Redis, *, min_replicas: int) -> list[Check]:
    """The node's role, its replicas and their lag, and (with a Sentinel URL) what the sentinels know; an error
    when the node takes no writes. Nothing when Redis cannot be reached (the Redis check says so)."""
    try:
        state = ReplicationState.read(client)
    except redis.RedisError:
        return []
    checks = [_role_check(state, min_replicas)]
    sentinel = redisconn.sentinel_of(client)
    if sentinel is not None:
        checks.append(_sentinel_check(sentinel, client.connection_pool.service_name))  # type: ignore[attr-defined]
    return checks


def _role_check(state: ReplicationState, min_replicas: int) -> Check:
    replicas = ", ".join(f"{r.address} {r.state} lag {r.lag} s" for r in state.replicas) or "none"
    refusal = state.refusal(min_replicas)
    if refusal is not None:
        return Check(
            "redis role",
            Status.ERROR,
            f"{refusal}; replicas: {replicas}",
            "point COPYDESK_REDIS_URL at the primary (a redis+sentinel:// URL follows failovers), or bring "
            "its replicas back",
        )
    detail = (
        f"primary with {state.online} replica(s) online ({replicas}); writes wait for {min_replicas} "
        f"(COPYDESK_REDIS_MIN_REPLICAS), min-replicas-to-write is {state.replicas_to_write}"
    )
    if state.replicas and min(min_replicas, state.replicas_to_write) < len(state.replicas):
        # Sentinel may promote a replica that lacks a write the others confirmed, and a demoted primary keeps
        # taking writes through the replicas that still follow it until Sentinel moves them.
        return Check(
            "redis role",
            Status.WARNING,
            detail + ": a failover may lose writes that fewer than all replicas confirmed",
            f"set COPYDESK_REDIS_MIN_REPLICAS and min-replicas-to-write to {len(state.replicas)}, the "
            'number of replicas (see the README, "High availability")',
        )
    return Check("redis role", Status.OK, detail)


def _sentinel_check(sentinel, service: str) -> Check:
    views, unreachable = [], 0
    for node in sentinel.sentinels:
        kwargs = node.connection_pool.connection_kwargs
        where = f"{kwargs.get('host')}:{kwargs.get('port')}"
        try:
            master = node.sentinel_master(service)
        except redis.RedisError as exc:
            unreachable += 1
            views.append(f"{where}: {exc}")
            continue
        views.append(
            f"{where}: primary {master['ip']}:{master['port']} ({master['flags']}), "
            f"{master['num-slaves']} replica(s), {master['num-other-sentinels']} other sentinel(s)"
        )
    primaries = {view.split("primary ", 1)[1].split(" ", 1)[0] for view in views if "primary " in view}
    detail = f"service {service!r}: " + "; ".join(views)
    if not primaries:
        return Check(
            "redis sentinel",
            Status.ERROR,
            detail,
            "start the sentinels and check `sentinel monitor` names this service",
        )
    if unreachable or len(primaries) > 1:
        return Check("redis sentinel", Status.WARNING, detail, "every sentinel should answer and name one primary")
    return Check("redis sentinel", Status.OK, detail)


class RedisRefused(Exception):
    """Redis's settings fail a required check (its policy evicts keys): the process must not go on."""

    def __init__(self, checks: list[Check]) -> None:
        super().__init__("; ".join(f"{check.name}: {check.detail}" for check in checks if check.status is Status.ERROR))
        self.checks = checks


class FirstContactChecks:
    """Redis's settings checks for a process that may have started while Redis was down (its start-up checks then
    skipped them): run at its first contact with Redis, and again at each call until they pass, so that a policy
    fixed with CONFIG SET is noticed without a restart."""

    def __init__(self, client: redis.Redis, *, allow_eviction: bool) -> None:
        self._client = client
        self._allow_eviction = allow_eviction
        self._passed = False
        self._reported: list[Check] = []
        self._lock = threading.Lock()

    def require(self) -> None:
        """Return once Redis's settings passed; raise RedisRefused when they fail, redis.RedisError while Redis
        is unreachable."""
        if self._passed:
            return
        found = redis_settings_checks(self._client, allow_eviction=self._allow_eviction)
        with self._lock:
            self._report(found)
            self._passed = not failed(found)
        if not self._passed:
            raise RedisRefused(found)

    def _report(self, found: list[Check]) -> None:
        # Logged when the outcome changes, not at every readiness probe.
        if found == self._reported:
            return
        self._reported = found
        for check in found:
            if check.status is not Status.OK:
                level = logging.ERROR if check.status is Status.ERROR else logging.WARNING
                log.log(level, "%s: %s; fix: %s", check.name, check.detail, check.fix)


def _eviction_check(memory: Mapping, allow_eviction: bool) -> Check:
    policy = memory.get("maxmemory_policy")
    if policy == "noeviction":
        return Check(
            "redis eviction", Status.OK, "maxmemory-policy is noeviction: Redis never deletes a key to make room"
        )
    found = f"maxmemory-policy is {policy}" if policy else "Redis does not report its maxmemory-policy"
    risk = (
        f"{found}: when memory runs short Redis may delete jobs, messages, API keys, projects, leases and "
        "sessions (the volatile-* policies delete the keys that expire: leases, locks and sessions)"
    )
    if allow_eviction:
        return Check(
            "redis eviction", Status.WARNING, risk + "; starting anyway (COPYDESK_ALLOW_REDIS_EVICTION)", EVICTION_FIX
        )
    return Check("redis eviction", Status.ERROR, risk, EVICTION_FIX + EVICTION_OVERRIDE)


def _persistence_check(client: redis.Redis, persistence: Mapping) -> Check:
    if persistence.get("aof_enabled") == 1:
        fsync = _config(client, "appendfsync")
        if fsync == "always":
            return Check(
                "redis persistence",
                Status.OK,
                "AOF with appendfsync always: an accepted message survives a crash of Redis or of its host",
            )
        if fsync == "no":
            return Check(
                "redis persistence",
                Status.WARNING,
                "AOF with appendfsync no: a crash of Redis's host may lose the last 30 s or so of accepted messages",
                "`appendfsync everysec` (at most the last second) or `always` (nothing)",
            )
        return Check(
            "redis persistence",
            Status.OK,
            f"AOF with appendfsync {fsync or 'everysec'}: a crash of "
            "Redis's host may lose the last second of accepted messages",
        )
    save = _config(client, "save")
    if save:
        return Check(
            "redis persistence",
            Status.OK,
            f"RDB snapshots only (save {save}): a Redis crash loses what "
            "was accepted since the last snapshot; AOF loses less",
        )
    unknown = save is None
    detail = (
        "no AOF, and the RDB save setting could not be read (CONFIG GET is refused)"
        if unknown
        else "neither AOF nor RDB snapshots: a Redis restart loses every job, message, API key and project"
    )
    return Check("redis persistence", Status.WARNING, detail, PERSISTENCE_FIX)


def _config(client: redis.Redis, name: str) -> str | None:
    """A Redis setting, or None where CONFIG is refused (managed Redis services rename or block it)."""
    try:
        return client.config_get(name).get(name)
    except redis.ResponseError:
        return None


def _redis_address(client: redis.Redis) -> str:
    return redisconn.address(client)  # never the URL: it may carry a password


def git_check(git: Git) -> Check:
    """Git must be installed and at least MIN_GIT_VERSION."""
    minimum = ".".join(map(str, MIN_GIT_VERSION))
    try:
        text = git.out("--version")
    except (OSError, GitError) as exc:
        return Check("git", Status.ERROR, f"cannot run {git.binary}: {exc}", f"install git {minimum} or newer")
    found = re.search(r"(\d+)\.(\d+)", text)
    if found is None:
        return Check("git", Status.ERROR, f"cannot read the version in {text!r}", f"install git {minimum} or newer")
    if (int(found[1]), int(found[2])) < MIN_GIT_VERSION:
        return Check(
            "git",
            Status.ERROR,
            f"{text} is too old: Copydesk needs {minimum} or newer",
            f"install git {minimum} or newer",
        )
    return Check("git", Status.OK, text)


def data_dir_check(path: Path) -> Check:
    """The data folder (git mirrors, heartbeats, the GitHub App's registration) must exist or be creatable,
    and be writable."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".copydesk-check-"):
            pass
    except OSError as exc:
        return Check(
            "data folder",
            Status.ERROR,
            f"{path} is not writable: {exc.strerror or exc}",
            "give the user running Copydesk write access to it, or set COPYDESK_DATA_DIR to a folder it can write",
        )
    return Check("data folder", Status.OK, f"{path} is writable")


def model_checks(names: tuple[str, ...], models: ModelFactory, missing_keys: Mapping[str, str]) -> list[Check]:
    """Each configured model (COPYDESK_MODEL, COPYDESK_MODELS) must name an available provider with its key."""
    checks = []
    for name in names:
        try:
            provider = models.check(name)
        except ModelError as exc:
            checks.append(
                Check(
                    f"model {name}",
                    Status.ERROR,
                    exc.message,
                    "fix COPYDESK_MODEL / COPYDESK_MODELS (provider:model, e.g. "
                    "anthropic:claude-sonnet-5-5, openai:gpt-5.6-terra, scripted:demo)",
                )
            )
            continue
        if provider in missing_keys:
            checks.append(
                Check(
                    f"model {name}",
                    Status.ERROR,
                    f"no API key for the {provider} provider",
                    f"set {missing_keys[provider]}",
                )
            )
        else:
            checks.append(Check(f"model {name}", Status.OK, f"provider {provider} is available"))
    return checks
