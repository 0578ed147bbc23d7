"""docker-compose.yml runs Copydesk safely: restarts, grace periods, health checks, and a Redis that persists every
write and never evicts (Docker is not needed: the file is read, and its Redis command run on a real redis-server)."""

import re
from pathlib import Path

import pytest
import redis
import yaml

from bot.cli import _parser
from service.preflight import Status, redis_checks
from service.settings import Settings
from tests.redis_servers import running_redis

COMPOSE = Path(__file__).resolve().parent.parent / "docker-compose.yml"


@pytest.fixture(scope="module")
def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def seconds(duration: str) -> float:
    """A Compose duration such as `40s`, `1m30s` or `500ms`, in seconds."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, f"not a Compose duration: {duration!r}"
    return sum(float(n) * units[u] for n, u in parts)


def test_every_service_is_restarted_unless_stopped(services):
    assert set(services) == {"redis", "web", "worker"}
    assert {name: s.get("restart") for name, s in services.items()} == dict.fromkeys(services, "unless-stopped")


def test_web_and_worker_wait_for_a_healthy_redis(services):
    for name in ("web", "worker"):
        assert services[name]["depends_on"] == {"redis": {"condition": "service_healthy"}}, name
    assert services["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


def test_the_worker_is_given_the_stop_grace_plus_ten_seconds(services):
    environment = services["worker"]["environment"]
    grace = int(environment.get("COPYDESK_STOP_GRACE", Settings().stop_grace_seconds))
    assert seconds(services["worker"]["stop_grace_period"]) == grace + 10
    assert seconds(services["web"]["stop_grace_period"]) > 10  # gunicorn's graceful timeout


def test_the_worker_health_check_is_the_liveness_probe(services):
    test = services["worker"]["healthcheck"]["test"]
    assert test[:2] == ["CMD", "copydesk"]
    args = _parser().parse_args(test[2:])
    assert args.command == "doctor" and args.worker_alive == ""  # this container's worker


def test_the_redis_command_persists_every_write_and_never_evicts(services, tmp_path):
    command = services["redis"]["command"]
    assert command[0] == "redis-server"
    with running_redis(tmp_path, *command[1:]) as url:
        client = redis.Redis.from_url(url)
        assert client.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("appendfsync") == {"appendfsync": "always"}
        checks = redis_checks(client, allow_eviction=False)
        assert checks and all(c.status is Status.OK for c in checks), checks
        client.close()


def memory_bytes(size: str) -> int:
    """A Compose or Redis memory size such as `1g`, `768m` or `512mb`, in bytes."""
    number, unit = re.fullmatch(r"(\d+)([kmg]?)b?", size.lower()).groups()
    return int(number) * 1024 ** " kmg".index(unit or " ")


def test_redis_refuses_writes_well_before_its_container_runs_out_of_memory(services, tmp_path):
    command = services["redis"]["command"]
    maxmemory = command[command.index("--maxmemory") + 1]
    # An AOF rewrite forks Redis: its copy-on-write pages count against the container's limit too.
    assert memory_bytes(maxmemory) <= memory_bytes(services["redis"]["mem_limit"]) // 2
    with running_redis(tmp_path, *command[1:]) as url:
        client = redis.Redis.from_url(url)
        assert client.config_get("maxmemory") == {"maxmemory": str(memory_bytes(maxmemory))}
        client.close()


def placeholder_defaults(environment: dict) -> dict[str, str]:
    """The environment as Compose gives it when none of the `${VAR:-default}` placeholders is set."""
    return {name: re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(value)) for name, value in environment.items()}


def test_the_settings_a_deployment_needs_are_placeholders(services):
    environment = services["web"]["environment"]
    assert services["worker"]["environment"] == environment  # the same settings for both
    needed = {
        "COPYDESK_BASE_URL",
        "COPYDESK_SECRET_KEY",
        "COPYDESK_MODEL",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GITHUB_APP_ID",
        "GITHUB_PRIVATE_KEY",
        "GITHUB_WEBHOOK_SECRET",
        "GITHUB_CLIENT_ID",
        "GITHUB_CLIENT_SECRET",
    }
    assert needed <= set(environment)
    for name in needed:
        assert re.fullmatch(r"\$\{" + name + r":-[^}]*\}", environment[name]), name  # set from the host's .env
    readme = (COMPOSE.parent / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in environment), "every variable is in the README's tables"


def test_unset_placeholders_start_with_the_defaults_and_keep_a_saved_registration(services, tmp_path):
    from cryptography.hazmat.primitives.asymmetric import rsa

    from bot.context import github_settings
    from bot.github.registration import registration_path
    from tests.github_fixtures import pem_of

    pem = pem_of(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    env = placeholder_defaults(services["web"]["environment"])
    settings = Settings.from_env(env).with_overrides(data_dir=tmp_path)
    assert settings.redis_url == "redis://redis:6379/0" and settings.model == Settings.model
    assert settings.secret_key is None and settings.log_json
    saved = registration_path(tmp_path)
    saved.parent.mkdir(parents=True, exist_ok=True)
    escaped = pem.strip().replace("\n", "\\n")
    saved.write_text(f"GITHUB_APP_ID=4242\nGITHUB_PRIVATE_KEY={escaped}\nGITHUB_WEBHOOK_SECRET=whsec\n")
    assert github_settings(settings, env).configured  # the empty placeholders do not blank what was saved
