"""Measures what Redis high availability costs and buys: a Sentinel failover under load as clients see it, and
the latency of a create with COPYDESK_REDIS_MIN_REPLICAS 0 and 1.

Run by hand: `.venv/bin/python bench/failover.py [--creates 300] [--replicas 1] [--min-replicas N]
[--fault failover|kill]`.
Prints the failover duration as clients see it (the first write answered 503 to the first write answered 2xx
after it), the writes acknowledged and those present afterwards, and the median and p99 create latency with
MIN_REPLICAS 0 and 1 (and their ratio), all on loopback: a primary, `--replicas` replicas and one sentinel.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot import context  # noqa: E402
from bot.app import create_app  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from tests.conftest import commit_files  # noqa: E402
from tests.failover import FailoverRig  # noqa: E402
from tests.redis_servers import SentinelGroup  # noqa: E402


def failover(workdir: Path, *, replicas: int, min_replicas: int, fault: str) -> str:
    """One failover under load; the rig's figures."""
    with FailoverRig(workdir, min_replicas=min_replicas, replicas=replicas) as rig:
        rig.start_traffic()
        rig.wait_for_pushes(2)
        failed_at = time.monotonic()
        rig.sentinel_failover() if fault == "failover" else rig.kill_primary()
        rig.wait_for_service(after=failed_at)
        rig.wait_for_pushes(rig.pushed() + 1)
        return rig.settle_and_check().figures()


def create_latency(workdir: Path, *, replicas: int, creates: int) -> dict[int, list[float]]:
    """Seconds per `POST /v2/agent/{project}/job` through the app (its after-request WAIT included), alternating
    between MIN_REPLICAS 0 and 1 on the same Sentinel group."""
    git = Git()
    bare = workdir / "docs.git"
    git.run("init", "--bare", "-q", str(bare))
    commit_files(git, bare, {"README.md": "# Docs\n"})
    with SentinelGroup(workdir / "redis", replicas=replicas) as group:
        base = Settings(
            redis_url=group.url(), data_dir=workdir / "data", model="scripted:demo", rate_limit_per_hour=10 * creates
        )
        ctx = context.build(base)
        project = ctx.local.register(ctx.services.projects, path=bare, ref="main")
        _key, key = ctx.services.keys.create(account="local", name="bench")
        clients = {n: create_app(base.with_overrides(redis_min_replicas=n)).test_client() for n in (0, 1)}
        headers = {"Authorization": f"Bearer {key}"}
        times: dict[int, list[float]] = {0: [], 1: []}
        for i in range(creates):
            for n, client in clients.items():
                started = time.perf_counter()
                response = client.post(f"/v2/agent/{project.id}/job", json={"prompt": f"Page {i}"}, headers=headers)
                times[n].append(time.perf_counter() - started)
                assert response.status_code == 201, response.get_data(as_text=True)
        ctx.services.redis.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--creates", type=int, default=300, help="creates per MIN_REPLICAS setting")
    parser.add_argument("--replicas", type=int, default=1, help="replicas (each node's min-replicas-to-write)")
    parser.add_argument(
        "--min-replicas",
        type=int,
        default=None,
        help="COPYDESK_REDIS_MIN_REPLICAS during the failover (default: --replicas)",
    )
    parser.add_argument(
        "--fault",
        choices=("failover", "kill"),
        default="failover",
        help="SENTINEL FAILOVER, or SIGKILL the primary (restarted once the replica is promoted)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        times = create_latency(Path(tmp) / "latency", replicas=args.replicas, creates=args.creates)
    medians = {n: statistics.median(t) for n, t in times.items()}
    for n, t in times.items():
        ordered = sorted(t)
        print(
            f"create, MIN_REPLICAS {n}: median {medians[n] * 1000:.2f} ms, p99 "
            f"{ordered[int(len(ordered) * 0.99) - 1] * 1000:.2f} ms ({len(t)} creates)"
        )
    print(
        f"ratio MIN_REPLICAS 1 / 0: {medians[1] / medians[0]:.2f}x "
        f"(+{(medians[1] - medians[0]) * 1000:.2f} ms per write)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        min_replicas = args.replicas if args.min_replicas is None else args.min_replicas
        print(f"{args.fault} with {args.replicas} replica(s), MIN_REPLICAS {min_replicas}:")
        print(failover(Path(tmp) / "failover", replicas=args.replicas, min_replicas=min_replicas, fault=args.fault))


if __name__ == "__main__":
    main()
