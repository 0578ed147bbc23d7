"""Prints another account's success rate while one read-only key tries to hold N `?follow=true` event streams.

Run by hand: `.venv/bin/python bench/stream_isolation.py [--attempts 300] [--workers 2]`. One key of account
`local` opens `--attempts` streams on one active job and keeps every one that was accepted open; meanwhile a key
of account `other` GETs its own job `--probes` times and an operator loads that job's dashboard page `--pages`
times. The figures: streams held, refused (429, 503) and cut at once, and the other account's successes. Run it
with the web processes on an older tree (`PYTHONPATH=<old tree>`, the bench's own code stays this tree's) to
compare.
"""

import argparse
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.webstack import web_stack  # noqa: E402
from bot import context  # noqa: E402
from bot.dashboard.operator import issue_login_link  # noqa: E402
from service.models import KeyAccess  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from tests.conftest import commit_files  # noqa: E402

TIMEOUT = 10  # seconds a probe may take; past it, it counts as a failure


def _other_account(env: dict[str, str], root: Path):
    """A second account's project, active job and key, made in the stack's store; and a read-only key of `local`."""
    settings = Settings(
        redis_url=env["COPYDESK_REDIS_URL"], data_dir=Path(env["COPYDESK_DATA_DIR"]), base_url=env["COPYDESK_BASE_URL"]
    )
    ctx = context.build(settings, environ={})
    git = Git()
    bare = root / "other.git"
    git.run("init", "--bare", "-q", str(bare))
    commit_files(git, bare, {"README.md": "# Other\n"})
    project = ctx.local.register(ctx.services.projects, path=bare, ref="main", account="other")
    _, other_key = ctx.services.keys.create(account="other", name="bystander")
    _, reader = ctx.services.keys.create(account="local", name="reader", access=KeyAccess.READ_ONLY)
    return ctx, project, other_key, reader


def measure(attempts: int, workers: int, probes: int, pages: int, env: dict[str, str]) -> dict:
    with web_stack("gevent", workers, env=env) as web, ExitStack() as held:
        ctx, other_project, other_key, reader = _other_account(web.env, web.root)
        job = requests.post(
            f"{web.url}/v2/agent/{web.project_id}/job", json={"prompt": "bench"}, headers=web.headers, timeout=TIMEOUT
        ).json()
        other_auth = {"Authorization": f"Bearer {other_key}"}
        other_job = requests.post(
            f"{web.url}/v2/agent/{other_project.id}/job", json={"prompt": "bench"}, headers=other_auth, timeout=TIMEOUT
        ).json()
        url = f"{web.url}/v2/agent/{web.project_id}/job/{job['id']}/events?follow=true"
        outcomes: Counter[str] = Counter()
        opened = []
        for _ in range(attempts):
            try:
                response = requests.get(
                    url, headers={"Authorization": f"Bearer {reader}"}, stream=True, timeout=TIMEOUT
                )
            except requests.RequestException:
                outcomes["error"] += 1
                continue
            held.callback(response.close)
            if response.status_code == 200:
                opened.append(response)
            else:
                outcomes[str(response.status_code)] += 1
        time.sleep(2)  # streams that could not get a Redis connection end at their first read
        for response in opened:
            ended = response.raw.closed or response.raw._fp is None or response.raw._fp.fp is None
            outcomes["cut" if ended else "held"] += 1

        def ok(call) -> bool:
            """Whether the call answered 200 with the other job in it (a sign-in page or an error page does not
            count)."""
            try:
                response = call()
            except requests.RequestException:
                return False
            return response.status_code == 200 and other_job["id"] in response.text

        job_url = f"{web.url}/v2/agent/{other_project.id}/job/{other_job['id']}"
        gets = sum(ok(lambda: requests.get(job_url, headers=other_auth, timeout=TIMEOUT)) for _ in range(probes))
        browser = requests.Session()
        browser.get(issue_login_link(ctx.services.redis, web.url), timeout=TIMEOUT)
        page = f"{web.url}/dashboard/projects/{other_project.id}/jobs/{other_job['id']}"
        shown = sum(ok(lambda: browser.get(page, timeout=TIMEOUT, allow_redirects=False)) for _ in range(pages))
        return {"outcomes": outcomes, "gets": gets, "pages": shown}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2, help="web processes")
    parser.add_argument("--probes", type=int, default=40)
    parser.add_argument("--pages", type=int, default=10)
    parser.add_argument(
        "--no-caller-caps",
        action="store_true",
        help="lift the per-key and per-account caps: what the streams' own Redis pool does alone",
    )
    args = parser.parse_args()
    env = (
        {"COPYDESK_MAX_STREAMS_PER_KEY": "200", "COPYDESK_MAX_STREAMS_PER_ACCOUNT": "200"}
        if args.no_caller_caps
        else {}
    )
    result = measure(args.attempts, args.workers, args.probes, args.pages, env)
    outcomes = result["outcomes"]
    print(
        f"stream attempts: {args.attempts} on {args.workers} web processes: "
        + ", ".join(f"{name} {count}" for name, count in sorted(outcomes.items()))
    )
    print(f"other account GET job: {result['gets']}/{args.probes} answered 200")
    print(f"other account dashboard job page: {result['pages']}/{args.pages} answered 200")


if __name__ == "__main__":
    main()
