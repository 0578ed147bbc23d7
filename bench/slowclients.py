"""Prints the worst `/healthz` and GET job latency of `copydesk web` while N slow anonymous clients hold bodies open.

Run by hand: `.venv/bin/python bench/slowclients.py [--clients 50] [--worker-class gevent,gthread]`. Each slow
client declares a 10 MB body on `/github/webhooks` or the create-job endpoint (no key) and sends a byte a second.
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.webstack import served  # noqa: E402
from tests.web_process import SlowClients, latency  # noqa: E402

PROBE_TIMEOUT = 10  # a probe that gets no answer within this counts as this many seconds


def measure(worker_class: str, clients: int, probes: int) -> tuple[float, float]:
    """(worst /healthz latency, worst GET job latency) in seconds with `clients` slow clients held open."""
    with served(worker_class) as web:
        paths = ["/github/webhooks", f"/v2/agent/{web.project_id}/job"]
        with SlowClients(web.port, paths, clients):
            time.sleep(2)
            health = [latency(f"{web.url}/healthz", timeout=PROBE_TIMEOUT) for _ in range(probes)]
            job = [latency(web.job_url, web.headers, timeout=PROBE_TIMEOUT) for _ in range(probes)]
    return max(health), max(job)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--probes", type=int, default=10)
    parser.add_argument("--worker-class", default="gevent", help="comma-separated: gevent, gthread")
    args = parser.parse_args()
    print(f"{'server':<10} {'slow clients':>12} {'worst /healthz':>15} {'worst GET job':>14}")
    for worker_class in args.worker_class.split(","):
        health, job = measure(worker_class, args.clients, args.probes)
        mark = lambda s: f"{s:.3f} s" if s < PROBE_TIMEOUT else f">{PROBE_TIMEOUT} s"  # noqa: E731
        print(f"{worker_class:<10} {args.clients:>12} {mark(health):>15} {mark(job):>14}")


if __name__ == "__main__":
    main()
