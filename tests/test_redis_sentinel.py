"""Copydesk on a Sentinel-managed Redis: the URL form, a client that follows a failover by itself, writes confirmed
by replicas, and readiness, doctor and worker telling the truth about a node that takes no writes."""

import subprocess
import sys

import pytest
import redis

from bot import context
from bot.app import create_app
from bot.doctor import doctor
from service import redisconn
from service.errors import WriteNotReplicated
from service.redisconn import RedisUrlError, parse_sentinel_url
from service.replication import Durability, NotWritable
from service.settings import Settings
from tests.harness import wait_until
from tests.redis_servers import QUICK_PERIODS, SERVICE, SentinelGroup, ha_node


def test_a_sentinel_url_names_its_sentinels_service_database_credentials_and_tls():
    parsed = parse_sentinel_url(
        "rediss+sentinel://app:p%40ss@10.0.0.1:26379,[::1]:26380,sentinel-c/copydesk/3"
        "?sentinel_password=s3cret&ssl_ca_certs=/etc/ca.pem"
    )
    assert parsed.sentinels == (("10.0.0.1", 26379), ("::1", 26380), ("sentinel-c", 26379))
    assert (parsed.service, parsed.db, parsed.username, parsed.password) == ("copydesk", 3, "app", "p@ss")
    assert parsed.sentinel_password == "s3cret" and parsed.sentinel_username is None
    assert parsed.tls and parsed.tls_options == (("ssl_ca_certs", "/etc/ca.pem"),)
    assert "p@ss" not in repr(parsed) and "s3cret" not in repr(parsed)
    plain = parse_sentinel_url("redis+sentinel://h:1/svc")
    assert (plain.db, plain.tls, plain.password) == (0, False, None)
    assert parse_sentinel_url("redis+sentinel://h:1/svc?ssl=true").tls


@pytest.mark.parametrize(
    "url, says",
    [
        ("redis+sentinel://h:26379", "names its service"),
        ("redis+sentinel://h:26379/svc/0/extra", "names its service"),
        ("redis+sentinel://h:26379/svc/zero", "database must be a number"),
        ("redis+sentinel://h:port/svc", "is not host:port"),
        ("redis+sentinel://h:1,,h:2/svc", "at least one host:port"),
        ("redis+sentinel://h:1/svc?sentinel_pasword=x", "unknown option"),
        ("redis+sentinel://h:1/svc?ssl_ca_certs=/ca.pem", r"TLS options need rediss\+sentinel://"),
        ("redis+sentinel://h:1/svc?ssl=maybe", "ssl must be true or false"),
    ],
)
def test_a_bad_sentinel_url_is_refused_with_what_is_wrong_and_never_the_password(url, says):
    with pytest.raises(RedisUrlError, match=says) as refused:
        redisconn.client(url.replace("://", "://user:hunter2@"))
    assert "hunter2" not in str(refused.value)


def test_a_plain_url_still_gives_a_plain_client(redis_url):
    client = redisconn.client(redis_url)
    assert client.ping() and redisconn.sentinel_of(client) is None
    with pytest.raises(RedisUrlError, match="COPYDESK_REDIS_URL"):
        redisconn.client("http://127.0.0.1:6379/0")


