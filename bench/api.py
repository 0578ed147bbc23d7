"""GET job and create job of `copydesk web` against a bare Flask app doing one HGETALL, both under the same
gunicorn + gevent settings (`copydesk web`'s default number of workers), measured in one run, interleaved, as ratios.

Run by hand: `.venv/bin/python bench/api.py [--seconds 5] [--connections 16] [--rounds 3]`. Needs `wrk`
(Debian: `apt-get install wrk`): a load generator in Python saturates a core of this 2-core machine before
either server does. Each round measures the bare app, Copydesk's GET job and Copydesk's create in turn; the
figures are the medians over the rounds. Goals (issue 20): GET ≥ 0.90× bare, create ≥ 0.45×, GET p99 ≤ 15 ms.

wrk's percentiles include its correction for coordinated omission: every response slower than twice the mean
interval adds made-up samples for the requests a stalled connection did not send, so one worker held off a core
for half a second turns into a p99 of hundreds of milliseconds. `srv p99` is gunicorn's own time for the same
requests (the access log's duration, whole milliseconds): far below wrk's p99 means the tail was spent waiting
for a CPU, not handling the request. `cpu µs` is the CPU time (user + system) the server's workers spent per
request over the measured runs (Linux: read from /proc), the figure that load on a shared machine does not blur;
`redis µs` is Redis's own CPU per request (INFO's used_cpu_user + used_cpu_sys), on the same two cores.
`× bare` is the median over the rounds of each round's requests per second against the bare app's in the same
round, so a machine that slows down or speeds up between rounds does not tilt it; `cpu ×` is the same comparison
by CPU per request (the workers' and Redis's together, over all rounds): the bare app's CPU per request over
this case's, which leaves out wrk and whatever else shares the machine.

At saturation (wrk's closed loop) latency is a queue: 16 connections over busy workers wait ~16 x the CPU of a
request / the cores, and the tail is how the kernel shares the cores between wrk, Redis and the workers (a worker
held off the CPU stalls every request it has in flight: bot.web.default_workers). The paced
rows send the same 16 connections' requests `--pace-ms` apart (wrk's `delay()`), below either server's capacity:
the latency a request sees when the server is busy but not overrun.

Both servers run in this process's session (their own process group, not a new session): with the kernel's
autogroup scheduling (`/proc/sys/kernel/sched_autogroup_enabled`), a server in a session of its own shares the
CPU with wrk group against group, and on two cores that held a worker off for up to seconds at a time (p99 of
0.5-2.9 s for the bare app; 23-42 ms for the same app in the same session).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import redis
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bare_web import RECORD  # noqa: E402
from bench.webstack import web_stack  # noqa: E402
from bot.web import default_workers  # noqa: E402
from tests.conftest import free_port  # noqa: E402

_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
# wrk runs this for the create case: POST with the key and a JSON body.
_POST = """wrk.method = "POST"
wrk.body = '{"prompt": "Add an FAQ page"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "%s"
"""
# wrk runs this for the paced cases: each connection waits this many milliseconds before its next request.
_PACE = "function delay() return %d end\n"


@dataclass
class Load:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    requests: int


def wrk(url: str, *, seconds: int, connections: int, headers: dict[str, str], script: Path | None = None) -> Load:
    """One wrk run: requests per second, latency percentiles and non-2xx or socket errors."""
    argv = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency"]
    for name, value in headers.items():
        argv += ["-H", f"{name}: {value}"]
    if script is not None:
        argv += ["-s", str(script)]
    out = subprocess.run(argv + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])
    percentiles = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", out, re.M))
    errors = sum(int(n) for n in re.findall(r"Non-2xx or 3xx responses: (\d+)", out))
    errors += sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    requests_done = int(re.search(r"(\d+) requests in", out)[1])
    return Load(rps, _ms(percentiles["50"]), _ms(percentiles["99"]), errors, requests_done)


def _workers_cpu(master: int) -> float:
    """Seconds of CPU (user + system) the live children of process `master` (gunicorn's workers) have used."""
    total = 0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == master:  # ppid; then utime and stime are fields 14 and 15 of stat
            total += int(fields[11]) + int(fields[12])
    return total / tick


def _redis_cpu(client: redis.Redis) -> float:
    """Seconds of CPU (user + system) the Redis server has used."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _master_of(port: int) -> int:
    """The pid of the `python -m bot.web` serving `port` (`copydesk web` replaces itself with it)."""
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"bot.web" in argv and str(port).encode() in argv:
            return int(entry.name)
    raise RuntimeError(f"no bot.web process serves port {port}")


def _durations(log: Path, segment: tuple[int, int]) -> list[tuple[str, str, int]]:
    """(method, path, ms) of the access log lines written between the byte offsets `segment` of `log`."""
    with open(log, "rb") as lines:
        lines.seek(segment[0])
        text = lines.read(segment[1] - segment[0]).decode("utf-8", "replace")
    return [
        (verb, where, int(ms)) for verb, where, ms in re.findall(r'"(\w+) (\S+) HTTP/[\d.]+" \d{3} .* (\d+)ms ', text)
    ]


def _p99(durations: list[int]) -> float | None:
    ordered = sorted(durations)
    return float(ordered[int(len(ordered) * 0.99)]) if ordered else None


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(\w+)", text).groups()
    return float(number) * _UNITS[unit]


class BareServer:
    """bench/bare_web.py on a free port."""

    def __init__(self, redis_url: str, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        with open(log, "ab") as out:
            self._proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("bare_web.py")), str(self.port), redis_url],
                stdout=out,
                stderr=subprocess.STDOUT,
                process_group=0,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.url}/healthz", timeout=1).ok:
                    return
            except requests.RequestException:
                time.sleep(0.1)
        self.close()
        raise RuntimeError("the bare app did not come up")

    @property
    def pid(self) -> int:
        return self._proc.pid

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=20)


@dataclass
class Case:
    url: str
    headers: dict[str, str]
    script: Path | None
    master: int  # the gunicorn master whose workers serve it
    log: Path  # its access log
    method: str
    path: re.Pattern
    paced: bool = False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pace-ms", type=int, default=8, help="each connection's pause between paced requests")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("bench/api.py needs wrk: apt-get install wrk")
    with web_stack("gevent", default_workers()) as web, tempfile.TemporaryDirectory() as tmp:
        redis_url = web.env["COPYDESK_REDIS_URL"]
        created = requests.post(
            f"{web.url}/v2/agent/{web.project_id}/job", json={"prompt": "bench"}, headers=web.headers, timeout=30
        )
        created.raise_for_status()
        job_path = f"/v2/agent/{web.project_id}/job"
        job_url = f"{web.url}{job_path}/{created.json()['id']}"
        # The bare app reads a record as large as the job Copydesk returns.
        record = {k: json.dumps(v) for k, v in created.json().items()}
        store = redis.Redis.from_url(redis_url)
        store.hset(RECORD, mapping=record)
        post, paced = Path(tmp) / "post.lua", Path(tmp) / "paced.lua"
        post.write_text(_POST % web.headers["Authorization"])
        paced.write_text(_PACE % args.pace_ms)
        bare = BareServer(redis_url, web.root / "bare.log")
        try:
            copydesk, web_log = _master_of(web.port), web.root / "web.log"
            get_job = re.compile(re.escape(job_path) + "/.+")
            bare_case = Case(
                f"{bare.url}/record", {}, None, bare.pid, web.root / "bare.log", "GET", re.compile("/record")
            )
            get_case = Case(job_url, web.headers, None, copydesk, web_log, "GET", get_job)
            cases = {
                "bare HGETALL": bare_case,
                "GET job": get_case,
                "create job": Case(f"{web.url}{job_path}", {}, post, copydesk, web_log, "POST", re.compile(job_path)),
                "bare, paced": replace(bare_case, script=paced, paced=True),
                "GET job, paced": replace(get_case, script=paced, paced=True),
            }
            for case in cases.values():  # warm-up: connections, scripts, imports
                wrk(case.url, seconds=1, connections=args.connections, headers=case.headers, script=case.script)
            results: dict[str, list[Load]] = {name: [] for name in cases}
            served: dict[str, list[int]] = {name: [] for name in cases}
            cpu = {name: 0.0 for name in cases}
            redis_cpu = {name: 0.0 for name in cases}
            for _ in range(args.rounds):
                for name, case in cases.items():
                    before, start = _workers_cpu(case.master), case.log.stat().st_size
                    redis_before = _redis_cpu(store)
                    results[name].append(
                        wrk(
                            case.url,
                            seconds=args.seconds,
                            connections=args.connections,
                            headers=case.headers,
                            script=case.script,
                        )
                    )
                    cpu[name] += _workers_cpu(case.master) - before
                    redis_cpu[name] += _redis_cpu(store) - redis_before
                    lines = _durations(case.log, (start, case.log.stat().st_size))
                    served[name] += [
                        ms for verb, where, ms in lines if verb == case.method and case.path.fullmatch(where)
                    ]
        finally:
            bare.close()
    print(
        f"{args.connections} connections, {args.seconds:g} s x {args.rounds} rounds, medians; paced: "
        f"{args.pace_ms} ms between a connection's requests (load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())})"
    )
    print(
        f"{'case':<15} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'× bare':>7} {'cpu ×':>7} "
        f"{'srv p99':>8} {'cpu µs':>7} {'redis µs':>8}"
    )
    bare_loads = results["bare HGETALL"]
    bare_cpu = (cpu["bare HGETALL"] + redis_cpu["bare HGETALL"]) / sum(r.requests for r in bare_loads)
    for name, loads in results.items():
        rps, done = statistics.median(r.rps for r in loads), sum(r.requests for r in loads)
        # Each round's ratio to the bare run just before it, so a drift of the machine's speed over the rounds
        # cancels out; then their median.
        ratio = statistics.median(load.rps / bare.rps for load, bare in zip(loads, bare_loads, strict=True))
        cpu_ratio = bare_cpu / ((cpu[name] + redis_cpu[name]) / done)
        shown = ("-", "-") if cases[name].paced else (f"{ratio:.2f}", f"{cpu_ratio:.2f}")
        print(
            f"{name:<15} {rps:>8.0f} {statistics.median(r.p50_ms for r in loads):>8.2f} "
            f"{statistics.median(r.p99_ms for r in loads):>8.2f} {sum(r.errors for r in loads):>7} "
            f"{shown[0]:>7} {shown[1]:>7} "
            f"{_or_dash(_p99(served[name])):>8} {cpu[name] / done * 1e6:>7.0f} {redis_cpu[name] / done * 1e6:>8.0f}"
        )


def _or_dash(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


if __name__ == "__main__":
    main()
