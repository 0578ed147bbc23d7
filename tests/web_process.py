"""The real `copydesk web` as a process, and slow anonymous clients that hold request bodies open."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from tests.process_guard import stop

COPYDESK = shutil.which("copydesk", path=str(Path(sys.executable).parent))


class WebServer:
    """`copydesk web` on a free port with `env`; its output (access log included) goes to `log_path`."""

    def __init__(
        self, env: dict[str, str], port: int, log_path: Path, *, worker_class: str = "gevent", workers: int = 2
    ) -> None:
        self.port = port
        self.log_path = log_path
        self._argv = [COPYDESK, "web", "--port", str(port), "--workers", str(workers), "--worker-class", worker_class]
        self._env = {**os.environ, **env}
        self._proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def connections_per_worker(self) -> dict[int, int]:
        """How many established connections on its port each gunicorn worker holds (Linux: read from /proc)."""
        assert self._proc is not None
        children = Path(f"/proc/{self._proc.pid}/task/{self._proc.pid}/children").read_text().split()
        inodes = set()
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == self.port and fields[3] == "01":  # local port; ESTABLISHED
                inodes.add(fields[9])
        held = {}
        for pid in map(int, children):
            links = (os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir())
            held[pid] = sum(1 for link in links if link.startswith("socket:[") and link[8:-1] in inodes)
        return held

    def __enter__(self) -> "WebServer":
        log = open(self.log_path, "ab")
        # Its own process group, so that `crash` reaches gunicorn's workers too; not a session of its own, which
        # the kernel's autogroup scheduling would weigh as one against everything else (see bench/api.py).
        self._proc = subprocess.Popen(self._argv, env=self._env, stdout=log, stderr=subprocess.STDOUT, process_group=0)
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"copydesk web exited {self._proc.returncode}: {self.log()[-2000:]}")
            # Its own line first: a port picked free may have been taken since, and another test's server would
            # answer /healthz in its place (`copydesk web` checks the port is free before it says so).
            if f"listening on {self.url} " not in self.log():
                time.sleep(0.1)
                continue
            try:
                if requests.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                time.sleep(0.1)
        self.__exit__()
        raise RuntimeError("copydesk web did not answer /healthz within 60 s")

    def __exit__(self, *exc) -> None:
        if self._proc is not None and self._proc.poll() is None:
            stop(self._proc, timeout=20)  # SIGTERM to gunicorn's master: a graceful stop of its workers

    def crash(self) -> None:
        """SIGKILL the master and its workers at once: open connections are cut, nothing ends gracefully."""
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()

    def log(self) -> str:
        return self.log_path.read_text("utf-8", "replace") if self.log_path.exists() else ""


@contextmanager
def shared_web_server(redis_server: str, workdir: Path, env: dict[str, str], **options) -> Iterator[WebServer]:
    """`copydesk web` for all of a module's tests (a start is seconds), on database 0 of the session's Redis:
    each test's `stack` (its `redis_url`) empties that database and registers its own project and key, so no
    Redis state passes from one test to the next. Only for tests that neither reconfigure nor stop the server.
    `env` is added to settings like `stack`'s (a scripted model, a data folder in `workdir`)."""
    from service.settings import Settings
    from tests.conftest import free_port

    port = free_port()
    script = workdir / "script.json"
    script.write_text('{"runs": []}')
    settings = Settings(
        redis_url=f"{redis_server}/0",
        data_dir=workdir / "data",
        base_url=f"http://127.0.0.1:{port}",
        model=f"scripted:{script}",
    )
    with WebServer({**settings.to_env(), **env}, port, workdir / "web.log", **options) as server:
        yield server


class SlowClients:
    """`count` connections that each declare a large body on one of `paths`, then send a byte every second."""

    def __init__(self, port: int, paths: list[str], count: int, *, declared: int = 10_000_000) -> None:
        self._port, self._paths, self._count, self._declared = port, paths, count, declared
        self._sockets: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)

    def __enter__(self) -> "SlowClients":
        for n in range(self._count):
            path = self._paths[n % len(self._paths)]
            sock = socket.create_connection(("127.0.0.1", self._port), timeout=10)
            sock.sendall(
                (
                    f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    f"X-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: slow-{n}\r\n"
                    f"Content-Length: {self._declared}\r\n\r\n{{"
                ).encode()
            )
            self._sockets.append(sock)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for sock in self._sockets:
            sock.close()

    def _trickle(self) -> None:
        while not self._stop.wait(1.0):
            for sock in self._sockets:
                try:
                    sock.send(b" ")
                except OSError:
                    pass  # the server closed it: that is its right


def unread_connections(port: int) -> int:
    """Connections to `port` on this machine whose bytes the server has not read yet (from /proc/net/tcp)."""
    unread = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state, queues = fields[1], fields[3], fields[4]
            if int(local.rsplit(":", 1)[1], 16) == port and state == "01" and int(queues.split(":")[1], 16) > 0:
                unread += 1
    return unread


def latency(url: str, headers: dict[str, str] | None = None, *, timeout: float = 30) -> float:
    """Seconds one GET of `url` takes on a new connection (`timeout` when it does not answer in time)."""
    started = time.monotonic()
    try:
        response = requests.get(url, headers={**(headers or {}), "Connection": "close"}, timeout=timeout)
        response.raise_for_status()
    except requests.Timeout:
        return timeout
    return time.monotonic() - started
