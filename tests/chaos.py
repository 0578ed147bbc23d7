"""The chaos rig shared by the chaos test and `bench/chaos.py`: a real Redis with AOF, a real web process, real
worker processes and a slow model; workers, work horses, Redis and the web are killed at random and restarted,
and what the API and git show afterwards is checked."""

import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
import requests
import rq

from bot import context
from service import describe
from service.lease import LeaseInfo
from service.settings import Settings
from service.workspace.git import Git
from tests.conftest import DOCS, commit_files, free_port
from tests.fsck_check import assert_copydesk_commits_pass_fsck
from tests.model_standin import ModelStandIn, Reply, ToolUse
from tests.worker_processes import WorkerProcess

_TAG = re.compile(r"chaos:(j\d+m\d+)")
RECOVERY_WINDOW = 60  # seconds after a kill mid-run within which its run going again counts as a recovery


@dataclass
class ChaosPlan:
    seconds: float = 45  # how long faults are injected
    workers: int = 3
    jobs: int = 8
    follow_ups: int = 1  # per job, each sent once the previous round ended
    kill_every: float = 2.0  # mean seconds between kills
    redis_outage_at: float | None = 12  # seconds into the chaos: Redis is SIGKILLed and restarted 2 s later
    web_outage_at: float | None = 25
    model_delay: float = 0.6  # seconds per model call: runs last long enough to be killed mid-way
    slow_calls: int | None = None  # only the first this many model calls take model_delay (None: every call)
    settle_seconds: float = 60  # after the chaos, how long every message has to end
    max_attempts: int = 3
    lease_ttl: int = 2  # COPYDESK_LEASE_TTL and COPYDESK_SWEEP_INTERVAL of every process
    sweep_interval: int = 1
    seed: int = 8


@dataclass
class ChaosReport:
    kills: dict = field(default_factory=lambda: {"worker": 0, "horse": 0, "host": 0})
    messages: int = 0
    lost: list = field(default_factory=list)
    duplicates: list = field(default_factory=list)  # messages with more than one commit (trailer) on the branch
    uncommitted: list = field(default_factory=list)  # processed messages that changed files but have no commit
    stuck: list = field(default_factory=list)
    run_interrupted: int = 0
    internal_errors: list = field(default_factory=list)
    other_failures: list = field(default_factory=list)
    extra_pulls: list = field(default_factory=list)  # pull requests the code host lists beyond one per job
    missing_pulls: list = field(default_factory=list)  # jobs with commits but no pull request that shows them
    fsck_findings: list = field(default_factory=list)  # what `git fsck --strict` flags in Copydesk's commits
    recoveries: list = field(default_factory=list)  # seconds from a kill mid-run to the run going again
    recoveries_by_kind: dict = field(default_factory=dict)  # kill kind -> those seconds
    unresumed: int = 0  # kills mid-run whose run was not seen going again (it may have ended meanwhile)
    server_errors_outside_downtime: list = field(default_factory=list)
    exited_by_themselves: list = field(default_factory=list)

    def figures(self) -> str:
        rec = sorted(self.recoveries)

        def pct(p):
            return f"{rec[min(len(rec) - 1, int(p * len(rec)))]:.1f}" if rec else "-"

        return (
            f"kills: {sum(self.kills.values())} ({', '.join(f'{k} {v}' for k, v in self.kills.items())})\n"
            f"messages: {self.messages}\nlost: {len(self.lost)}\nduplicates: {len(self.duplicates)}\n"
            f"processed without their commit: {len(self.uncommitted)}\n"
            f"stuck: {len(self.stuck)}\nrun_interrupted: {self.run_interrupted}\n"
            f"internal_error: {len(self.internal_errors)}\nextra pull requests: {len(self.extra_pulls)}\n"
            f"jobs missing their pull request: {len(self.missing_pulls)}\nfsck findings: {len(self.fsck_findings)}\n"
            f"recovery: n={len(rec)} p50={statistics.median(rec) if rec else 0:.1f}s p90={pct(0.9)}s "
            f"max={max(rec) if rec else 0:.1f}s (not seen resuming: {self.unresumed})\n"
            + "".join(
                f"  after a {kind} kill: n={len(times)} p50={statistics.median(times):.1f}s max={max(times):.1f}s\n"
                for kind, times in sorted(self.recoveries_by_kind.items())
            )
            + f"5xx outside downtime: {len(self.server_errors_outside_downtime)}\n"
            f"workers that exited by themselves: {len(self.exited_by_themselves)}"
        )