@pytest.fixture
def own_logging():
    """`main` points the root logger at the stderr of the moment (capsys's): give the next tests theirs back."""
    import logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_the_cli_refuses_a_bad_url_in_one_line(monkeypatch, capsys, own_logging):
    from bot.cli import main

    monkeypatch.setenv("COPYDESK_REDIS_URL", "redis+sentinel://h:26379")
    assert main(["project", "list"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("copydesk: error: COPYDESK_REDIS_URL") and err.count("\n") == 1


@pytest.fixture
def group(tmp_path):
    # repl-diskless-sync-delay 0: a primary syncs a replica at once instead of waiting Redis's default 5 s for more
    # replicas to sync with, at every group start and every demoted primary's resync; no test here is about it.
    # QUICK_PERIODS: the sentinels see these changes within a second instead of 10.
    node_args = (*ha_node(1), "--repl-diskless-sync-delay", "0")
    with SentinelGroup(tmp_path / "redis", node_args=node_args, periods=QUICK_PERIODS) as running:
        yield running


def test_a_client_on_the_sentinel_url_follows_a_failover_and_its_writes_are_confirmed_by_the_replica(group):
    client = redisconn.client(group.url(), socket_timeout=5)
    durability = Durability(client, min_replicas=1, wait_ms=2000)
    client.set("before", "1")
    durability.confirm()
    old, new = group.primary, group.replicas[0]
    assert redisconn.address(client).startswith(old.address)
    with group.sentinels[0].client() as sentinel:
        sentinel.execute_command("SENTINEL", "FAILOVER", SERVICE)
    wait_until(lambda: group.master_port() == new.port, 30, "Sentinel to name the new primary", interval=0.1)
    # The same client goes on by itself: its connections to the demoted primary are refused and dropped.
    wait_until(lambda: _wrote(client, "after"), 40, "a write to succeed on the new primary", interval=0.1)
    assert redisconn.address(client).startswith(new.address)
    group.wait_until_known(new.port)
    durability.confirm()
    durability.writable()
    with old.client() as demoted:
        assert demoted.get("before") == b"1" and demoted.get("after") == b"1"
        with pytest.raises(redis.ReadOnlyError):
            demoted.set("stray", "1")


def test_with_its_replica_gone_a_write_is_not_confirmed_and_the_primary_refuses_more(group):
    client = redisconn.client(group.url(), socket_timeout=5)
    durability = Durability(client, min_replicas=1, wait_ms=300)
    group.replicas[0].kill()
    with group.primary.client() as primary:
        # The primary counts its replica as gone once the replica's last acknowledgement is older than the max lag.
        primary.config_set("min-replicas-max-lag", "1")
        wait_until(lambda: primary.info("replication")["connected_slaves"] == 0, 20, "the replica link to drop")
        with pytest.raises(NotWritable, match="min-replicas-to-write is 1"):
            durability.writable()
        # The primary refuses the write itself (min-replicas-to-write): to the client, an outage.
        with pytest.raises(redis.ConnectionError, match="NOREPLICAS"):
            durability.confirm()
        # Without min-replicas-to-write the write is taken, but WAIT does not see it on a replica: not confirmed.
        primary.config_set("min-replicas-to-write", "0")
        with pytest.raises(WriteNotReplicated, match="0 of the 1"):
            durability.confirm()
        with pytest.raises(NotWritable, match="0 replica\\(s\\) online; COPYDESK_REDIS_MIN_REPLICAS needs 1"):
            durability.writable()
    assert Durability(client, min_replicas=0, wait_ms=300).confirm() is None  # 0: nothing waits, as before


def test_a_write_its_replicas_do_not_confirm_is_answered_503_never_a_success(group, tmp_path, make_repo):
    from tests.conftest import DOCS

    settings = Settings(
        redis_url=group.url(), data_dir=tmp_path / "data", redis_min_replicas=1, redis_replica_wait_ms=300
    )
    ctx = context.build(settings)
    project = ctx.local.register(ctx.services.projects, path=make_repo(DOCS), ref="main")
    _key, key = ctx.services.keys.create(account="local", name="t")
    api = create_app(settings, ctx).test_client()
    headers = {"Authorization": f"Bearer {key}"}
    # Before the fault the replica confirms the write; a long wait for it, so that a busy machine cannot fail this
    # one (WAIT returns as soon as the replica answers). The writes below, that nothing can confirm, wait 300 ms.
    patient = settings.with_overrides(redis_replica_wait_ms=5000)
    created = (
        create_app(patient, context.build(patient))
        .test_client()
        .post(f"/v2/agent/{project.id}/job", json={"prompt": "Add a page"}, headers=headers)
    )
    assert created.status_code == 201, created.json
    group.replicas[0].kill()
    with group.primary.client() as primary:
        primary.config_set("min-replicas-to-write", "0")  # the write is taken; only WAIT can tell it is not safe
        wait_until(lambda: primary.info("replication")["connected_slaves"] == 0, 20, "the replica link to drop")
    for method, path, body in (
        ("POST", f"/v2/agent/{project.id}/job", {"prompt": "Another"}),
        ("POST", f"/v2/agent/{project.id}/job/{created.json['id']}/message", {"prompt": "More"}),
    ):
        refused = api.open(path, method=method, json=body, headers=headers)
        assert refused.status_code == 503 and refused.json["code"] == "unavailable", refused.json
        assert "0 of the 1" in refused.json["detail"] and refused.headers["Retry-After"]
    # Reads are not held up, and with MIN_REPLICAS 0 the same write is answered as before.
    assert api.get(f"/v2/agent/{project.id}/job/{created.json['id']}", headers=headers).status_code == 200
    single = settings.with_overrides(redis_min_replicas=0)
    assert (
        create_app(single, context.build(single))
        .test_client()
        .post(f"/v2/agent/{project.id}/job", json={"prompt": "Single"}, headers=headers)
        .status_code
        == 201
    )


def test_readyz_doctor_and_a_burst_worker_refuse_a_replica(group, tmp_path, monkeypatch, capsys):
    # A plain URL that points at the replica: what an operator who hand-edits the URL after a failover gets.
    url = f"redis://{group.replicas[0].address}/0"
    settings = Settings(redis_url=url, data_dir=tmp_path / "data")
    ctx = context.build(settings)
    client = create_app(settings, ctx).test_client()
    response = client.get("/readyz")
    assert response.status_code == 503 and "read-only slave" in response.json["detail"]
    assert response.headers["Retry-After"]
    assert doctor(ctx, as_json=False) == 2
    out = capsys.readouterr().out
    assert "redis role" in out and "error" in out and "not a primary" in out
    worker = subprocess.run(
        [sys.executable, "-m", "bot.cli", "worker", "--burst"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**_env(), "COPYDESK_REDIS_URL": url, "COPYDESK_DATA_DIR": str(tmp_path / "data")},
    )
    assert worker.returncode == 2
    lines = [line for line in worker.stderr.splitlines() if line.startswith("copydesk worker: error")]
    assert lines == [lines[0]] and "takes no writes" in lines[0] and "Traceback" not in worker.stderr, worker.stderr
    # On the Sentinel URL the same process finds the primary: ready, and doctor shows the sentinels' view.
    sentinel_settings = Settings(redis_url=group.url(), data_dir=tmp_path / "data", redis_min_replicas=1)
    sentinel_ctx = context.build(sentinel_settings)
    assert create_app(sentinel_settings, sentinel_ctx).test_client().get("/readyz").status_code == 200
    assert doctor(sentinel_ctx, as_json=True) == 0
    out = capsys.readouterr().out
    assert '"redis sentinel"' in out and f"primary {group.primary.address}" in out and "1 replica(s) online" in out


def _wrote(client: redis.Redis, key: str) -> bool:
    try:
        return bool(client.set(key, "1"))
    except redis.RedisError:
        return False


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("COPYDESK_")}


def test_the_ha_compose_file_points_copydesk_at_its_sentinels_and_keeps_a_demoted_primary_from_writing(tmp_path):
    import re
    from pathlib import Path

    import yaml

    from service.preflight import Status, redis_checks
    from tests.redis_servers import RedisNode

    services = yaml.safe_load((Path(__file__).resolve().parent.parent / "docker-compose.ha.yml").read_text())[
        "services"
    ]
    sentinels = sorted(name for name in services if name.startswith("sentinel-"))
    assert len(sentinels) == 3
    monitored = re.search(r"sentinel monitor (\S+) (\S+) 6379 (\d)", services["sentinel-1"]["command"][2])
    assert monitored and monitored[2] == "redis-a" and int(monitored[3]) == 2  # a majority of three
    for name in ("web", "worker"):
        url = parse_sentinel_url(services[name]["environment"]["COPYDESK_REDIS_URL"])
        assert sorted(host for host, _port in url.sentinels) == sentinels and url.service == monitored[1]
        assert services[name]["environment"]["COPYDESK_REDIS_MIN_REPLICAS"] == "1"
    assert "/readyz" in services["web"]["healthcheck"]["test"][-1]
    # The data nodes' settings, run on a real redis-server: no eviction, persistence, and no write without a replica.
    command = services["redis-a"]["command"]
    assert command[0] == "redis-server" and services["redis-b"]["command"][: len(command)] == command[:-1] + ["redis-b"]
    node = RedisNode(tmp_path / "node", *command[1:]).start()
    try:
        with node.client() as client:
            assert all(check.status is Status.OK for check in redis_checks(client, allow_eviction=False))
            with pytest.raises(redis.ResponseError, match="NOREPLICAS"):
                client.set("alone", "1")
    finally:
        node.stop()


def test_a_cli_write_on_a_replica_or_unconfirmed_fails_in_one_line_and_prints_no_result(
    group, tmp_path, monkeypatch, capsys, own_logging
):
    from bot.cli import main

    monkeypatch.setenv("COPYDESK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COPYDESK_REDIS_URL", f"redis://{group.replicas[0].address}/0")
    assert main(["key", "create", "--account", "local"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Redis refused the command: You can't write" in err
    # On the Sentinel URL, with the replica gone: the key may be stored, but it is not shown as created.
    group.replicas[0].kill()
    with group.primary.client() as primary:
        primary.config_set("min-replicas-to-write", "0")
        wait_until(lambda: primary.info("replication")["connected_slaves"] == 0, 20, "the replica link to drop")
    monkeypatch.setenv("COPYDESK_REDIS_URL", group.url())
    monkeypatch.setenv("COPYDESK_REDIS_MIN_REPLICAS", "1")
    monkeypatch.setenv("COPYDESK_REDIS_REPLICA_WAIT_MS", "200")
    assert main(["key", "create", "--account", "local"]) == 2
    out, err = capsys.readouterr()
    assert "cdk_" not in out and "0 of the 1 Redis replica(s)" in err and err.count("\n") == 1
