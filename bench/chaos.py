"""Chaos, longer than the test: random SIGKILLs of workers, work horses and whole hosts (worker and horse), Redis
and the web killed and restarted. Prints kills, messages, lost, duplicates, stuck, run_interrupted, the time a
killed run took to go again (p50/p90/max) and 5xx answers outside the planned outages.

Run by hand: `.venv/bin/python bench/chaos.py [--seconds 150] [--workers 5] [--jobs 4] [--follow-ups 5]
[--kill-every 2.5] [--seed 8]`. Uses the default lease and sweep intervals. Needs redis-server and git.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.settings import Settings  # noqa: E402
from tests.chaos import ChaosPlan, ChaosRig  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=150)
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument(
        "--jobs",
        type=int,
        default=4,
        help="jobs at once; fewer than workers, so a free worker is there to resume a killed run",
    )
    parser.add_argument("--follow-ups", type=int, default=5)
    parser.add_argument("--kill-every", type=float, default=2.5)
    parser.add_argument("--max-attempts", type=int, default=3, help="COPYDESK_MAX_ATTEMPTS (default: its default)")
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args()
    plan = ChaosPlan(
        seconds=args.seconds,
        workers=args.workers,
        jobs=args.jobs,
        follow_ups=args.follow_ups,
        kill_every=args.kill_every,
        redis_outage_at=args.seconds * 0.3,
        web_outage_at=args.seconds * 0.6,
        settle_seconds=180,
        max_attempts=args.max_attempts,
        seed=args.seed,
        lease_ttl=Settings().lease_ttl_seconds,
        sweep_interval=Settings().sweep_interval_seconds,
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, ChaosRig(Path(tmp), plan) as rig:
        report = rig.run()
    print(
        f"chaos for {args.seconds:.0f} s with {args.workers} workers, {args.jobs} jobs x {1 + args.follow_ups} "
        f"messages, lease {plan.lease_ttl} s, sweep {plan.sweep_interval} s ({time.monotonic() - started:.0f} s in all)"
    )
    print(report.figures())
    for name in (
        "lost",
        "duplicates",
        "uncommitted",
        "stuck",
        "internal_errors",
        "other_failures",
        "extra_pulls",
        "missing_pulls",
        "fsck_findings",
        "server_errors_outside_downtime",
        "exited_by_themselves",
    ):
        if getattr(report, name):
            print(f"{name}: {getattr(report, name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
