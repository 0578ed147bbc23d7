"""Configuration, read once from the environment into a typed, immutable settings object."""

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping


class SettingsError(ValueError):
    """A configuration value that cannot be used; the message names the variable."""


@dataclass(frozen=True)
class Settings:
    redis_url: str = "redis://127.0.0.1:6379/0"
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
    run_timeout_seconds: int = 900
    max_tokens: int = 1_000_000  # model tokens (input + output) one run may use
    # Characters of context per model request (~4 per token): older tool output is elided past it...
    agent_context_chars: int = 200_000
    # ...and of the job's earlier rounds a follow-up sees, older rounds squeezed past it.
    agent_history_chars: int = 40_000
    max_attempts: int = 3
    git_author_name: str = "Copydesk"
    git_author_email: str = "copydesk@localhost"
    log_json: bool = False
    # The vendors' own variables; keys are secrets, so they never appear in a repr or a log line.
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    anthropic_api_key: str | None = field(default=None, repr=False)
    anthropic_base_url: str | None = None

    @property
    def allowed_models(self) -> tuple[str, ...]:
        """The model names a job may ask for; the default model is always one of them."""
        return self.models or (self.model,)

    @property
    def mirrors_dir(self) -> Path:
        return self.data_dir / "mirrors"

    def with_overrides(self, **changes) -> "Settings":
        """A copy with some values replaced (tests and the demo use this)."""
        return replace(self, **changes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """Read every `COPYDESK_*` variable once; unset ones keep their defaults."""
        env = os.environ if environ is None else environ
        defaults = cls()
        model = env.get("COPYDESK_MODEL") or default_model(env)
        return cls(
            redis_url=env.get("COPYDESK_REDIS_URL") or defaults.redis_url,
            data_dir=Path(env["COPYDESK_DATA_DIR"]).expanduser() if env.get("COPYDESK_DATA_DIR") else defaults.data_dir,
            base_url=(env.get("COPYDESK_BASE_URL") or defaults.base_url).rstrip("/"),
            model=model,
            models=_names(env.get("COPYDESK_MODELS", ""), model),
            queue_name=env.get("COPYDESK_QUEUE") or defaults.queue_name,
            rate_limit_per_hour=_int(env, "COPYDESK_RATE_LIMIT", defaults.rate_limit_per_hour),
            max_prompt_chars=_int(env, "COPYDESK_MAX_PROMPT_CHARS", defaults.max_prompt_chars),
            max_body_bytes=_int(env, "COPYDESK_MAX_BODY_BYTES", defaults.max_body_bytes),
            retention_days=_int(env, "COPYDESK_RETENTION_DAYS", defaults.retention_days),
            max_steps=_int(env, "COPYDESK_MAX_STEPS", defaults.max_steps),
            max_bytes_written=_int(env, "COPYDESK_MAX_BYTES_WRITTEN", defaults.max_bytes_written),
            run_timeout_seconds=_int(env, "COPYDESK_RUN_TIMEOUT", defaults.run_timeout_seconds),
            max_tokens=_int(env, "COPYDESK_MAX_TOKENS", defaults.max_tokens),
            agent_context_chars=_int(env, "COPYDESK_AGENT_CONTEXT_CHARS", defaults.agent_context_chars),
            agent_history_chars=_int(env, "COPYDESK_AGENT_HISTORY_CHARS", defaults.agent_history_chars),
            max_attempts=_int(env, "COPYDESK_MAX_ATTEMPTS", defaults.max_attempts),
            git_author_name=env.get("COPYDESK_GIT_AUTHOR_NAME") or defaults.git_author_name,
            git_author_email=env.get("COPYDESK_GIT_AUTHOR_EMAIL") or defaults.git_author_email,
            log_json=env.get("COPYDESK_LOG_FORMAT", "text") == "json",
            openai_api_key=env.get("OPENAI_API_KEY") or None,
            openai_base_url=env.get("OPENAI_BASE_URL") or None,
            anthropic_api_key=env.get("ANTHROPIC_API_KEY") or None,
            anthropic_base_url=env.get("ANTHROPIC_BASE_URL") or None,
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


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a whole number, not {raw!r}") from None
    if value <= 0:
        raise SettingsError(f"{name} must be positive, not {value}")
    return value


def _names(raw: str, default_model: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    if names and default_model not in names:
        names = (default_model, *names)
    return names
