"""Schema versions and `copydesk migrate`: data written by last week's Copydesk, made by that code in the test,
upgrades in place and reads back whole through today's API and stores; an upgrade runs once, under a lock."""

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import redis

from bot import context
from bot.app import create_app
from service.models import Job, JobStatus, Message
from service.settings import Settings
from service.store import schema
from service.store.migrations import LOCK_KEY, MigrationBusy, migrate
from service.store.usage import UsageLedger
from tests.harness import CheckedSession, LiveServer

ROOT = Path(__file__).resolve().parent.parent
# The last commit before the record shapes changed (2026-11-22): API keys without access, expiry, maker or code
# host; jobs without event streams or token budgets; no monthly usage ledger; run locks instead of leases.
SCHEMA_1_COMMIT = "cdbac0ad53bc263aac5f5e423ec9c16e9d5f62db"
WRITER = Path(__file__).parent / "data" / "old_schema_writer.py"


def _env(redis_url: str, data_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COPYDESK_", "GITHUB_"))}
    env.update(
        COPYDESK_REDIS_URL=redis_url,
        COPYDESK_DATA_DIR=str(data_dir),
        COPYDESK_MODEL="scripted:demo",
        COPYDESK_BASE_URL="http://127.0.0.1:9",
    )
    return env


def _copydesk(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT
    )


@pytest.fixture
def old_code(tmp_path) -> Path:
    """Last week's Copydesk, unpacked from this repository's history."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", SCHEMA_1_COMMIT, "service", "bot"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    target = tmp_path / "old"
    target.mkdir()
    archive_path = tmp_path / "old.tar"
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(target, filter="data")
    return target


@pytest.fixture
def old_data(old_code, tmp_path, redis_url) -> dict:
    """Run last week's code against the test's empty Redis database; what it wrote, as it read it back."""
    written = tmp_path / "written"
    written.mkdir()
    env = {**_env(redis_url, tmp_path / "old-data"), "PYTHONPATH": str(old_code)}
    done = subprocess.run(
        [sys.executable, str(WRITER), str(old_code), str(written)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=old_code,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _dump_all(client: redis.Redis) -> dict:
    return {key: client.dump(key) for key in client.scan_iter(count=1000)}


def test_last_weeks_data_migrates_and_reads_back(old_data, redis_url, tmp_path, openapi_validator):
    env = _env(redis_url, tmp_path / "data")
    client = redis.Redis.from_url(redis_url)
    assert client.get(schema.SCHEMA_KEY) is None and schema.status(client).version == schema.UNVERSIONED

    # Today's processes refuse the old data, in one line that gives the fix; the doctor says a migration is due.
    for process in (["worker", "--burst"], ["web", "--port", "9"]):
        refused = _copydesk(env, *process)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.count("\n") == 1 and "copydesk migrate" in refused.stderr
        assert "schema version 1" in refused.stderr
    doctor = json.loads(_copydesk(env, "doctor", "--json").stdout)
    check = next(c for c in doctor["checks"] if c["check"] == "schema")
    assert check["status"] == "error" and "migration is due" in check["detail"]

    migrated = _copydesk(env, "migrate", "--json")
    assert migrated.returncode == 0, migrated.stderr
    report = json.loads(migrated.stdout)
    assert (report["from"], report["to"]) == (1, schema.CURRENT_VERSION)
    changed = {step["step"]: step["changed"] for step in report["steps"]}
    assert changed == {"api-keys": 3, "monthly-usage": 3, "job-events": 4, "run-locks": 1}

    # Run twice: nothing changes.
    before = _dump_all(client)
    again = _copydesk(env, "migrate", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["steps"] == []
    assert _dump_all(client) == before
    assert not list(client.scan_iter("cd:schema:progress:*")) and not list(client.scan_iter("cd:job:*:lock"))
    doctor = json.loads(_copydesk(env, "doctor", "--json").stdout)
    assert next(c for c in doctor["checks"] if c["check"] == "schema")["status"] == "ok"

    _reads_back(old_data, Settings.from_env(env), openapi_validator)


def _reads_back(old: dict, settings: Settings, openapi_validator) -> None:
    ctx = context.build(settings)
    services = ctx.services
    projects = {p.id: p for p in services.projects.all()}
    assert set(projects) == set(old["projects"].values())
    acme = projects[old["projects"]["acme"]]
    assert (acme.account, acme.docs_root, acme.enabled, acme.max_tokens) == ("acme", "docs", True, None)
    keys = {k.id: k for k in services.keys.all()}
    assert {k.host for k in keys.values()} == {"local"} and {k.created_by for k in keys.values()} == {"operator"}
    assert keys[old["keys"]["revoked"][0]].revoked_at is not None

    with LiveServer(create_app(settings, ctx)) as server:
        api = CheckedSession(server.url, openapi_validator)
        local_key, acme_key, revoked_key = (old["keys"][name][1] for name in ("local", "acme", "revoked"))

        def get(path: str, key: str):
            return api.get(f"/v2/agent/{path}", headers={"Authorization": f"Bearer {key}"})

        # Keys still authenticate, within their old scopes.
        assert get(f"{old['projects']['local']}/jobs", revoked_key).status_code == 401
        assert get(f"{old['projects']['local']}/jobs", acme_key).status_code == 404
        listed = {}
        for name, key in (("local", local_key), ("acme", acme_key)):
            response = get(f"{old['projects'][name]}/jobs?limit=100", key)
            assert response.status_code == 200
            listed.update({job["id"]: job for job in response.json()["jobs"]})
        assert set(listed) == {job["id"] for job in old["jobs"].values()}

        for name, record in old["jobs"].items():
            job = Job.from_dict(record)
            key = acme_key if job.account == "acme" else local_key
            path = f"{job.project_id}/job/{job.id}"
            assert get(path, key).json() == job.to_api() == listed[job.id]
            conversation = get(f"{path}/messages", key).json()
            assert conversation["messages"] == [Message.from_dict(m).to_api() for m in old["conversations"][job.id]]
            assert conversation["usage"]["inputTokens"] == job.usage.get("inputTokens", 0)
            events = get(f"{path}/events?after=0", key).json()["events"]
            expected = ["job.created"] + (
                {
                    JobStatus.COMPLETED: ["job.completed"],
                    JobStatus.FAILED: ["job.failed"],
                    JobStatus.ARCHIVED: ["job.archived"],
                }.get(job.status, [])
            )
            assert [e["type"] for e in events] == expected, name
            assert events[0]["timestamp"] == job.created_at and events[-1]["data"]["status"] == job.status.value

        assert old["jobs"]["ran"]["status"] == "active" and old["jobs"]["ran"]["pr_link"]
        assert old["jobs"]["failed"]["error"]["code"] == "model_error"
        # The runs made before the monthly ledger existed count in their account's month (all ran this month).
        for account, key in (("local", local_key), ("acme", acme_key)):
            spent = [
                m["usage"]
                for job in old["jobs"].values()
                if job["account"] == account
                for m in old["conversations"][job["id"]]
                if m["usage"]
            ]
            totals = get("usage", key).json()["account"]
            assert (totals["inputTokens"], totals["outputTokens"]) == (
                sum(u["inputTokens"] for u in spent),
                sum(u["outputTokens"] for u in spent),
            ), account
        assert get("usage", acme_key).json()["account"]["inputTokens"] == 1200

    # The idempotency record still points at its job, and the waiting message is still queued for a worker.
    from service.store.jobs import IdempotencyClaim

    waiting = Job.from_dict(old["jobs"]["waiting"])
    assert services.jobs.replay(IdempotencyClaim(scope="retry-scope", body_hash="h1")).id == waiting.id
    assert services.jobs.has_pending(waiting.id) and waiting.id in services.jobs.pending_jobs()


def test_an_empty_redis_starts_at_the_current_version(redis_url, tmp_path):
    env = _env(redis_url, tmp_path / "data")
    client = redis.Redis.from_url(redis_url)
    assert schema.status(client).state is schema.SchemaState.EMPTY
    done = _copydesk(env, "migrate")
    assert done.returncode == 0 and "initialised at schema version" in done.stdout
    assert int(client.get(schema.SCHEMA_KEY)) == schema.CURRENT_VERSION


def test_the_first_project_of_a_new_redis_records_the_version(redis_client, make_repo, redis_url, tmp_path):
    from tests.conftest import DOCS

    ctx = context.build(Settings(redis_url=redis_url, data_dir=tmp_path / "data"))
    ctx.local.register(ctx.services.projects, path=make_repo(DOCS), ref="main")
    assert int(redis_client.get(schema.SCHEMA_KEY)) == schema.CURRENT_VERSION


def test_unversioned_data_is_never_stamped_by_a_new_write(redis_client):
    redis_client.zadd("cd:projects", {"prj_x": 0})
    assert schema.stamp_new(redis_client).state is schema.SchemaState.OUTDATED
    assert redis_client.get(schema.SCHEMA_KEY) is None


def test_one_migration_at_a_time(redis_client):
    redis_client.zadd("cd:projects", {"prj_x": 0})
    held = redis_client.lock(LOCK_KEY, timeout=30)
    assert held.acquire(blocking=False)
    try:
        with pytest.raises(MigrationBusy):
            migrate(redis_client, event_ttl_seconds=60)
        assert redis_client.get(schema.SCHEMA_KEY) is None
    finally:
        held.release()
    assert migrate(redis_client, event_ttl_seconds=60).version == schema.CURRENT_VERSION


def test_data_of_a_newer_copydesk_is_refused(redis_client):
    redis_client.set(schema.SCHEMA_KEY, schema.CURRENT_VERSION + 1)
    with pytest.raises(schema.SchemaMismatch, match="newer"):
        migrate(redis_client, event_ttl_seconds=60)
    with pytest.raises(schema.SchemaMismatch):
        schema.require_current(redis_client)


def test_readiness_fails_until_the_data_is_migrated(redis_client, redis_url, tmp_path):
    redis_client.zadd("cd:projects", {"prj_x": 0})  # data written before versions were recorded
    client = create_app(Settings(redis_url=redis_url, data_dir=tmp_path / "data")).test_client()
    refused = client.get("/readyz")
    assert refused.status_code == 503 and refused.get_json()["code"] == "schema_mismatch"
    assert "copydesk migrate" in refused.get_json()["detail"]
    migrate(redis_client, event_ttl_seconds=60)
    assert client.get("/readyz").status_code == 200


def test_two_migrations_at_once_upgrade_each_record_once(old_data, redis_client):
    import threading

    barrier, outcomes = threading.Barrier(2), []

    def run() -> None:
        client = redis.Redis(connection_pool=redis_client.connection_pool)
        barrier.wait()
        try:
            outcomes.append(migrate(client, event_ttl_seconds=86400).steps)
        except MigrationBusy as busy:
            outcomes.append(busy)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    did = [o for o in outcomes if isinstance(o, list) and o]
    assert len(did) == 1 and all(isinstance(o, MigrationBusy) or o == [] for o in outcomes if o is not did[0])
    assert int(redis_client.get(schema.SCHEMA_KEY)) == schema.CURRENT_VERSION
    acme = UsageLedger(redis_client).account("local", "acme", old_data["jobs"]["archived"]["created_at"][:7])
    assert (acme.input_tokens, acme.output_tokens) == (1200, 300)  # counted once
    for job in old_data["jobs"].values():
        assert redis_client.xlen(f"cd:job:{job['id']}:events") >= 1
