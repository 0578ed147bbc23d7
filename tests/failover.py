"""The failover rig shared by the failover test and `bench/failover.py`: a primary, a replica and a sentinel on
loopback; the real web and worker processes on the Sentinel URL; clients creating jobs and sending follow-ups to a
slow model while Sentinel fails the primary over (or the primary is SIGKILLed); then what the API and git show."""

import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
import requests
import rq

from bot import context
from service import describe
from service.settings import Settings
from service.workspace.git import Git
from tests.conftest import DOCS, commit_files, free_port
from tests.model_standin import ModelStandIn, Reply, ToolUse
from tests.redis_servers import SERVICE, SentinelGroup, ha_node
from tests.web_process import WebServer
from tests.worker_processes import WorkerProcess

_TAG = re.compile(r"failover:((?:c\d+j|p)\d+m\d+)")
PROBE_EVERY_SECONDS = 1.5


@dataclass
class Answer:
    """One API call as a client saw it: when it was sent and answered, and the status (0: no answer)."""

    method: str
    sent: float
    answered: float
    status: int


@dataclass
class FailoverReport:
    answers: list[Answer] = field(default_factory=list)
    acknowledged: int = 0  # writes answered 2xx
    present: int = 0  # of those, readable afterwards
    lost: list = field(default_factory=list)  # acknowledged writes not readable afterwards
    duplicates: list = field(default_factory=list)  # messages with more than one commit
    stuck: list = field(default_factory=list)  # messages still queued or running after the settle
    failed: list = field(default_factory=list)  # messages whose run failed, with why
    ready_while_no_primary: list = field(default_factory=list)  # /readyz 200 answers with no writable primary
    outage: tuple[float, float] | None = None  # first 503 to the first 2xx after it, in monotonic time

    @property
    def outage_seconds(self) -> float | None:
        return None if self.outage is None else self.outage[1] - self.outage[0]

    def figures(self) -> str:
        seconds = self.outage_seconds
        statuses: dict[int, int] = {}
        for answer in self.answers:
            statuses[answer.status] = statuses.get(answer.status, 0) + 1
        return (
            f"failover as clients see it (first 503 to the first 2xx after it): "
            f"{'none seen' if seconds is None else f'{seconds:.1f} s'}\n"
            f"writes acknowledged: {self.acknowledged}, present afterwards: {self.present}\n"
            f"answers by status: {dict(sorted(statuses.items()))}\n"
            f"lost: {len(self.lost)}, committed twice: {len(self.duplicates)}, stuck: {len(self.stuck)}, "
            f"failed runs: {len(self.failed)}, /readyz 200 with no writable primary: "
            f"{len(self.ready_while_no_primary)}"
        )


