"""Start-up checks of `copydesk web`, `copydesk worker` and `copydesk doctor`, against redis-servers configured
each way, real git and real folders."""

import json
import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest
import redis
import requests

from bot import context
from bot.doctor import startup_checks
from service.preflight import Status, data_dir_check, git_check
from service.settings import Settings
from service.workspace.git import Git
from tests.conftest import free_port
from tests.harness import wait_until
from tests.redis_servers import NO_PERSISTENCE, running_redis
from tests.web_process import COPYDESK

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running


def copydesk(env: dict, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([COPYDESK, *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def redis_with(tmp_path):
    """Factory: the URL of a new redis-server started with the given arguments."""
    import contextlib

    with contextlib.ExitStack() as servers:

        def start(*args: str) -> str:
            return servers.enter_context(running_redis(tmp_path / f"redis{free_port()}", *args)) + "/0"

        yield start


def env_for(redis_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**Settings(redis_url=redis_url, data_dir=tmp_path / "data").to_env(), **extra}


def doctor_json(env: dict) -> tuple[int, dict]:
    proc = copydesk(env, "doctor", "--json")
    return proc.returncode, json.loads(proc.stdout)


def by_name(report: dict) -> dict[str, dict]:
    return {check["check"]: check for check in report["checks"]}


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-lru"])
def test_an_evicting_redis_stops_web_worker_and_doctor_with_the_fix(policy, redis_with, tmp_path):
    env = env_for(redis_with("--maxmemory-policy", policy, *NO_PERSISTENCE), tmp_path)
    for process in (["web", "--port", str(free_port())], ["worker", "--burst"]):
        proc = copydesk(env, *process)
        assert proc.returncode == 2, proc.stderr
        assert f"maxmemory-policy is {policy}" in proc.stderr
        assert "CONFIG SET maxmemory-policy noeviction" in proc.stderr
        assert "COPYDESK_ALLOW_REDIS_EVICTION=1" in proc.stderr and "not starting" in proc.stderr
    code, report = doctor_json(env)
    eviction = by_name(report)["redis eviction"]
    assert code == 2 and report["ok"] is False and eviction["status"] == "error"
    assert "leases" in eviction["detail"] and "noeviction" in eviction["fix"]


def test_the_override_starts_on_an_evicting_redis_with_a_warning(redis_with, tmp_path):
    env = env_for(
        redis_with("--maxmemory-policy", "allkeys-lru", *NO_PERSISTENCE), tmp_path, COPYDESK_ALLOW_REDIS_EVICTION="1"
    )
    proc = copydesk(env, "worker", "--burst")
    assert proc.returncode == 0, proc.stderr
    assert "warning: redis eviction: maxmemory-policy is allkeys-lru" in proc.stderr
    code, report = doctor_json(env)
    assert code == 0 and by_name(report)["redis eviction"]["status"] == "warning"


@pytest.mark.parametrize(
    "args, status, words, fix",
    [
        (("--appendonly", "yes", "--appendfsync", "always", "--save", ""), "ok", "appendfsync always", None),
        (("--appendonly", "yes", "--appendfsync", "everysec", "--save", ""), "ok", "the last second", None),
        (("--appendonly", "yes", "--appendfsync", "no", "--save", ""), "warning", "appendfsync no", "everysec"),
        (("--appendonly", "no", "--save", "60 1"), "ok", "RDB snapshots only", None),
        (NO_PERSISTENCE, "warning", "neither AOF nor RDB", "appendonly yes"),
    ],
)
def test_persistence_is_reported_and_only_its_absence_warned_about(args, status, words, fix, redis_with, tmp_path):
    env = env_for(redis_with(*args), tmp_path)
    code, report = doctor_json(env)
    persistence = by_name(report)["redis persistence"]
    assert code == 0 and report["ok"] is True
    assert persistence["status"] == status and words in persistence["detail"], persistence
    assert persistence["fix"] is None if fix is None else fix in persistence["fix"]
    if status == "warning":
        proc = copydesk(env, "worker", "--burst")
        assert proc.returncode == 0 and "warning: redis persistence" in proc.stderr


def test_a_sound_setup_passes_every_check(redis_with, tmp_path):
    env = env_for(redis_with("--appendonly", "yes", "--appendfsync", "always"), tmp_path)
    proc = copydesk(env, "doctor")
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    for name in ("redis eviction", "redis persistence", "git", "data folder", "model scripted:demo"):
        assert any(line.startswith("ok") and name in line for line in lines), (name, proc.stdout)
    assert "fix:" not in proc.stdout


@pytest.mark.parametrize(
    "models, words",
    [
        ({"COPYDESK_MODEL": "bogus:model-x"}, "model provider 'bogus' is not available"),
        ({"COPYDESK_MODEL": "no-provider"}, "is not of the form provider:model"),
        ({"COPYDESK_MODELS": "scripted:demo,openai:gpt-x"}, "set OPENAI_API_KEY"),
        ({"COPYDESK_MODEL": "anthropic:claude-x"}, "set ANTHROPIC_API_KEY"),
        ({"COPYDESK_MODEL": "scripted:/nonexistent/script.json"}, "cannot read model script"),
    ],
)
def test_an_unusable_model_stops_web_and_worker_before_any_job(models, words, redis_url, tmp_path):
    env = env_for(redis_url, tmp_path, **models)
    processes = [["worker", "--burst"]] + ([["web", "--port", str(free_port())]] if "bogus" in str(models) else [])
    for process in processes:
        proc = copydesk(env, *process)
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
    code, report = doctor_json(env)
    assert code == 2 and any(
        c["status"] == "error" and words in c["detail"] + (c["fix"] or "") for c in report["checks"]
    )


def test_models_with_their_keys_pass(redis_url, tmp_path):
    env = env_for(
        redis_url,
        tmp_path,
        COPYDESK_MODELS="openai:gpt-x,anthropic:claude-x",
        OPENAI_API_KEY="sk-one",
        ANTHROPIC_API_KEY="sk-two",
    )
    code, report = doctor_json(env)
    assert code == 0
    assert [c["check"] for c in report["checks"] if c["check"].startswith("model")] == [
        "model scripted:demo",
        "model openai:gpt-x",
        "model anthropic:claude-x",
    ]
    assert "sk-one" not in json.dumps(report) and "sk-two" not in json.dumps(report)


def test_a_data_folder_that_cannot_be_written_stops_the_worker(redis_url, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    env = env_for(redis_url, tmp_path, COPYDESK_DATA_DIR=str(blocker / "data"))
    proc = copydesk(env, "worker", "--burst")
    assert proc.returncode == 2 and f"data folder: {blocker / 'data'} is not writable" in proc.stderr
    assert "COPYDESK_DATA_DIR" in proc.stderr

    assert data_dir_check(tmp_path / "new" / "folder").status is Status.OK  # created when missing
    if os.geteuid() != 0:  # root writes anywhere
        read_only = tmp_path / "read-only"
        read_only.mkdir()
        read_only.chmod(stat.S_IRUSR | stat.S_IXUSR)
        assert data_dir_check(read_only).status is Status.ERROR


def test_git_must_be_installed_and_recent_enough(tmp_path):
    assert git_check(Git()).status is Status.OK
    for version, status in (
        ("git version 2.20.1", Status.ERROR),
        ("git version 2.32.0", Status.OK),
        ("git version 2.45.2 (Apple Git-154)", Status.OK),
        ("git version 3.0.0", Status.OK),
    ):
        fake = tmp_path / "git"
        fake.write_text(f"#!/bin/sh\necho '{version}'\n")
        fake.chmod(0o755)
        check = git_check(Git(binary=str(fake)))
        assert check.status is status, (version, check)
    old = git_check(Git(binary=str(fake.with_name("missing-git"))))
    assert old.status is Status.ERROR and "install git 2.32 or newer" in old.fix


def test_an_unreachable_redis_does_not_stop_web_or_worker_but_fails_the_doctor(tmp_path, capsys):
    settings = Settings(redis_url=f"redis://:hunter2@127.0.0.1:{free_port()}/0", data_dir=tmp_path / "data")
    ctx = context.build(settings)
    assert startup_checks(ctx, "worker") is True
    err = capsys.readouterr().err
    assert "warning: redis: cannot reach Redis at 127.0.0.1:" in err and "hunter2" not in err
    proc = copydesk(settings.to_env(), "doctor")
    assert proc.returncode == 2 and "error    redis" in proc.stdout and "hunter2" not in proc.stdout
    assert "Workers: unknown (Redis is unreachable)" in proc.stdout


def test_a_full_redis_with_noeviction_refuses_writes_with_503_and_keeps_every_key(redis_with, tmp_path, make_repo):
    from bot.app import create_app
    from tests.conftest import DOCS
    from tests.harness import LiveServer

    settings = Settings(
        redis_url=redis_with("--maxmemory-policy", "noeviction", *NO_PERSISTENCE), data_dir=tmp_path / "data"
    )
    ctx = context.build(settings)
    project = ctx.local.register(ctx.services.projects, path=make_repo(DOCS), ref="main")
    _key, plaintext = ctx.services.keys.create(account="local", name="full")
    client = ctx.services.redis
    client.set("filler", b"x" * 1024 * 1024)
    # Over its limit by a wide margin, so that no write slips in as memory use wavers near the limit.
    client.config_set("maxmemory", client.info("memory")["used_memory"] // 2)
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        client.set("one-more", b"x")
    keys_before = set(client.keys())
    with LiveServer(create_app(settings, ctx)) as server:
        headers = {"Authorization": f"Bearer {plaintext}"}
        refused = requests.post(
            f"{server.url}/v2/agent/{project.id}/job", json={"prompt": "Add a page"}, headers=headers, timeout=10
        )
        assert refused.status_code == 503 and refused.json()["code"] == "unavailable"
        assert set(client.keys()) == keys_before  # nothing evicted, nothing half-written
        client.config_set("maxmemory", 0)
        created = requests.post(
            f"{server.url}/v2/agent/{project.id}/job", json={"prompt": "Add a page"}, headers=headers, timeout=10
        )
        assert created.status_code == 201, created.text


def test_a_worker_started_while_redis_was_down_refuses_an_evicting_redis_at_first_contact(tmp_path):
    port = free_port()
    env = {**os.environ, **env_for(f"redis://127.0.0.1:{port}/0", tmp_path)}
    log = tmp_path / "worker.log"
    with log.open("w") as err:
        worker = subprocess.Popen(
            [COPYDESK, "worker"], env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
    try:
        wait_until(
            lambda: "warning: redis: cannot reach Redis" in log.read_text() or worker.poll() is not None,
            30,
            "the worker's warning that Redis is down",
        )
        assert worker.poll() is None, "the worker should wait for Redis, not exit"
        with running_redis(tmp_path / "redis", "--maxmemory-policy", "allkeys-lru", *NO_PERSISTENCE, port=port):
            code = worker.wait(timeout=30)
            stderr = log.read_text()
            client = redis.Redis(port=port)
            registered = client.smembers("rq:workers")
            client.close()
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)
    assert code == 2, stderr[-3000:]
    assert "warning: redis: cannot reach Redis" in stderr  # at start: no configuration error yet
    assert "copydesk worker: error: redis eviction: maxmemory-policy is allkeys-lru" in stderr
    assert "CONFIG SET maxmemory-policy noeviction" in stderr and "COPYDESK_ALLOW_REDIS_EVICTION=1" in stderr
    assert "not starting" in stderr
    assert registered == set()  # it never became an RQ worker: no work was taken


def test_readyz_checks_the_policy_of_a_redis_that_was_down_when_the_web_started(tmp_path):
    from bot.app import create_app
    from tests.harness import LiveServer

    port = free_port()
    settings = Settings(redis_url=f"redis://127.0.0.1:{port}/0", data_dir=tmp_path / "data")
    with LiveServer(create_app(settings)) as server:
        down = requests.get(f"{server.url}/readyz", timeout=10)
        assert down.status_code == 503 and down.json()["code"] == "unavailable"
        with running_redis(tmp_path / "redis", "--maxmemory-policy", "allkeys-lru", *NO_PERSISTENCE, port=port):
            refused = requests.get(f"{server.url}/readyz", timeout=10)
            assert refused.status_code == 503 and refused.json()["code"] == "redis_evicts_keys", refused.text
            detail = refused.json()["detail"]
            assert "maxmemory-policy is allkeys-lru" in detail and "CONFIG SET maxmemory-policy noeviction" in detail
            assert requests.get(f"{server.url}/healthz", timeout=10).status_code == 200  # alive, not ready
            # Fixed without a restart: the next probe checks again.
            client = redis.Redis(port=port)
            client.config_set("maxmemory-policy", "noeviction")
            client.close()
            ready = requests.get(f"{server.url}/readyz", timeout=10)
            assert ready.status_code == 200 and ready.json() == {"status": "ready"}
