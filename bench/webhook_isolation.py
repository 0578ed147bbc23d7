"""Webhook isolation: one account's slow and dead webhook endpoints (tarpits that never answer, receivers that drip
a header byte a second) and its re-sends, against another account's job and deliveries. Prints the quiet account's
job time and its `job.created` / `job.completed` arrival times, first alone, then under that load (ratios).

Run by hand: `.venv/bin/python bench/webhook_isolation.py [--endpoints 20] [--resends 60] [--workers 2]
[--no-resend-limits]`.
Needs redis-server and git. Speaks only HTTP to `copydesk web` and runs `copydesk worker` processes, so it
measures an older checkout the same way (PYTHONPATH=that checkout).
"""

import argparse
import json
import logging
import sys
import threading
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.webstack import web_stack  # noqa: E402
from bot import context  # noqa: E402
from service.settings import Settings  # noqa: E402
from tests.harness import LiveServer  # noqa: E402
from tests.slow_receivers import SlowReceiver  # noqa: E402
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
GIVE_UP_SECONDS = 300.0


class Arrivals:
    """A webhook receiver that notes when each event type first arrived."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
        with self._lock:
            self.first.setdefault((body["data"]["id"], body["type"]), time.monotonic())
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]


def quiet_job(url: str, headers: dict, project_id: str, arrivals: Arrivals) -> dict[str, float | None]:
    """Create a job of the quiet account; seconds to `completed` and to its two deliveries (None: not in time)."""
    started = time.monotonic()
    job = requests.post(
        f"{url}/v2/agent/{project_id}/job", json={"prompt": "Add an FAQ"}, headers=headers, timeout=30
    ).json()
    figures: dict[str, float | None] = {"job": None, "job.created": None, "job.completed": None}
    while time.monotonic() - started < GIVE_UP_SECONDS and None in figures.values():
        if figures["job"] is None:
            status = requests.get(f"{url}/v2/agent/{project_id}/job/{job['id']}", headers=headers, timeout=30).json()[
                "status"
            ]
            if status == "completed":
                figures["job"] = time.monotonic() - started
        for kind in ("job.created", "job.completed"):
            if figures[kind] is None and (job["id"], kind) in arrivals.first:
                figures[kind] = arrivals.first[(job["id"], kind)] - started
        time.sleep(0.1)
    return figures


def make_noise(url: str, ctx, endpoints: int, resends: int, tarpit: SlowReceiver, dripper: SlowReceiver) -> int:
    """Projects of the noisy account with `endpoints` slow endpoints in all, a job each, then `resends` re-sends;
    returns how many re-sends were accepted."""
    services = ctx.services
    per_project = 10
    hooks: list[tuple[str, dict, str]] = []
    for number in range((endpoints + per_project - 1) // per_project):
        project = services.projects.add(
            account="noisy",
            host="local",
            repository=f"/nowhere/noisy-{number}.git",
            web_url=f"http://example.invalid/noisy-{number}",
            ref="main",
        )
        _, key = services.keys.create(account="noisy", name=f"noisy-{number}")
        headers = {"Authorization": f"Bearer {key}"}
        for index in range(min(per_project, endpoints - number * per_project)):
            target = tarpit if index % 2 == 0 else dripper
            made = requests.post(
                f"{url}/v2/agent/{project.id}/webhooks",
                json={"url": f"{target.url}/{index}"},
                headers=headers,
                timeout=30,
            )
            made.raise_for_status()
            hooks.append((project.id, headers, made.json()["id"]))
        requests.post(f"{url}/v2/agent/{project.id}/job", json={"prompt": "noise"}, headers=headers, timeout=30)
    logs: dict[str, list[str]] = {}
    deadline = time.monotonic() + 60
    while len(logs) < len(hooks) and time.monotonic() < deadline:
        for project_id, headers, hook_id in hooks:
            found = requests.get(
                f"{url}/v2/agent/{project_id}/webhooks/{hook_id}/deliveries", headers=headers, timeout=30
            ).json()["deliveries"]
            if found:
                logs[hook_id] = [d["id"] for d in found]
        time.sleep(0.2)
    accepted = 0
    for number in range(resends):
        project_id, headers, hook_id = hooks[number % len(hooks)]
        if hook_id not in logs:
            continue
        delivery = logs[hook_id][number % len(logs[hook_id])]
        answer = requests.post(
            f"{url}/v2/agent/{project_id}/webhooks/{hook_id}/deliveries/{delivery}/resend", headers=headers, timeout=30
        )
        accepted += answer.status_code == 202
    return accepted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", type=int, default=20, help="slow endpoints of the noisy account")
    parser.add_argument("--resends", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--no-resend-limits", action="store_true", help="accept every re-send (to see the lanes' part alone)"
    )
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # the receivers' access logs
    arrivals = Arrivals()
    with SlowReceiver() as tarpit, SlowReceiver(drip_every=1.0) as dripper, LiveServer(arrivals) as quiet_hook:
        limits = (
            {"COPYDESK_WEBHOOK_RESENDS_PER_ENDPOINT": "1000000", "COPYDESK_WEBHOOK_RESENDS_PER_ACCOUNT": "1000000"}
            if args.no_resend_limits
            else {}
        )
        with web_stack(env={"COPYDESK_WEBHOOK_ALLOW_PRIVATE": "true", **limits}) as web:
            script = web.root / "script.json"
            script.write_text(json.dumps(SCRIPT))
            env = {**web.env, "COPYDESK_MODEL": f"scripted:{script}", "COPYDESK_WEBHOOK_ALLOW_PRIVATE": "true"}
            ctx = context.build(
                Settings(
                    redis_url=env["COPYDESK_REDIS_URL"],
                    data_dir=Path(env["COPYDESK_DATA_DIR"]),
                    base_url=env["COPYDESK_BASE_URL"],
                ),
                environ={},
            )
            requests.post(
                f"{web.url}/v2/agent/{web.project_id}/webhooks",
                json={"url": f"{quiet_hook.url}/hook"},
                headers=web.headers,
                timeout=30,
            ).raise_for_status()
            workers = [WorkerProcess(env, web.root / f"worker-{n}.log") for n in range(args.workers)]
            try:
                quiet_job(web.url, web.headers, web.project_id, arrivals)  # warms the mirror up
                alone = quiet_job(web.url, web.headers, web.project_id, arrivals)
                accepted = make_noise(web.url, ctx, args.endpoints, args.resends, tarpit, dripper)
                loaded = quiet_job(web.url, web.headers, web.project_id, arrivals)
            finally:
                for worker in workers:
                    worker.stop(timeout=40)
    print(
        f"{args.workers} workers; noisy account: {args.endpoints} endpoints (half tarpits, half dripping a header "
        f"byte a second), {accepted} of {args.resends} re-sends accepted; the quiet account's job:"
    )
    for name in ("job", "job.created", "job.completed"):
        before, after = alone[name], loaded[name]
        shown = [f"{v:.2f} s" if v is not None else f"> {GIVE_UP_SECONDS:.0f} s" for v in (before, after)]
        ratio = f"x{after / before:.1f}" if before and after else "-"
        print(f"  {name:14} alone {shown[0]:>10}   under load {shown[1]:>10}   {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
