"""`Settings.to_env()` gives back, through `from_env()`, the settings it was made from."""

from dataclasses import fields
from pathlib import Path

from service.faults import POINTS
from service.settings import Settings

# A value other than the default for every setting: a new setting fails the test below until it is listed here
# and `to_env` writes it.
CHANGED = dict(
    redis_url="redis://127.0.0.1:6390/4",
    redis_min_replicas=2,
    redis_replica_wait_ms=250,
    data_dir=Path("/tmp/copydesk-data"),
    base_url="https://copydesk.example.com",
    model="scripted:other",
    models=("scripted:other", "openai:gpt-x"),
    queue_name="desk",
    rate_limit_per_hour=7,
    max_prompt_chars=900,
    max_body_bytes=4096,
    retention_days=3,
    max_steps=9,
    max_bytes_written=1000,
    max_file_bytes=2000,
    run_timeout_seconds=60,
    max_tokens=5000,
    agent_context_chars=3000,
    agent_history_chars=1500,
    max_attempts=5,
    tool_timeout_seconds=11,
    lease_ttl_seconds=3,
    sweep_interval_seconds=1,
    stop_grace_seconds=4,
    test_faults=frozenset(list(POINTS)[:2]),
    test_clock_file=Path("/tmp/copydesk-clock"),
    automation_tick_seconds=7,
    model_retry_seconds=9,
    allow_redis_eviction=True,
    worker_heartbeat_seconds=2,
    worker_name="w-1.test",
    git_author_name="Someone",
    git_author_email="someone@example.com",
    log_json=True,
    metrics_token="metrics-secret",
    metrics_dir_setting=Path("/tmp/copydesk-metrics"),
    worker_metrics_port=9109,
    event_retention=50,
    event_ttl_days=2,
    purge_days=4,
    sse_keepalive_seconds=3,
    max_streams=20,
    max_streams_per_key=5,
    max_streams_per_account=6,
    redis_socket_timeout=4,
    redis_connect_timeout=2,
    redis_max_connections=40,
    webhook_allow_private=True,
    webhook_retry_seconds=1,
    webhook_timeout_seconds=3,
    webhook_max_endpoints=2,
    max_automations=4,
    webhook_resends_per_endpoint=3,
    webhook_resends_per_account=4,
    webhook_threads=2,
    webhook_account_concurrency=1,
    secret_key="sealing-key",
    session_idle_seconds=600,
    session_max_seconds=7200,
    anonymous_per_minute=5,
    comment_edit_seconds=2.5,
    ci_fix_rounds=0,
    openai_api_key="sk-test",
    openai_base_url="http://127.0.0.1:9/v1",
    openai_prompt_cache_key=False,
    anthropic_api_key="ak-test",
    anthropic_base_url="http://127.0.0.1:9",
)


def test_the_defaults_come_back_from_their_environment():
    defaults = Settings()
    assert Settings.from_env(defaults.to_env()) == defaults


def test_every_setting_changed_comes_back_from_its_environment():
    changed = Settings(**CHANGED)
    defaults = Settings()
    assert sorted(CHANGED) == sorted(f.name for f in fields(Settings))
    assert [name for name in CHANGED if getattr(changed, name) == getattr(defaults, name)] == []
    assert Settings.from_env(changed.to_env()) == changed


def test_unset_optional_settings_override_the_parent_environment():
    """A child process started with `{**os.environ, **to_env()}` does not inherit a key the settings lack."""
    inherited = {"OPENAI_API_KEY": "sk-parent", "COPYDESK_METRICS_TOKEN": "parent", "COPYDESK_SECRET_KEY": "x"}
    assert Settings.from_env({**inherited, **Settings().to_env()}) == Settings()
