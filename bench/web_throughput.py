"""Compares GET job throughput and latency of `copydesk web` with gevent workers against gthread workers.

Run by hand: `.venv/bin/python bench/web_throughput.py [--seconds 10] [--concurrency 16] [--held 100]`. Both
servers run in the same session with the same settings (2 workers) and the same client: `concurrency` threads
with keep-alive sessions polling one job. `--held` adds that many connections held open meanwhile (what
event-stream listeners or slow clients cost the server).
"""

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.webstack import served  # noqa: E402
from tests.web_process import SlowClients  # noqa: E402


def poll(url: str, headers: dict[str, str], seconds: float, concurrency: int) -> tuple[int, list[float], int]:
    """(successful requests, their latencies, failures) of `concurrency` threads polling `url` for `seconds`."""
    latencies: list[float] = []
    failures = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client() -> None:
        session = requests.Session()
        mine, failed = [], 0
        while time.monotonic() < stop:
            started = time.monotonic()
            try:
                ok = session.get(url, headers=headers, timeout=10).status_code == 200
            except requests.RequestException:
                ok = False
            if ok:
                mine.append(time.monotonic() - started)
            else:
                failed += 1
        with lock:
            latencies.extend(mine)
            failures[0] += failed

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(latencies), latencies, failures[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--held", type=int, default=100)
    args = parser.parse_args()
    print(f"{'server':<8} {'held':>5} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'failed':>7}")
    for worker_class in ("gthread", "gevent"):
        for held in (0, args.held):
            with served(worker_class) as web:
                poll(web.job_url, web.headers, 1, args.concurrency)  # warm-up: connections, imports
                with SlowClients(web.port, [f"/v2/agent/{web.project_id}/job"], held):
                    time.sleep(1 if held else 0)
                    count, latencies, failed = poll(web.job_url, web.headers, args.seconds, args.concurrency)
            q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [float("nan")] * 99
            print(
                f"{worker_class:<8} {held:>5} {count / args.seconds:>8.0f} {q[49] * 1000:>8.1f} "
                f"{q[98] * 1000:>8.1f} {failed:>7}"
            )


if __name__ == "__main__":
    main()
