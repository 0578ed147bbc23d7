"""Instructions per request of GET job and create job in Copydesk's app against the bare Flask app of bench/api.py,
counted by valgrind's callgrind: the same count run after run whatever else the machine is doing, so a change of a
few per cent shows where the timings of bench/api.py on a shared machine move by more.

Run by hand: `.venv/bin/python bench/api_instructions.py [--requests 300]`. Needs valgrind (Debian: `apt-get
install valgrind`); about a minute per case. Each case calls the WSGI app in one process (no gunicorn), once with 0
and once with `--requests` requests after the same warm-up, and reports the difference per request. Counted: the
Python process's own user-space instructions (Flask, Copydesk, redis-py). Not counted: the kernel (sockets),
Redis, gunicorn and gevent, which bench/api.py's CPU figures include.

`--cache-sim` adds the level-1 cache misses per request (instruction and data, in callgrind's model of this
machine's caches). Instructions alone understate what a request costs in time: a miss costs about as much as ten
instructions, and a path that touches more code and objects than the bare app misses proportionally more.
"""

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CASES = ("bare HGETALL", "GET job", "create job")
WARM_UP = 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument(
        "--cache-sim",
        action="store_true",
        help="also count level-1 cache misses (callgrind's model of this machine's caches; about 3x slower)",
    )
    parser.add_argument("--child", nargs=2, metavar=("CASE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        serve(CASES[int(args.child[0])], int(args.child[1]))
        return
    if shutil.which("valgrind") is None:
        sys.exit("bench/api_instructions.py needs valgrind: apt-get install valgrind")
    counts = {}
    for index, case in enumerate(CASES):
        served, idle = _count(index, args.requests, args.cache_sim), _count(index, 0, args.cache_sim)
        counts[case] = {event: (served[event] - idle[event]) / args.requests for event in served}
    print(f"user-space instructions per request, {args.requests} requests after {WARM_UP} of warm-up (callgrind)")
    misses = " ".join(f"{heading:>10}" for heading in ("I1 misses", "D1 misses", "× bare")) if args.cache_sim else ""
    print(f"{'case':<15} {'instructions':>12} {'× bare':>7} {misses}")
    bare = counts[CASES[0]]
    for case, count in counts.items():
        line = f"{case:<15} {count['Ir']:>12,.0f} {bare['Ir'] / count['Ir']:>7.2f}"
        if args.cache_sim:
            line += f" {count['I1mr']:>10,.0f} {count['D1mr'] + count['D1mw']:>10,.0f} {_l1(bare) / _l1(count):>10.2f}"
        print(line)


def _l1(count: dict[str, float]) -> float:
    return count["I1mr"] + count["D1mr"] + count["D1mw"]


def _count(case: int, requests: int, cache_sim: bool) -> dict[str, int]:
    """The events callgrind collects (Ir: instructions; with `cache_sim` the cache misses, I1mr, D1mr, D1mw, ...)
    in a child serving `requests` requests of case `case`."""
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out"]
        argv += ["--cache-sim=yes"] if cache_sim else []
        argv += [sys.executable, __file__, "--child", str(case), str(requests)]
        # A fixed hash seed: string hashing decides dict layouts, and with them a few instructions per request.
        done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        events = re.search(r"^events: (.+)$", Path(tmp, "out").read_text(), re.M) if done.returncode == 0 else None
    found = re.search(r"Collected : ([\d ]+)", done.stderr)
    if events is None or found is None:
        sys.exit(f"the {CASES[case]} child failed:\n{done.stderr[-3000:]}")
    return dict(zip(events[1].split(), map(int, found[1].split()), strict=True))


def serve(case: str, requests: int) -> None:
    """Set up Copydesk's app and the bare app over a private Redis; call `case` WARM_UP + `requests` times."""
    import gc

    import redis
    from werkzeug.test import EnvironBuilder

    from bench.bare_web import RECORD, bare_app
    from bot import context
    from bot.app import create_app
    from service.settings import Settings
    from service.workspace.git import Git
    from tests.conftest import commit_files
    from tests.redis_servers import NO_PERSISTENCE, running_redis

    with tempfile.TemporaryDirectory() as tmp, running_redis(Path(tmp) / "redis", *NO_PERSISTENCE) as base:
        root, redis_url = Path(tmp), f"{base}/0"
        git, repository = Git(), root / "docs.git"
        git.run("init", "--bare", "-q", str(repository))
        commit_files(git, repository, {"README.md": "# Docs\n"})
        settings = Settings(
            redis_url=redis_url, data_dir=root / "data", base_url="http://127.0.0.1:8000", rate_limit_per_hour=10**9
        )
        ctx = context.build(settings, environ={})
        project = ctx.local.register(ctx.services.projects, path=repository, ref="main")
        _, key = ctx.services.keys.create(account="local", name="bench")
        app, headers = create_app(settings, ctx), {"Authorization": f"Bearer {key}"}
        job = app.test_client().post(f"/v2/agent/{project.id}/job", json={"prompt": "bench"}, headers=headers)
        # The bare app reads a record as large as the job Copydesk returns, as in bench/api.py.
        redis.Redis.from_url(redis_url).hset(RECORD, mapping={k: json.dumps(v) for k, v in job.get_json().items()})
        body = json.dumps({"prompt": "Add an FAQ page"}).encode()
        target, environ = {
            "bare HGETALL": (bare_app(redis_url), EnvironBuilder(path="/record")),
            "GET job": (
                app,
                EnvironBuilder(path=f"/v2/agent/{project.id}/job/{job.get_json()['id']}", headers=headers),
            ),
            "create job": (
                app,
                EnvironBuilder(
                    path=f"/v2/agent/{project.id}/job",
                    method="POST",
                    headers=headers,
                    data=body,
                    content_type="application/json",
                ),
            ),
        }[case]
        template = environ.get_environ()
        gc.freeze()  # as bot.web does in each web worker once the app is built
        for _ in range(WARM_UP + requests):
            _call(target, {**template, "wsgi.input": io.BytesIO(body)}, case)


def _call(app, environ: dict, case: str) -> None:
    status = []
    b"".join(app(environ, lambda code, headers, exc_info=None: status.append(code)))
    if not status[0].startswith("20"):
        sys.exit(f"{case} answered {status[0]}")


if __name__ == "__main__":
    main()
