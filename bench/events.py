"""Measures push latency and the cost of open event streams on a real stack (redis-server, `copydesk web`,
`copydesk worker`, a webhook receiver on 127.0.0.1).

Run by hand: `.venv/bin/python bench/events.py [--jobs 30] [--listeners 100] [--cancels 5]`. Prints:
- latency from a state change (the event's timestamp) to a webhook receiver and to an SSE client, p50/p99;
- GET job latency with no stream open and with N streams open (same session, same server), and how many of
  the N streams the server held;
- how long a cancel takes to stop a run whose model call hangs (the issue's 5 s figure).
"""

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.webstack import WebStack, web_stack  # noqa: E402
from tests.harness import wait_until  # noqa: E402
from tests.model_standin import Hang, ModelStandIn, Reply, ToolUse  # noqa: E402
from tests.worker_processes import WorkerProcess  # noqa: E402

SCRIPT = {
    "runs": [
        {
            "steps": [
                {"tool": "write_file", "args": {"path": "docs/faq.md", "content": "# FAQ\n\nAsk away.\n"}},
                {"tool": "finish", "args": {"title": "Add an FAQ", "summary": "Added docs/faq.md."}},
            ]
        }
    ]
}


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def percentiles(values: list[float]) -> str:
    if not values:
        return "no samples"
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return f"p50 {statistics.median(ordered) * 1000:7.1f} ms   p99 {p99 * 1000:7.1f} ms   (n={len(ordered)})"


