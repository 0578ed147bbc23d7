"""Backups as the README says to take them: an RDB snapshot (BGSAVE) or the AOF folder (BGREWRITEAOF), copied while
Redis runs, then restored into a fresh redis-server: every project, key, job, message and event is there."""

import json
import shutil
from pathlib import Path

import pytest
import redis

from bot import context
from service.settings import Settings
from service.store import schema
from tests.conftest import DOCS
from tests.flow_scripts import FAQ, finish
from tests.harness import wait_until
from tests.redis_servers import running_redis


def _snapshot(client: redis.Redis) -> dict:
    """Every key of Copydesk's data with its type and value (streams and hashes included), for comparison."""
    read = {
        "string": client.get,
        "hash": client.hgetall,
        "set": client.smembers,
        "stream": client.xrange,
        "list": lambda key: client.lrange(key, 0, -1),
        "zset": lambda key: client.zrange(key, 0, -1, withscores=True),
    }
    found = {}
    for key in client.scan_iter(match="cd:*", count=1000):
        kind = client.type(key).decode()
        found[key] = (kind, read[kind](key))
    return found


def _write_data(url: str, tmp_path: Path, make_repo) -> tuple[Settings, dict]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"runs": [{"steps": [FAQ, finish()]}]}))
    settings = Settings(redis_url=url, data_dir=tmp_path / "data", model=f"scripted:{script}")
    ctx = context.build(settings)
    services = ctx.services
    project = ctx.local.register(services.projects, path=make_repo(DOCS), ref="main")
    _key, plaintext = services.keys.create(account="local", name="backup test")
    done, _ = services.jobs.create(project, prompt="Add an FAQ", model=settings.model, ref="main", as_draft=False)
    ctx.runner().process(done.id)
    waiting, _ = services.jobs.create(project, prompt="Later", model=settings.model, ref="main", as_draft=False)
    assert services.jobs.get(done.id).status.value == "completed"
    return settings, {"project": project.id, "key": plaintext, "jobs": [done.id, waiting.id]}


def _reads_back(settings: Settings, written: dict) -> None:
    services = context.build(settings).services
    assert schema.status(services.redis).state is schema.SchemaState.CURRENT
    assert [p.id for p in services.projects.all()] == [written["project"]]
    key = services.keys.authenticate(f"Bearer {written['key']}")
    assert key.allows(services.projects.get(written["project"]))
    done, waiting = (services.jobs.get(job_id) for job_id in written["jobs"])
    assert done.status.value == "completed" and done.pr_link and waiting.status.value == "active"
    assert [m.role.value for m in services.jobs.conversation(done.id)] == ["user", "agent"]
    assert "job.completed" in [e.type.value for e in services.events.after(done.id, "0")]
    assert services.jobs.has_pending(waiting.id)


def _busy(client: redis.Redis) -> bool:
    """Whether Redis is writing (or about to write) a snapshot or an AOF rewrite."""
    found = client.info("persistence")
    return any(found[name] for name in ("rdb_bgsave_in_progress", "aof_rewrite_in_progress", "aof_rewrite_scheduled"))


@pytest.mark.parametrize("kind", ["rdb", "aof"])
def test_a_backup_restores_into_a_fresh_redis(kind, tmp_path, make_repo):
    live_dir, restored_dir = tmp_path / "live", tmp_path / "restored"
    with running_redis(live_dir, "--appendonly", "yes", "--appendfsync", "always", "--save", "") as url:
        settings, written = _write_data(f"{url}/0", tmp_path, make_repo)
        client = redis.Redis.from_url(url)
        before = _snapshot(client)
        # Redis writes its first AOF in the background at start; a BGSAVE meanwhile would only be scheduled.
        wait_until(lambda: not _busy(client), 20, "Redis's own AOF rewrite to finish")
        # Done when the count of saves (rewrites) went up: LASTSAVE has a one-second resolution.
        if kind == "rdb":
            saves = client.info("persistence")["rdb_saves"]
            client.bgsave()
            wait_until(
                lambda: client.info("persistence")["rdb_saves"] > saves and not _busy(client), 20, "BGSAVE to finish"
            )
            assert client.info("persistence")["rdb_last_bgsave_status"] == "ok"
            restored_dir.mkdir()
            shutil.copy2(live_dir / "dump.rdb", restored_dir / "dump.rdb")
            start = ("--appendonly", "no", "--save", "")
        else:
            rewrites = client.info("persistence")["aof_rewrites"]
            client.bgrewriteaof()
            wait_until(
                lambda: client.info("persistence")["aof_rewrites"] > rewrites and not _busy(client),
                20,
                "BGREWRITEAOF to finish",
            )
            assert client.info("persistence")["aof_last_bgrewrite_status"] == "ok"
            restored_dir.mkdir()
            shutil.copytree(live_dir / "appendonlydir", restored_dir / "appendonlydir")
            start = ("--appendonly", "yes", "--save", "")
        client.close()

    with running_redis(restored_dir, *start) as url:
        restored = redis.Redis.from_url(url)
        assert _snapshot(restored) == before
        restored.close()
        _reads_back(settings.with_overrides(redis_url=f"{url}/0"), written)