class RedisProcess:
    """A redis-server with AOF (`appendfsync always`) on a fixed port and folder, so it can die and come back."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.workdir),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--maxmemory-policy",
                "noeviction",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                return
            except redis.RedisError:  # refused, or still loading its AOF
                assert time.monotonic() < deadline and self.proc.poll() is None, "redis-server did not start"
                time.sleep(0.05)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


class ChaosRig:
    def __init__(self, workdir: Path, plan: ChaosPlan) -> None:
        self.dir = workdir
        self.plan = plan
        self.random = random.Random(plan.seed)
        self.redis = RedisProcess(workdir / "redis")
        self.model = ModelStandIn().respond(self._model_turn)
        self.web_port = free_port()
        self.web: subprocess.Popen | None = None
        self.workers: list[WorkerProcess] = []
        self.killed: set[int] = set()
        self.downtime: list[list[float]] = []  # [start, end] of each planned outage, in monotonic time
        self.report = ChaosReport()
        self.accepted: dict[str, list[str]] = {}  # job id -> the tags of its messages the API accepted
        self._lock = threading.Lock()
        self._recovery_threads: list[tuple[threading.Thread, float]] = []  # each watcher and its kill's time
        self._settled = threading.Event()  # every message has ended: no run can go again
        self._model_calls = 0

    # -- the parts ----------------------------------------------------------------------------

    def __enter__(self) -> "ChaosRig":
        self.model.__enter__()
        self.redis.start()
        repo = self.dir / "docs.git"
        git = Git()
        git.run("init", "--bare", "-q", str(repo))
        git.run("symbolic-ref", "HEAD", "refs/heads/main", git_dir=repo)
        commit_files(git, repo, DOCS, message="Initial docs")
        self.repo = repo
        self.settings = Settings(
            redis_url=self.redis.url,
            data_dir=self.dir / "data",
            base_url=f"http://127.0.0.1:{self.web_port}",
            model="openai:chaos",
            openai_api_key="sk-chaos",
            openai_base_url=self.model.openai_base_url,
            lease_ttl_seconds=self.plan.lease_ttl,
            sweep_interval_seconds=self.plan.sweep_interval,
            stop_grace_seconds=2,
            max_attempts=self.plan.max_attempts,
        )
        ctx = context.build(self.settings)
        self.ctx = ctx
        project = ctx.local.register(ctx.services.projects, path=repo, ref="main")
        self.project_id = project.id
        _key, self.key = ctx.services.keys.create(account="local", name="chaos")
        self.env = {
            **os.environ,
            "COPYDESK_REDIS_URL": self.redis.url,
            "COPYDESK_DATA_DIR": str(self.dir / "data"),
            "COPYDESK_BASE_URL": self.settings.base_url,
            "COPYDESK_MODEL": "openai:chaos",
            "OPENAI_API_KEY": "sk-chaos",
            "OPENAI_BASE_URL": self.model.openai_base_url,
            "COPYDESK_LEASE_TTL": str(self.plan.lease_ttl),
            "COPYDESK_SWEEP_INTERVAL": str(self.plan.sweep_interval),
            "COPYDESK_STOP_GRACE": "2",
            "COPYDESK_MAX_ATTEMPTS": str(self.plan.max_attempts),
        }
        self.start_web()
        for _ in range(self.plan.workers):
            self.start_worker()
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"Bearer {self.key}"
        return self

    def __exit__(self, *exc) -> None:
        for worker in self.workers:
            if worker.alive():
                worker.kill()
        if self.web is not None:
            try:
                os.killpg(self.web.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.web.wait(timeout=10)
        if self.redis.proc.poll() is None:
            self.redis.kill()
        self.model.__exit__(*exc)

    def start_web(self) -> None:
        self.web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bot.cli",
                "web",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.web_port),
                "--workers",
                "1",
            ],
            env=self.env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=open(self.dir / "web.log", "ab"),
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(f"{self.settings.base_url}/healthz", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline and self.web.poll() is None, "the web process did not start"
            time.sleep(0.1)

    def start_worker(self) -> WorkerProcess:
        worker = WorkerProcess(self.env, self.dir / f"worker{len(self.workers)}.log")
        self.workers.append(worker)
        return worker

    def _model_turn(self, body: dict):
        """A slow, stateless model: write the message's page, then finish."""
        messages = body.get("messages") or []
        prompt = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        tag = _TAG.search(str(prompt))
        tag = tag.group(1) if tag else "untagged"
        if messages and messages[-1].get("role") == "tool":
            reply = Reply(tool_calls=[ToolUse("finish", {"title": f"Page {tag}", "summary": f"Wrote {tag}."})])
        else:
            reply = Reply(tool_calls=[ToolUse("write_file", {"path": f"docs/chaos/{tag}.md", "content": f"# {tag}\n"})])
        with self._lock:
            self._model_calls += 1
            slow = self.plan.slow_calls is None or self._model_calls <= self.plan.slow_calls
        return (self.plan.model_delay * (0.5 + self.random.random()) if slow else 0.0), reply

    # -- the API, as a client that retries what never reached the store -----------------------

    def _call(self, method: str, path: str, **kwargs) -> requests.Response:
        url = f"{self.settings.base_url}/v2/agent/{self.project_id}{path}"
        deadline = time.monotonic() + 60
        while True:
            sent = time.monotonic()
            try:
                response = self.api.request(method, url, timeout=10, **kwargs)
            except requests.ConnectionError:
                response = None
            if response is not None and response.status_code >= 500 and not self._in_downtime(sent):
                self.report.server_errors_outside_downtime.append((method, path, response.status_code))
            if response is not None and response.status_code < 500:
                return response
            assert time.monotonic() < deadline, f"{method} {path} kept failing"
            time.sleep(0.2)

    def _in_downtime(self, at: float) -> bool:
        # A request sent just before an outage may fail, and the web needs a moment after Redis is back.
        return any(start - 1 <= at <= (end if end else float("inf")) + 3 for start, end in self.downtime)

    def create(self, index: int) -> str:
        tag = f"j{index}m0"
        response = self._call(
            "POST",
            "/job",
            json={"prompt": f"chaos:{tag} Write the page."},
            headers={"Idempotency-Key": f"chaos-{index}"},
        )
        assert response.status_code == 201, response.text
        job_id = response.json()["id"]
        self.accepted[job_id] = [tag]
        return job_id

    def follow_up(self, job_id: str, index: int) -> None:
        tag = f"j{index}m{len(self.accepted[job_id])}"
        # Sent once only the request surely never reached the store (refused connection or a 5xx before it).
        response = self._call("POST", f"/job/{job_id}/message", json={"prompt": f"chaos:{tag} Write another."})
        assert response.status_code == 200, response.text
        self.accepted[job_id].append(tag)

    def job(self, job_id: str) -> dict:
        return self._call("GET", f"/job/{job_id}").json()

    # -- faults -------------------------------------------------------------------------------

    def kill_one(self) -> None:
        """SIGKILL a random worker process, work horse, or both (a host gone), and start a new worker."""
        alive = [w for w in self.workers if w.alive()]
        if not alive:
            return
        # A worker in the middle of a run when there is one: killing idle workers tests little, and the recovery
        # figures need runs cut off.
        busy = [w for w in alive if w.horse_pid() is not None]
        worker = self.random.choice(busy or alive)
        kind = self.random.choice(["worker", "horse", "host"])
        horse = worker.horse_pid()
        if kind == "horse" and horse is None:
            kind = "worker"
        running = self._runs_of(worker) if horse is not None else []
        killed_at = time.monotonic()
        targets = {"worker": [worker.pid], "horse": [horse], "host": [worker.pid, horse]}[kind]
        for pid in filter(None, targets):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.report.kills[kind] += 1
        if kind != "horse":
            self.killed.add(worker.pid)
            worker.proc.wait(timeout=10)
            self.start_worker()  # as a supervisor would
        for job_id, token in running:
            thread = threading.Thread(target=self._watch_recovery, args=(job_id, token, killed_at, kind), daemon=True)
            thread.start()
            self._recovery_threads.append((thread, killed_at))

    def _runs_of(self, worker: WorkerProcess) -> list[tuple[str, str]]:
        """(job id, lease token) of the run the worker's horse holds."""
        try:
            client = self.ctx.services.redis
            names = {w.name for w in rq.Worker.all(connection=client) if w.pid == worker.pid}
            runs = []
            for key in client.scan_iter("cd:job:*:lease"):
                job_id = key.decode().split(":")[2]
                info = LeaseInfo.read(client, job_id)
                if info is not None and info.worker in names:
                    runs.append((job_id, info.token))
            return runs
        except redis.RedisError:
            return []

    def _watch_recovery(self, job_id: str, token: str, killed_at: float, kind: str) -> None:
        """Time until another run of the job holds its lease (a new token), within RECOVERY_WINDOW seconds and
        until every message has ended."""
        client = redis.Redis.from_url(self.redis.url, socket_timeout=2)
        while time.monotonic() - killed_at < RECOVERY_WINDOW and not self._settled.is_set():
            try:
                info = LeaseInfo.read(client, job_id)
            except redis.RedisError:
                info = None
            if info is not None and info.token != token:
                with self._lock:
                    self.report.recoveries.append(time.monotonic() - killed_at)
                    self.report.recoveries_by_kind.setdefault(kind, []).append(time.monotonic() - killed_at)
                return
            self._settled.wait(0.05)
        with self._lock:
            self.report.unresumed += 1

    def redis_outage(self) -> None:
        window = [time.monotonic(), None]
        self.downtime.append(window)
        self.redis.kill()
        time.sleep(2)
        self.redis.start()
        window[1] = time.monotonic()

    def web_outage(self) -> None:
        window = [time.monotonic(), None]
        self.downtime.append(window)
        os.killpg(self.web.pid, signal.SIGKILL)  # gunicorn's master and its workers, as when its container dies
        self.web.wait(timeout=10)
        self.start_web()
        window[1] = time.monotonic()

    # -- the scenario -------------------------------------------------------------------------

    def run(self) -> ChaosReport:
        plan = self.plan
        jobs = {self.create(i): i for i in range(plan.jobs)}
        started = time.monotonic()
        next_kill = started + self.random.expovariate(1 / plan.kill_every)
        outages = sorted(
            (at, outage)
            for at, outage in ((plan.redis_outage_at, self.redis_outage), (plan.web_outage_at, self.web_outage))
            if at is not None
        )
        while time.monotonic() - started < plan.seconds:
            now = time.monotonic()
            if outages and now - started >= outages[0][0]:
                outages.pop(0)[1]()
            elif now >= next_kill:
                self.kill_one()
                next_kill = time.monotonic() + self.random.expovariate(1 / plan.kill_every)
            self._send_follow_ups(jobs)
            time.sleep(0.2)
        settle = time.monotonic() + plan.settle_seconds
        while time.monotonic() < settle:
            self._send_follow_ups(jobs)
            if all(self._ended(job_id) for job_id in jobs) and all(
                len(self.accepted[j]) == plan.follow_ups + 1 for j in jobs
            ):
                self._settled.set()  # a watcher still waiting would wait out its window for nothing
                break
            time.sleep(0.5)
        # Every watcher has reported before the report is read: each ends within its window, at once if settled.
        for thread, killed_at in self._recovery_threads:
            thread.join(timeout=max(0.0, killed_at + RECOVERY_WINDOW - time.monotonic()))
        return self._check(jobs)

    def _send_follow_ups(self, jobs: dict[str, int]) -> None:
        for job_id, index in jobs.items():
            if len(self.accepted[job_id]) < self.plan.follow_ups + 1 and self._ended(job_id):
                self.follow_up(job_id, index)

    def _ended(self, job_id: str) -> bool:
        return self.job(job_id)["status"] in ("completed", "failed")

    def _check(self, jobs: dict[str, int]) -> ChaosReport:
        """What the API, the code host's pages and git show once the chaos is over (never Redis directly)."""
        report = self.report
        listed = self._listed_pulls()
        linked: dict[int, str] = {}  # pull-request number -> the job whose record links it
        for job_id in jobs:
            conversation = self._call("GET", f"/job/{job_id}/messages").json()["messages"]
            self._check_messages(job_id, conversation)
            changed = any(m["role"] == "agent" and m["changedFiles"] for m in conversation)
            self._check_pull(job_id, self.job(job_id)["prLink"], changed, listed, linked)
        report.extra_pulls += [number for number in sorted(listed) if number not in linked]
        report.exited_by_themselves = [
            (w.pid, w.proc.returncode) for w in self.workers if not w.alive() and w.pid not in self.killed
        ]
        try:
            assert_copydesk_commits_pass_fsck(self.repo)
        except AssertionError as finding:
            report.fsck_findings.append(str(finding))
        return report

    def _check_messages(self, job_id: str, conversation: list[dict]) -> None:
        """Every accepted message of the job: present, ended, not failed, and committed at most once (exactly
        once when it was processed and changed files)."""
        report = self.report
        users = {(_TAG.search(m["content"]) or [None, None])[1]: m for m in conversation if m["role"] == "user"}
        replies = {m["replyTo"]: m for m in conversation if m["role"] == "agent"}
        report.messages += len(self.accepted[job_id])
        for tag in self.accepted[job_id]:
            message = users.get(tag)
            if message is None:
                report.lost.append((job_id, tag))
                continue
            commits = self._trailer_count(f"copydesk/{job_id}", message["id"])
            changed = bool((replies.get(message["id"]) or {}).get("changedFiles"))
            if commits > 1:
                report.duplicates.append((job_id, tag, commits))
            elif message["status"] == "processed" and changed and commits != 1:
                report.uncommitted.append((job_id, tag))
            if message["status"] in ("queued", "running"):
                report.stuck.append((job_id, tag, message["status"]))
                continue
            error = (message.get("error") or {}).get("code")
            if error == "run_interrupted":
                report.run_interrupted += 1
            elif error == "internal_error":
                report.internal_errors.append((job_id, tag, message["error"]))
            elif error:
                report.other_failures.append((job_id, tag, message["error"]))

    def _check_pull(
        self, job_id: str, pr_link: str | None, changed: bool, listed: set[int], linked: dict[int, str]
    ) -> None:
        """The job's `prLink` is a pull request the code host lists, for this job alone; none only without commits."""
        if pr_link is None:
            if changed:
                self.report.missing_pulls.append((job_id, None))
            return
        number = int(pr_link.rstrip("/").rsplit("/", 1)[1])
        if number not in listed or linked.setdefault(number, job_id) != job_id:
            self.report.missing_pulls.append((job_id, pr_link))

    def _trailer_count(self, branch: str, message_id: str) -> int:
        """How many commits on the branch carry the message's trailer (none when the branch does not exist)."""
        return len(
            Git()
            .out(
                "log",
                "--format=%H",
                "--fixed-strings",
                f"--grep={describe.TRAILER_MESSAGE}: {message_id}",
                f"refs/heads/{branch}",
                git_dir=self.repo,
                check=False,
            )
            .split()
        )

    def _listed_pulls(self) -> set[int]:
        """The pull-request numbers the local code host's repository page lists, read over HTTP as the signed-in
        operator sees them (the sign-in link is issued the way `copydesk dashboard login-link` issues it)."""
        from bot.dashboard.operator import issue_login_link

        session = requests.Session()
        signed_in = session.get(issue_login_link(self.ctx.services.redis, self.settings.base_url), timeout=10)
        assert signed_in.status_code == 200, signed_in.text[:500]
        page = session.get(f"{self.settings.base_url}/local/{self.project_id}", timeout=10)
        assert page.status_code == 200, page.text[:500]
        return {int(n) for n in re.findall(rf'href="/local/{re.escape(self.project_id)}/pulls/(\d+)"', page.text)}
