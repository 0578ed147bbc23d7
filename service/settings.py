"""Configuration, read once from the environment into a typed, immutable settings object."""

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


class SettingsError(ValueError):
    """A configuration value that cannot be used; the message names the variable."""


MIN_SOCKET_TIMEOUT = 2  # seconds; blocking reads block for half the read time-out, at least one second
MIN_REQUEST_CONNECTIONS = 10  # Redis connections of a process left for everything but event streams


@dataclass(frozen=True)
class Settings:
    redis_url: str = "redis://127.0.0.1:6379/0"
    # A write is answered as done only once this many replicas hold it (Redis WAIT), within the wait below.
    redis_min_replicas: int = 0
    redis_replica_wait_ms: int = 1000
    data_dir: Path = field(default_factory=lambda: Path.home() / ".local" / "share" / "copydesk")
    base_url: str = "http://127.0.0.1:8000"
    model: str = "scripted:demo"
    models: tuple[str, ...] = ()
    queue_name: str = "copydesk"
    rate_limit_per_hour: int = 100
    max_prompt_chars: int = 20_000
    max_body_bytes: int = 64 * 1024
    retention_days: int = 30
    max_steps: int = 50
    max_bytes_written: int = 2 * 1024 * 1024
    # Files larger than this are never loaded whole: the agent may read line ranges, not edit, move or search.
    max_file_bytes: int = 10 * 1024 * 1024
    run_timeout_seconds: int = 900
    max_tokens: int = 1_000_000  # billable model tokens (service.billing) one run may use
    # Characters of context per model request (~4 per token): older tool output is elided past it...
    agent_context_chars: int = 200_000
    # ...and of the job's earlier rounds a follow-up sees, older rounds squeezed past it.
    agent_history_chars: int = 40_000
    max_attempts: int = 3
    tool_timeout_seconds: int = 60  # one tool call's time budget; past it the model gets a tool error
    # A run's lease lapses this long after its worker stopped renewing it; the sweep looks this often for
    # messages with neither a lease nor a queued run. Together they bound how soon a dead worker's run resumes.
    lease_ttl_seconds: int = 6
    sweep_interval_seconds: int = 2
    stop_grace_seconds: int = 30  # on SIGTERM, how long a worker lets its run go on before handing it back
    # Tests only: fault points (service.faults) where a worker process dies or stalls; empty in production.
    test_faults: frozenset[str] = frozenset()
    # Tests only: a file holding the time (ISO) that the workers' automation triggers take for now; unset: the clock.
    test_clock_file: Path | None = None
    # Seconds between a worker's looks for due schedule slots and new local source commits (automations).
    automation_tick_seconds: int = 30
    # Seconds a model call keeps being retried after it first fails (outages, rate limits) before model_unavailable.
    model_retry_seconds: int = 120
    # Start even though Redis may evict keys (maxmemory-policy other than noeviction): jobs and leases can vanish.
    allow_redis_eviction: bool = False
    # How often each worker publishes its heartbeat (Redis and a file in the data directory).
    worker_heartbeat_seconds: int = 5
    # This worker's name in heartbeats and `copydesk doctor`; empty: <hostname>.<pid>.
    worker_name: str = ""
    git_author_name: str = "Copydesk"
    git_author_email: str = "copydesk@localhost"
    log_json: bool = False
    # Bearer token that `/metrics` asks for; unset, `/metrics` answers 404 (nothing is exposed by default).
    metrics_token: str | None = field(default=None, repr=False)
    # Where every Copydesk process of this host writes its metric values (prometheus_client's multi-process files).
    metrics_dir_setting: Path | None = None
    # A worker host without a web server serves its own metrics on this port (same token); unset: it does not.
    worker_metrics_port: int | None = None
    event_retention: int = 1000  # events kept per job (the stream is trimmed past it, roughly)
    event_ttl_days: int = 30  # an archived job's event stream is deleted this long after its last event
    purge_days: int = 30  # an account's data is purged this long after its GitHub App installation was deleted
    sse_keepalive_seconds: int = 15  # a comment line on an idle event stream this often
    max_streams: int = 200  # event streams one web process serves at once; past it 503
    # Event streams one API key (or dashboard session) and one account may hold open in one web process; past
    # them 429, so one caller cannot take the process's streams from everyone else.
    max_streams_per_key: int = 20
    max_streams_per_account: int = 50
    # Redis clients: seconds a reply may take and a connection may take to open, never redis-py's defaults. Every
    # blocking call (XREAD, RQ's dequeue, the fan-out) blocks for less than its client's read time-out.
    redis_socket_timeout: int = 10
    redis_connect_timeout: int = 5
    # Redis connections one process may open: event streams get COPYDESK_MAX_STREAMS of them in a pool of their
    # own, everything else shares the rest.
    redis_max_connections: int = 300
    # Webhooks: targets that are not globally routable (loopback, private, link-local, shared, reserved) are refused
    # unless the operator allows them.
    webhook_allow_private: bool = False
    webhook_retry_seconds: int = 10  # the first retry's delay; each next one waits 3 times longer
    webhook_timeout_seconds: int = 10  # one attempt's whole deadline: connect, request, status line and headers
    webhook_max_endpoints: int = 10  # webhook endpoints per project
    max_automations: int = 20  # automations per project
    # A round's tracking comment on its pull request is edited at most once per this many seconds.
    comment_edit_seconds: float = 10.0
    # Automatic rounds per job that fix the job's own failing checks, before a person is asked.
    ci_fix_rounds: int = 2
    webhook_resends_per_endpoint: int = 10  # re-sends asked for per endpoint per minute; past it 429
    webhook_resends_per_account: int = 30  # re-sends asked for per account (code host and name) per minute
    webhook_threads: int = 8  # delivery attempts one worker process makes at once
    webhook_account_concurrency: int = 2  # of those, attempts for one account at once
    # Seals webhook secrets at rest; unset, a random key is kept in the data directory (one machine only).
    secret_key: str | None = field(default=None, repr=False)
    # Dashboard sign-in sessions end after this long unused, and after this long whatever happens.
    session_idle_seconds: int = 2 * 3600
    session_max_seconds: int = 12 * 3600
    # Requests per minute one client address may make at each door open to anyone (GitHub sign-in starts, the
    # operator's login link, the App registration links); past it 429.
    anonymous_per_minute: int = 20
    # The vendors' own variables; keys are secrets, so they never appear in a repr or a log line.
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    # Send each job's id as `prompt_cache_key` (better cache hits at OpenAI); off for a server that refuses it.
    openai_prompt_cache_key: bool = True
    anthropic_api_key: str | None = field(default=None, repr=False)
    anthropic_base_url: str | None = None

    def __post_init__(self) -> None:
        if self.redis_socket_timeout < MIN_SOCKET_TIMEOUT:
            raise SettingsError(
                f"COPYDESK_REDIS_SOCKET_TIMEOUT must be at least {MIN_SOCKET_TIMEOUT} seconds: "
                "blocking reads wait up to a second under it"
            )
        if self.redis_max_connections - self.max_streams < MIN_REQUEST_CONNECTIONS:
            raise SettingsError(
                f"COPYDESK_REDIS_MAX_CONNECTIONS ({self.redis_max_connections}) must exceed "
                f"COPYDESK_MAX_STREAMS ({self.max_streams}) by at least {MIN_REQUEST_CONNECTIONS}: "
                "event streams hold connections of their own, requests need the rest"
            )

    @property
    def allowed_models(self) -> tuple[str, ...]:
        """The model names a job may ask for; the default model is always one of them."""
        return self.models or (self.model,)

    @property
    def mirrors_dir(self) -> Path:
        return self.data_dir / "mirrors"

    @property
    def metrics_dir(self) -> Path:
        return self.metrics_dir_setting or self.data_dir / "metrics"

    def with_overrides(self, **changes) -> "Settings":
        """A copy with some values replaced (tests and the demo use this)."""
        return replace(self, **changes)

    def to_env(self) -> dict[str, str]:
        """The environment variables `from_env` reads back into these settings (every one, "" for unset), e.g.
        to start another process with them. Holds the secrets: never log it."""
        return {
            "COPYDESK_REDIS_URL": self.redis_url,
            "COPYDESK_REDIS_MIN_REPLICAS": str(self.redis_min_replicas),
            "COPYDESK_REDIS_REPLICA_WAIT_MS": str(self.redis_replica_wait_ms),
            "COPYDESK_DATA_DIR": str(self.data_dir),
            "COPYDESK_BASE_URL": self.base_url,
            "COPYDESK_MODEL": self.model,
            "COPYDESK_MODELS": ",".join(self.models),
            "COPYDESK_QUEUE": self.queue_name,
            "COPYDESK_RATE_LIMIT": str(self.rate_limit_per_hour),
            "COPYDESK_MAX_PROMPT_CHARS": str(self.max_prompt_chars),
            "COPYDESK_MAX_BODY_BYTES": str(self.max_body_bytes),
            "COPYDESK_RETENTION_DAYS": str(self.retention_days),
            "COPYDESK_MAX_STEPS": str(self.max_steps),
            "COPYDESK_MAX_BYTES_WRITTEN": str(self.max_bytes_written),
            "COPYDESK_MAX_FILE_BYTES": str(self.max_file_bytes),
            "COPYDESK_RUN_TIMEOUT": str(self.run_timeout_seconds),
            "COPYDESK_MAX_TOKENS": str(self.max_tokens),
            "COPYDESK_AGENT_CONTEXT_CHARS": str(self.agent_context_chars),
            "COPYDESK_AGENT_HISTORY_CHARS": str(self.agent_history_chars),
            "COPYDESK_MAX_ATTEMPTS": str(self.max_attempts),
            "COPYDESK_TOOL_TIMEOUT": str(self.tool_timeout_seconds),
            "COPYDESK_LEASE_TTL": str(self.lease_ttl_seconds),
            "COPYDESK_SWEEP_INTERVAL": str(self.sweep_interval_seconds),
            "COPYDESK_STOP_GRACE": str(self.stop_grace_seconds),
            "COPYDESK_TEST_FAULTS": ",".join(sorted(self.test_faults)),
            "COPYDESK_TEST_CLOCK_FILE": str(self.test_clock_file or ""),
            "COPYDESK_AUTOMATION_TICK_SECONDS": str(self.automation_tick_seconds),
            "COPYDESK_MODEL_RETRY_SECONDS": str(self.model_retry_seconds),
            "COPYDESK_ALLOW_REDIS_EVICTION": _flag(self.allow_redis_eviction),
            "COPYDESK_WORKER_HEARTBEAT": str(self.worker_heartbeat_seconds),
            "COPYDESK_WORKER_NAME": self.worker_name,
            "COPYDESK_GIT_AUTHOR_NAME": self.git_author_name,
            "COPYDESK_GIT_AUTHOR_EMAIL": self.git_author_email,
            "COPYDESK_LOG_FORMAT": "json" if self.log_json else "text",
            "COPYDESK_METRICS_TOKEN": self.metrics_token or "",
            "COPYDESK_METRICS_DIR": str(self.metrics_dir_setting or ""),
            "COPYDESK_WORKER_METRICS_PORT": str(self.worker_metrics_port or ""),
            "COPYDESK_EVENT_RETENTION": str(self.event_retention),
            "COPYDESK_EVENT_TTL_DAYS": str(self.event_ttl_days),
            "COPYDESK_PURGE_DAYS": str(self.purge_days),
            "COPYDESK_SSE_KEEPALIVE": str(self.sse_keepalive_seconds),
            "COPYDESK_MAX_STREAMS": str(self.max_streams),
            "COPYDESK_MAX_STREAMS_PER_KEY": str(self.max_streams_per_key),
            "COPYDESK_MAX_STREAMS_PER_ACCOUNT": str(self.max_streams_per_account),
            "COPYDESK_REDIS_SOCKET_TIMEOUT": str(self.redis_socket_timeout),
            "COPYDESK_REDIS_CONNECT_TIMEOUT": str(self.redis_connect_timeout),
            "COPYDESK_REDIS_MAX_CONNECTIONS": str(self.redis_max_connections),
            "COPYDESK_WEBHOOK_ALLOW_PRIVATE": _flag(self.webhook_allow_private),
            "COPYDESK_WEBHOOK_RETRY_SECONDS": str(self.webhook_retry_seconds),
            "COPYDESK_WEBHOOK_TIMEOUT": str(self.webhook_timeout_seconds),
            "COPYDESK_WEBHOOK_MAX_ENDPOINTS": str(self.webhook_max_endpoints),
            "COPYDESK_MAX_AUTOMATIONS": str(self.max_automations),
            "COPYDESK_WEBHOOK_RESENDS_PER_ENDPOINT": str(self.webhook_resends_per_endpoint),
            "COPYDESK_WEBHOOK_RESENDS_PER_ACCOUNT": str(self.webhook_resends_per_account),
            "COPYDESK_WEBHOOK_THREADS": str(self.webhook_threads),
            "COPYDESK_WEBHOOK_ACCOUNT_CONCURRENCY": str(self.webhook_account_concurrency),
            "COPYDESK_SECRET_KEY": self.secret_key or "",
            "COPYDESK_SESSION_IDLE_MINUTES": str(self.session_idle_seconds // 60),
            "COPYDESK_SESSION_MAX_HOURS": str(self.session_max_seconds // 3600),
            "COPYDESK_ANONYMOUS_PER_MINUTE": str(self.anonymous_per_minute),
            "COPYDESK_COMMENT_EDIT_SECONDS": repr(self.comment_edit_seconds),
            "COPYDESK_CI_FIX_ROUNDS": str(self.ci_fix_rounds),
            "OPENAI_API_KEY": self.openai_api_key or "",
            "OPENAI_BASE_URL": self.openai_base_url or "",
            "COPYDESK_OPENAI_PROMPT_CACHE_KEY": _flag(self.openai_prompt_cache_key),
            "ANTHROPIC_API_KEY": self.anthropic_api_key or "",
            "ANTHROPIC_BASE_URL": self.anthropic_base_url or "",
        }

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """Read every `COPYDESK_*` variable once; unset ones keep their defaults."""
        env = os.environ if environ is None else environ
        defaults = cls()
        model = env.get("COPYDESK_MODEL") or default_model(env)
        return cls(
            redis_url=_redis_url(env.get("COPYDESK_REDIS_URL") or defaults.redis_url),
            redis_min_replicas=_int(env, "COPYDESK_REDIS_MIN_REPLICAS", defaults.redis_min_replicas, minimum=0),
            redis_replica_wait_ms=_int(env, "COPYDESK_REDIS_REPLICA_WAIT_MS", defaults.redis_replica_wait_ms),
            data_dir=Path(env["COPYDESK_DATA_DIR"]).expanduser() if env.get("COPYDESK_DATA_DIR") else defaults.data_dir,
            base_url=_http_url("COPYDESK_BASE_URL", env.get("COPYDESK_BASE_URL") or defaults.base_url).rstrip("/"),
            model=model,
            models=_names(env.get("COPYDESK_MODELS", ""), model),
            queue_name=env.get("COPYDESK_QUEUE") or defaults.queue_name,
            rate_limit_per_hour=_int(env, "COPYDESK_RATE_LIMIT", defaults.rate_limit_per_hour),
            max_prompt_chars=_int(env, "COPYDESK_MAX_PROMPT_CHARS", defaults.max_prompt_chars),
            max_body_bytes=_int(env, "COPYDESK_MAX_BODY_BYTES", defaults.max_body_bytes),
            retention_days=_int(env, "COPYDESK_RETENTION_DAYS", defaults.retention_days),
            max_steps=_int(env, "COPYDESK_MAX_STEPS", defaults.max_steps),
            max_bytes_written=_int(env, "COPYDESK_MAX_BYTES_WRITTEN", defaults.max_bytes_written),
            max_file_bytes=_int(env, "COPYDESK_MAX_FILE_BYTES", defaults.max_file_bytes),
            run_timeout_seconds=_int(env, "COPYDESK_RUN_TIMEOUT", defaults.run_timeout_seconds),
            max_tokens=_int(env, "COPYDESK_MAX_TOKENS", defaults.max_tokens),
            agent_context_chars=_int(env, "COPYDESK_AGENT_CONTEXT_CHARS", defaults.agent_context_chars),
            agent_history_chars=_int(env, "COPYDESK_AGENT_HISTORY_CHARS", defaults.agent_history_chars),
            max_attempts=_int(env, "COPYDESK_MAX_ATTEMPTS", defaults.max_attempts),
            tool_timeout_seconds=_int(env, "COPYDESK_TOOL_TIMEOUT", defaults.tool_timeout_seconds),
            lease_ttl_seconds=_int(env, "COPYDESK_LEASE_TTL", defaults.lease_ttl_seconds),
            sweep_interval_seconds=_int(env, "COPYDESK_SWEEP_INTERVAL", defaults.sweep_interval_seconds),
            stop_grace_seconds=_int(env, "COPYDESK_STOP_GRACE", defaults.stop_grace_seconds),
            test_faults=_fault_points(env.get("COPYDESK_TEST_FAULTS", "")),
            test_clock_file=Path(env["COPYDESK_TEST_CLOCK_FILE"]) if env.get("COPYDESK_TEST_CLOCK_FILE") else None,
            automation_tick_seconds=_int(env, "COPYDESK_AUTOMATION_TICK_SECONDS", defaults.automation_tick_seconds),
            model_retry_seconds=_int(env, "COPYDESK_MODEL_RETRY_SECONDS", defaults.model_retry_seconds),
            allow_redis_eviction=_bool(env, "COPYDESK_ALLOW_REDIS_EVICTION", defaults.allow_redis_eviction),
            worker_heartbeat_seconds=_int(env, "COPYDESK_WORKER_HEARTBEAT", defaults.worker_heartbeat_seconds),
            worker_name=worker_name(env.get("COPYDESK_WORKER_NAME", "")),
            git_author_name=env.get("COPYDESK_GIT_AUTHOR_NAME") or defaults.git_author_name,
            git_author_email=env.get("COPYDESK_GIT_AUTHOR_EMAIL") or defaults.git_author_email,
            log_json=_choice(env, "COPYDESK_LOG_FORMAT", ("text", "json"), "text") == "json",
            metrics_token=env.get("COPYDESK_METRICS_TOKEN") or None,
            metrics_dir_setting=Path(env["COPYDESK_METRICS_DIR"]).expanduser()
            if env.get("COPYDESK_METRICS_DIR")
            else None,
            worker_metrics_port=_worker_metrics_port(env),
            event_retention=_int(env, "COPYDESK_EVENT_RETENTION", defaults.event_retention),
            event_ttl_days=_int(env, "COPYDESK_EVENT_TTL_DAYS", defaults.event_ttl_days),
            purge_days=_int(env, "COPYDESK_PURGE_DAYS", defaults.purge_days),
            sse_keepalive_seconds=_int(env, "COPYDESK_SSE_KEEPALIVE", defaults.sse_keepalive_seconds),
            max_streams=_int(env, "COPYDESK_MAX_STREAMS", defaults.max_streams),
            max_streams_per_key=_int(env, "COPYDESK_MAX_STREAMS_PER_KEY", defaults.max_streams_per_key),
            max_streams_per_account=_int(env, "COPYDESK_MAX_STREAMS_PER_ACCOUNT", defaults.max_streams_per_account),
            redis_socket_timeout=_int(env, "COPYDESK_REDIS_SOCKET_TIMEOUT", defaults.redis_socket_timeout),
            redis_connect_timeout=_int(env, "COPYDESK_REDIS_CONNECT_TIMEOUT", defaults.redis_connect_timeout),
            redis_max_connections=_int(env, "COPYDESK_REDIS_MAX_CONNECTIONS", defaults.redis_max_connections),
            webhook_allow_private=_bool(env, "COPYDESK_WEBHOOK_ALLOW_PRIVATE", defaults.webhook_allow_private),
            webhook_retry_seconds=_int(env, "COPYDESK_WEBHOOK_RETRY_SECONDS", defaults.webhook_retry_seconds),
            webhook_timeout_seconds=_int(env, "COPYDESK_WEBHOOK_TIMEOUT", defaults.webhook_timeout_seconds),
            webhook_max_endpoints=_int(env, "COPYDESK_WEBHOOK_MAX_ENDPOINTS", defaults.webhook_max_endpoints),
            max_automations=_int(env, "COPYDESK_MAX_AUTOMATIONS", defaults.max_automations),
            webhook_resends_per_endpoint=_int(
                env, "COPYDESK_WEBHOOK_RESENDS_PER_ENDPOINT", defaults.webhook_resends_per_endpoint
            ),
            webhook_resends_per_account=_int(
                env, "COPYDESK_WEBHOOK_RESENDS_PER_ACCOUNT", defaults.webhook_resends_per_account
            ),
            webhook_threads=_int(env, "COPYDESK_WEBHOOK_THREADS", defaults.webhook_threads),
            webhook_account_concurrency=_int(
                env, "COPYDESK_WEBHOOK_ACCOUNT_CONCURRENCY", defaults.webhook_account_concurrency
            ),
            secret_key=env.get("COPYDESK_SECRET_KEY") or None,
            session_idle_seconds=_int(env, "COPYDESK_SESSION_IDLE_MINUTES", defaults.session_idle_seconds // 60) * 60,
            session_max_seconds=_int(env, "COPYDESK_SESSION_MAX_HOURS", defaults.session_max_seconds // 3600) * 3600,
            anonymous_per_minute=_int(env, "COPYDESK_ANONYMOUS_PER_MINUTE", defaults.anonymous_per_minute),
            openai_api_key=env.get("OPENAI_API_KEY") or None,
            openai_base_url=env.get("OPENAI_BASE_URL") or None,
            openai_prompt_cache_key=_bool(env, "COPYDESK_OPENAI_PROMPT_CACHE_KEY", defaults.openai_prompt_cache_key),
            anthropic_api_key=env.get("ANTHROPIC_API_KEY") or None,
            anthropic_base_url=env.get("ANTHROPIC_BASE_URL") or None,
            comment_edit_seconds=_seconds(env, "COPYDESK_COMMENT_EDIT_SECONDS", defaults.comment_edit_seconds),
            ci_fix_rounds=_int(env, "COPYDESK_CI_FIX_ROUNDS", defaults.ci_fix_rounds, minimum=0),
        )


# What a configured key gives when COPYDESK_MODEL is not set.
DEFAULT_ANTHROPIC_MODEL = "anthropic:claude-sonnet-5-5"
DEFAULT_OPENAI_MODEL = "openai:gpt-5.6-terra"


def default_model(env: Mapping[str, str]) -> str:
    """The model to use when none is configured: a vendor's whose key is set, else the scripted demo."""
    if env.get("ANTHROPIC_API_KEY"):
        return DEFAULT_ANTHROPIC_MODEL
    if env.get("OPENAI_API_KEY"):
        return DEFAULT_OPENAI_MODEL
    return Settings.model


WORKER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def worker_name(raw: str, variable: str = "COPYDESK_WORKER_NAME") -> str:
    """A worker name as given (letters, digits, `.`, `_`, `-`; it names a file), or "" for the default."""
    name = raw.strip()
    if name and not WORKER_NAME.fullmatch(name):
        raise SettingsError(
            f"{variable} must be 1-100 letters, digits, '.', '_' or '-' (starting with a letter or digit), not {raw!r}"
        )
    return name


def _redis_url(raw: str) -> str:
    """The URL as given, once it has the form redis-py connects with: redis://, rediss:// or unix://, a numeric
    port and database. Read with urllib, not redis-py: importing redis here would import ssl in gunicorn's master
    before gevent patches its workers. A Sentinel URL (redis+sentinel://) is read by service.redisconn when the
    client is made, with the same one-line error."""
    if urlsplit(raw).scheme in ("redis+sentinel", "rediss+sentinel"):
        return raw
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 -- raises ValueError on a port that is not a number
    except ValueError as exc:
        raise SettingsError(f"COPYDESK_REDIS_URL is not a Redis URL ({exc}): {_without_password(raw)!r}") from None
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise SettingsError(
            "COPYDESK_REDIS_URL is not a Redis URL (redis://, rediss:// or unix:// expected): "
            f"{_without_password(raw)!r}"
        )
    database = parts.path.strip("/")
    if parts.scheme != "unix" and (not parts.hostname or (database and not database.isdigit())):
        raise SettingsError(
            f"COPYDESK_REDIS_URL must look like redis://HOST:PORT/DB (DB a number), not {_without_password(raw)!r}"
        )
    return raw


def _without_password(url: str) -> str:
    """`url` with the password of its user part, if any, replaced by `***`: it may be shown in an error."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + parts.netloc.rpartition("@")[2]))


def _http_url(name: str, raw: str) -> str:
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(f"{name} must be an http(s) URL such as https://copydesk.example.com, not {raw!r}")
    return raw


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    raw = env.get(name, "").strip().lower() or default
    if raw not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}, not {raw!r}")
    return raw


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    """A whole number of at least `minimum` (0 where zero turns the feature off)."""
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a whole number, not {raw!r}") from None
    if value < minimum:
        raise SettingsError(
            f"{name} must be positive, not {value}"
            if minimum == 1
            else f"{name} must be {minimum} or more, not {value}"
        )
    return value


def _worker_metrics_port(env: Mapping[str, str]) -> int | None:
    if not env.get("COPYDESK_WORKER_METRICS_PORT"):
        return None
    port = _int(env, "COPYDESK_WORKER_METRICS_PORT", 0)
    if port > 65535:
        raise SettingsError(f"COPYDESK_WORKER_METRICS_PORT must be a TCP port (1-65535), not {port}")
    if not env.get("COPYDESK_METRICS_TOKEN"):
        raise SettingsError(
            "COPYDESK_WORKER_METRICS_PORT needs COPYDESK_METRICS_TOKEN: metrics are served to a scraper that sends it"
        )
    return port


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number of seconds, not {raw!r}") from None
    if not 0 <= value < float("inf"):
        raise SettingsError(f"{name} must be zero or more seconds, not {raw!r}")
    return value


def _fault_points(raw: str) -> frozenset[str]:
    from service.faults import POINTS

    points = frozenset(p.strip() for p in raw.split(",") if p.strip())
    unknown = sorted(points - set(POINTS))
    if unknown:
        raise SettingsError(f"COPYDESK_TEST_FAULTS names unknown fault points {unknown}; known: {list(POINTS)}")
    return points


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name} must be 1 or 0 (true or false), not {raw!r}")


def _flag(value: bool) -> str:
    return "1" if value else "0"


def _names(raw: str, default_model: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    if names and default_model not in names:
        names = (default_model, *names)
    return names
