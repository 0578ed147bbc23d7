"""Measures `copydesk migrate` on many jobs: jobs made by today's store, then stripped back to schema version 1 (no
schema key, no event streams, run usage not yet in the monthly totals), migrated, and the rate per job reported
beside the rate of creating them in the same run (the baseline).

Run by hand: `.venv/bin/python bench/migrate.py [--jobs 2000]`.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis  # noqa: E402

from bot import context  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store import schema  # noqa: E402
from service.store.jobs import RunOutcome  # noqa: E402
from service.store.migrations import migrate  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from tests.conftest import commit_files  # noqa: E402
from tests.redis_servers import NO_PERSISTENCE, running_redis  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2000)
    jobs = parser.parse_args().jobs
    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        git = Git()
        bare = workdir / "docs.git"
        git.run("init", "--bare", "-q", str(bare))
        commit_files(git, bare, {"README.md": "# Docs\n"})
        with running_redis(workdir / "redis", *NO_PERSISTENCE) as url:
            ctx = context.build(Settings(redis_url=url + "/0", data_dir=workdir / "data"))
            services = ctx.services
            project = ctx.local.register(services.projects, path=bare, ref="main")
            started = time.perf_counter()
            for n in range(jobs):
                job, _ = services.jobs.create(
                    project, prompt=f"job {n}", model="scripted:demo", ref="main", as_draft=False
                )
                _, message = services.jobs.start_next(job.id)
                services.jobs.finish_message(
                    job.id, message.id, RunOutcome(reply="done", usage={"inputTokens": 100, "outputTokens": 10})
                )
            made = time.perf_counter() - started
            client = redis.Redis.from_url(url + "/0")
            for key in client.scan_iter(match="cd:job:*:events", count=1000):
                client.delete(key)
            client.delete(schema.SCHEMA_KEY, *client.scan_iter(match="cd:usage:*", count=1000))
            started = time.perf_counter()
            report = migrate(client, event_ttl_seconds=30 * 86400)
            took = time.perf_counter() - started
    print(f"{jobs} jobs: created (job, run, outcome) in {made:.2f} s ({made / jobs * 1000:.2f} ms a job)")
    print(
        f"migrated 1 -> {report.version} in {took:.2f} s ({took / jobs * 1000:.2f} ms a job, "
        f"{took / made:.2f}x the time to create them): " + ", ".join(f"{s.name} {s.changed}" for s in report.steps)
    )


if __name__ == "__main__":
    main()