class FailoverRig:
    """Everything on loopback in `workdir`; `clients` threads each create jobs one after another and send a
    follow-up to each once its first round ended."""

    def __init__(
        self,
        workdir: Path,
        *,
        min_replicas: int = 1,
        workers: int = 2,
        clients: int = 2,
        model_delay: float = 0.4,
        replicas: int = 1,
        sync_delay: int | None = None,
    ) -> None:
        self.dir = workdir
        # `sync_delay` sets the data nodes' repl-diskless-sync-delay (Redis's default, 5 s, when None): how long a
        # primary waits before the full resync of a replica, e.g. the demoted primary rejoining after a failover.
        # Writes are refused (NOREPLICAS) until that resync is done either way; the wait only lengthens the window.
        delay = () if sync_delay is None else ("--repl-diskless-sync-delay", str(sync_delay))
        self.group = SentinelGroup(workdir / "redis", replicas=replicas, node_args=(*ha_node(replicas), *delay))
        self.model = ModelStandIn().respond(self._model_turn)
        self.min_replicas = min_replicas
        self.model_delay = model_delay
        self.worker_count = workers
        self.client_count = clients
        self.workers: list[WorkerProcess] = []
        self.report = FailoverReport()
        self.accepted: dict[str, list[str]] = {}  # job id -> tags of its messages answered 2xx
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- the parts ----------------------------------------------------------------------------

    def __enter__(self) -> "FailoverRig":
        self.model.__enter__()
        try:
            self.group.__enter__()
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self) -> None:
        git = Git()
        self.repo = self.dir / "docs.git"
        git.run("init", "--bare", "-q", str(self.repo))
        git.run("symbolic-ref", "HEAD", "refs/heads/main", git_dir=self.repo)
        commit_files(git, self.repo, DOCS, message="Initial docs")
        port = free_port()
        self.env = {
            "COPYDESK_REDIS_URL": self.group.url(),
            "COPYDESK_DATA_DIR": str(self.dir / "data"),
            "COPYDESK_BASE_URL": f"http://127.0.0.1:{port}",
            "COPYDESK_MODEL": "openai:failover",
            "OPENAI_API_KEY": "sk-failover",
            "OPENAI_BASE_URL": self.model.openai_base_url,
            "COPYDESK_LEASE_TTL": "2",
            "COPYDESK_SWEEP_INTERVAL": "1",
            "COPYDESK_STOP_GRACE": "2",
            "COPYDESK_MAX_ATTEMPTS": "20",
            "COPYDESK_REDIS_MIN_REPLICAS": str(self.min_replicas),
            "COPYDESK_REDIS_REPLICA_WAIT_MS": "1000",
            "COPYDESK_RATE_LIMIT": "100000",
        }
        settings = Settings.from_env(self.env)
        ctx = context.build(settings)
        self.project_id = ctx.local.register(ctx.services.projects, path=self.repo, ref="main").id
        _key, key = ctx.services.keys.create(account="local", name="failover")
        ctx.services.durability.confirm()
        ctx.services.redis.close()
        # The workers first: they start up while the web is started and waited for.
        for n in range(self.worker_count):
            self.workers.append(WorkerProcess(self.env, self.dir / f"worker{n}.log", "--name", f"w{n}"))
        self.web = WebServer(self.env, port, self.dir / "web.log", workers=1).__enter__()
        self.api = f"{self.web.url}/v2/agent/{self.project_id}"
        self.headers = {"Authorization": f"Bearer {key}"}

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=15)
        # What is checked happened before this: the processes are killed, not stopped gracefully.
        for worker in self.workers:
            if worker.alive():
                worker.kill()
            worker.stop()
        if getattr(self, "web", None) is not None:
            self.web.crash()
        self.group.__exit__()
        self.model.__exit__(*exc)

    def _model_turn(self, body: dict):
        """A slow, stateless model: write the message's page, then finish."""
        messages = body.get("messages") or []
        prompt = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        found = _TAG.search(str(prompt))
        tag = found.group(1) if found else "untagged"
        if tag.startswith("p"):
            return 0.0, Reply(tool_calls=[ToolUse("finish", {"title": "Probe", "summary": "Nothing to change."})])
        if messages and messages[-1].get("role") == "tool":
            return self.model_delay, Reply(
                tool_calls=[ToolUse("finish", {"title": f"Page {tag}", "summary": f"Wrote {tag}."})]
            )
        return self.model_delay, Reply(
            tool_calls=[ToolUse("write_file", {"path": f"docs/failover/{tag}.md", "content": f"# {tag}\n"})]
        )

    # -- traffic ------------------------------------------------------------------------------

    def start_traffic(self) -> None:
        """Clients creating jobs and sending follow-ups, and a readiness prober, until `stop_traffic`."""
        for n in range(self.client_count):
            self._threads.append(threading.Thread(target=self._client, args=(n,), daemon=True))
        self._threads.append(threading.Thread(target=self._probe_writes, daemon=True))
        self._threads.append(threading.Thread(target=self._probe_readiness, daemon=True))
        for thread in self._threads:
            thread.start()

    def stop_traffic(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self._threads = []

    def _call(
        self, session: requests.Session, method: str, path: str, *, headers: dict[str, str] | None = None, **kwargs
    ) -> requests.Response | None:
        sent = time.monotonic()
        try:
            response = session.request(
                method, self.api + path, headers={**self.headers, **(headers or {})}, timeout=10, **kwargs
            )
        except requests.RequestException:
            response = None
        with self._lock:
            self.report.answers.append(
                Answer(method, sent, time.monotonic(), response.status_code if response is not None else 0)
            )
        return response

    def _client(self, n: int) -> None:
        session = requests.Session()
        for j in range(10_000):
            if self._stop.is_set():
                return
            job_id = self._create(session, f"c{n}j{j}")
            if job_id is None:
                return
            if self._wait_ended(session, job_id) and not self._stop.is_set():
                self._follow_up(session, job_id, f"c{n}j{j}m1")
                self._wait_ended(session, job_id)

    def _probe_writes(self) -> None:
        """A job created every PROBE_EVERY_SECONDS (its run changes nothing): writes as a client sees them."""
        session = requests.Session()
        for n in range(10_000):
            if self._create(session, f"p{n}") is None or self._stop.wait(PROBE_EVERY_SECONDS):
                return

    def _create(self, session: requests.Session, name: str) -> str | None:
        """Create a job, retried with one Idempotency-Key until answered 201 (None when stopped first)."""
        tag = f"{name}m0"
        while not self._stop.is_set():
            response = self._call(
                session,
                "POST",
                "/job",
                json={"prompt": f"failover:{tag} Write the page."},
                headers={"Idempotency-Key": name},
            )
            if response is not None and response.status_code == 201:
                job_id = response.json()["id"]
                with self._lock:
                    self.accepted.setdefault(job_id, []).append(tag)
                return job_id
            assert response is None or response.status_code == 503, (response.status_code, response.text)
            self._stop.wait(0.2)
        return None

    def _follow_up(self, session: requests.Session, job_id: str, tag: str) -> None:
        """Send a follow-up until answered 200; a retry after a 503 may store it twice, which the checks allow."""
        while not self._stop.is_set():
            response = self._call(
                session, "POST", f"/job/{job_id}/message", json={"prompt": f"failover:{tag} Write another."}
            )
            if response is not None and response.status_code == 200:
                with self._lock:
                    self.accepted[job_id].append(tag)
                return
            assert response is None or response.status_code == 503, (response.status_code, response.text)
            self._stop.wait(0.2)

    def _wait_ended(self, session: requests.Session, job_id: str) -> bool:
        while not self._stop.is_set():
            response = self._call(session, "GET", f"/job/{job_id}")
            if response is not None and response.status_code == 200 and response.json()["status"] != "active":
                return True
            self._stop.wait(0.2)
        return False

    def _probe_readiness(self) -> None:
        """/readyz, sandwiched between two looks at the nodes: when neither look finds a primary that takes
        writes, the answer must not be 200."""
        while not self._stop.is_set():
            before = self.writable_primary()
            try:
                status = requests.get(f"{self.web.url}/readyz", timeout=5).status_code
            except requests.RequestException:
                status = 0
            after = self.writable_primary()
            if status == 200 and before is None and after is None:  # neither look found one
                self.report.ready_while_no_primary.append(time.monotonic())
            self._stop.wait(0.1)

    def writable_primary(self) -> int | None:
        """The port of a node that is a primary with the replicas min-replicas-to-write needs, if any."""
        for node in self.group.nodes:
            try:
                with node.client(socket_timeout=1) as client:
                    info = client.info("replication")
            except redis.RedisError:
                continue
            needed = len(self.group.replicas)
            if info.get("role") == "master" and int(info.get("min_slaves_good_slaves", needed)) >= needed:
                return node.port
        return None

    # -- the faults ---------------------------------------------------------------------------

    def pushed(self) -> int:
        """How many commits Copydesk pushed so far, on all its branches."""
        out = Git().out("log", "--format=%H", "--branches=copydesk/*", git_dir=self.repo, check=False)
        return len(out.split())

    def wait_for_pushes(self, count: int, timeout: float = 60) -> None:
        """Until `count` commits were pushed (so runs, commits and follow-ups are flowing)."""
        deadline = time.monotonic() + timeout
        while self.pushed() < count:
            assert time.monotonic() < deadline, f"fewer than {count} commits pushed within {timeout} s"
            time.sleep(0.2)

    def sentinel_failover(self) -> int:
        """Ask the sentinel to fail the primary over; returns the new primary's port once it names it."""
        old = self.group.master_port()
        with self.group.sentinels[0].client() as sentinel:
            sentinel.execute_command("SENTINEL", "FAILOVER", SERVICE)
        return self._new_primary(old)

    def kill_primary(self) -> int:
        """SIGKILL the primary; once the sentinel promoted the replica, start the old primary again (as a
        supervisor would), so that the new primary gets the replica min-replicas-to-write asks for."""
        old = self.group.master_port()
        assert old is not None
        self.group.node(old).kill()
        new = self._new_primary(old)
        self.group.node(old).start()
        return new

    # Generous: a failover the sentinel has to retry (no replica it trusts yet, at load ~10) waits out its
    # failover-timeout twice; what the test checks is what the failover loses or doubles, not its speed.
    def _new_primary(self, old: int | None, timeout: float = 90) -> int:
        deadline = time.monotonic() + timeout
        while (port := self.group.master_port()) in (old, None):
            assert time.monotonic() < deadline, "the sentinel named no new primary"
            time.sleep(0.1)
        return port

    def wait_for_service(self, after: float, timeout: float = 60) -> None:
        """Until a write sent after `after` was answered 2xx."""
        deadline = time.monotonic() + timeout
        while not any(
            a.method == "POST" and a.sent > after and 200 <= a.status < 300 for a in list(self.report.answers)
        ):
            assert time.monotonic() < deadline, f"no write succeeded within {timeout} s of the failover"
            time.sleep(0.2)

    # -- the checks ---------------------------------------------------------------------------

    def settle_and_check(self, timeout: float = 90) -> FailoverReport:
        """Stop the clients, let every accepted message end, then look at what the API and git show."""
        self.stop_traffic()
        session = requests.Session()
        deadline = time.monotonic() + timeout
        pending = set(self.accepted)
        while pending and time.monotonic() < deadline:
            for job_id in list(pending):
                response = self._get(session, f"/job/{job_id}/messages")
                messages = response.json()["messages"] if response is not None else []
                if messages and all(m["status"] not in ("queued", "running") for m in messages if m["role"] == "user"):
                    pending.discard(job_id)
            time.sleep(0.5)
        report = self.report
        report.outage = _outage(report.answers)
        for job_id, tags in self.accepted.items():
            self._check_job(session, job_id, tags)
        return report

    def _get(self, session: requests.Session, path: str) -> requests.Response | None:
        try:
            response = session.get(self.api + path, headers=self.headers, timeout=10)
        except requests.RequestException:
            return None
        return response if response.status_code == 200 else None

    def _check_job(self, session: requests.Session, job_id: str, tags: list[str]) -> None:
        report = self.report
        report.acknowledged += len(tags)
        response = self._get(session, f"/job/{job_id}/messages")
        conversation = response.json()["messages"] if response is not None else []
        users: dict[str, list[dict]] = {}
        for message in conversation:
            if message["role"] == "user" and (found := _TAG.search(message["content"])):
                users.setdefault(found.group(1), []).append(message)
        for tag in tags:
            if tag in users:
                report.present += 1
            else:
                report.lost.append((job_id, tag))
        for tag, messages in users.items():
            for message in messages:
                commits = self._trailer_count(f"copydesk/{job_id}", message["id"])
                if commits > 1:
                    report.duplicates.append((job_id, tag, commits))
                if message["status"] in ("queued", "running"):
                    report.stuck.append((job_id, tag, message["status"], self._run_record(job_id)))
                elif message.get("error"):
                    report.failed.append((job_id, tag, message["error"]))

    def _run_record(self, job_id: str) -> str:
        """For a stuck message, where its run is as RQ tells it (only to say why; the checks read the API)."""
        from rq.job import Job as RqJob

        from service import redisconn

        client = redisconn.client(self.group.url(), socket_timeout=5)
        try:
            rq_id = client.get(f"cd:job:{job_id}:rq")
            if rq_id is None:
                return "no RQ job"
            queued = any(rq_id.decode() in queue.job_ids for queue in rq.Queue.all(connection=client))
            status = RqJob.fetch(rq_id.decode(), connection=client).get_status()
            return f"RQ job {rq_id.decode()} {status}, {'in' if queued else 'in no'} queue"
        except Exception as exc:  # noqa: BLE001 - a diagnosis must not hide the finding it explains
            return f"RQ record unreadable: {exc}"
        finally:
            client.close()

    def _trailer_count(self, branch: str, message_id: str) -> int:
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

    def processes_alive(self) -> bool:
        """The web and every worker are the processes started at the beginning: nothing was restarted."""
        return self.web._proc is not None and self.web._proc.poll() is None and all(w.alive() for w in self.workers)


def _outage(answers: list[Answer]) -> tuple[float, float] | None:
    """From the first write answered 503 (or not at all) to the first write answered 2xx that was sent after it
    (reads go on during a failover: they are not the measure)."""
    ordered = sorted((a for a in answers if a.method == "POST"), key=lambda a: a.sent)
    first_bad = next((a for a in ordered if a.status == 503 or a.status == 0), None)
    if first_bad is None:
        return None
    back = next((a for a in ordered if a.sent > first_bad.sent and 200 <= a.status < 300), None)
    return (first_bad.sent, back.answered) if back is not None else (first_bad.sent, float("inf"))