class Receiver(BaseHTTPRequestHandler):
    arrivals: list[tuple[float, dict]] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Receiver.arrivals.append((time.time(), json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


class Stack:
    """bench/webstack's `copydesk web` (over its redis-server, local project and key), set up for events, and the
    `copydesk worker` processes started against it."""

    def __init__(self, web: WebStack) -> None:
        self.web = web
        self.url = web.url
        self.project = web.project_id
        self.session = requests.Session()
        self.session.headers.update(web.headers)
        self.workers: list[WorkerProcess] = []

    def start_worker(self) -> WorkerProcess:
        worker = WorkerProcess(self.web.env, self.web.root / f"worker-{len(self.workers)}.log")
        self.workers.append(worker)
        time.sleep(3)  # its start-up
        assert worker.alive(), f"copydesk worker exited at start:\n{worker.log()[-2000:]}"
        return worker

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        return self.session.request(method, f"{self.url}/v2/agent/{self.project}{path}", timeout=30, **kwargs)

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()


def listen(stack: Stack, job_id: str, out: list, opened: threading.Event | None = None) -> None:
    """Read the job's SSE stream to its end; record (arrival, event) for events newer than the connection."""
    connected = time.time()
    with stack.session.get(
        f"{stack.url}/v2/agent/{stack.project}/job/{job_id}/events", stream=True, timeout=120
    ) as response:
        if opened is not None:
            opened.set()
        if response.status_code != 200:
            out.append(("refused", response.status_code))
            return
        for line in response.iter_lines(decode_unicode=True):
            if line.startswith("data:"):
                event = json.loads(line[5:])
                if stamp(event["timestamp"]) >= connected:
                    out.append((time.time(), event))


def measure_latency(stack: Stack, jobs: int) -> None:
    sse: list = []
    listeners = []
    for _ in range(jobs):
        job = stack.api("POST", "/job", json={"prompt": "Add an FAQ"}).json()
        thread = threading.Thread(target=listen, args=(stack, job["id"], sse), daemon=True)
        thread.start()
        listeners.append(thread)
    deadline = time.monotonic() + 300
    for thread in listeners:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    time.sleep(2)  # the last webhooks
    webhook = [arrived - stamp(body["timestamp"]) for arrived, body in Receiver.arrivals]
    stream = [arrived - stamp(event["timestamp"]) for arrived, event in sse if arrived != "refused"]
    print(f"state change -> webhook receiver  {percentiles(webhook)}")
    print(f"state change -> SSE client        {percentiles(stream)}")


def get_latencies(stack: Stack, job_id: str, n: int = 200) -> list[float]:
    timings = []
    for _ in range(n):
        started = time.perf_counter()
        assert stack.api("GET", f"/job/{job_id}").status_code == 200
        timings.append(time.perf_counter() - started)
    return timings


def measure_listeners(stack: Stack, count: int) -> None:
    # No worker runs these jobs: they stay active, their streams stay open.
    jobs = [stack.api("POST", "/job", json={"prompt": "Wait"}).json()["id"] for _ in range(count)]
    baseline = get_latencies(stack, jobs[0])
    results: list = []
    opened = []
    for job_id in jobs:
        event = threading.Event()
        threading.Thread(target=listen, args=(stack, job_id, results, event), daemon=True).start()
        opened.append(event)
    deadline = time.monotonic() + 30
    for event in opened:
        event.wait(timeout=max(0.0, deadline - time.monotonic()))
    refused = sum(1 for r in results if r[0] == "refused")
    held = sum(1 for event in opened if event.is_set()) - refused
    loaded = get_latencies(stack, jobs[0])
    print(f"GET job, no stream open           {percentiles(baseline)}")
    print(
        f"GET job, {count} streams open        {percentiles(loaded)}   "
        f"(p50 ratio {statistics.median(loaded) / statistics.median(baseline):.2f}; {held}/{count} streams held)"
    )
    for job_id in jobs:  # ends the streams
        stack.api("POST", f"/job/{job_id}/cancel")


def measure_cancel(stack: Stack, standin: ModelStandIn, runs: int) -> None:
    if runs < 1:
        return
    took = []
    for _ in range(runs):
        standin.script(
            Reply(tool_calls=[ToolUse("read_file", {"path": "docs/index.md"})]), Hang(120), Reply(text="late")
        )
        seen = len(standin.requests)
        job = stack.api("POST", "/job", json={"prompt": "Slow", "model": "openai:slow"}).json()
        path = f"/job/{job['id']}"
        wait_until(
            lambda calls=seen + 2: len(standin.requests) >= calls, 60, "the second model call (it hangs)", interval=0.02
        )
        started = time.monotonic()
        stack.api("POST", f"{path}/cancel")
        wait_until(
            lambda path=path: stack.api("GET", path).json()["status"] != "active",
            60,
            "the cancelled job to settle",
            interval=0.02,
        )
        took.append(time.monotonic() - started)
    print(
        f"cancel -> job settled (model call hanging)  median {statistics.median(took):.2f} s   "
        f"max {max(took):.2f} s   (n={runs})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=30)
    parser.add_argument("--listeners", type=int, default=100)
    parser.add_argument("--cancels", type=int, default=5)
    args = parser.parse_args()
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp, ModelStandIn() as standin:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps(SCRIPT))
        env = {
            "COPYDESK_MODEL": f"scripted:{script}",
            "COPYDESK_MODELS": "openai:slow",
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": standin.openai_base_url,
            "COPYDESK_WEBHOOK_ALLOW_PRIVATE": "true",
            "COPYDESK_LOG_FORMAT": "json",
            # The listeners all use the bench's one key: lift the per-key caps, and give streams their connections.
            "COPYDESK_MAX_STREAMS": "1000",
            "COPYDESK_MAX_STREAMS_PER_KEY": "1000",
            "COPYDESK_MAX_STREAMS_PER_ACCOUNT": "1000",
            "COPYDESK_REDIS_MAX_CONNECTIONS": "1100",
        }
        with web_stack(env=env, files={"docs/index.md": "# Docs\n"}) as web:
            stack = Stack(web)
            try:
                hook = stack.api("POST", "/webhooks", json={"url": f"http://127.0.0.1:{receiver.server_port}/hook"})
                assert hook.status_code == 201, hook.text
                worker = stack.start_worker()
                measure_latency(stack, args.jobs)
                measure_cancel(stack, standin, args.cancels)
                worker.stop()  # so the listeners' jobs stay active
                measure_listeners(stack, args.listeners)
            finally:
                stack.close()
                receiver.shutdown()


if __name__ == "__main__":
    main()
