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
        assert [c.status for c in checks] == [Status.OK, Status.OK], checks
        client.close()
