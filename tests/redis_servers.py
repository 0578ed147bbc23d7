"""Private redis-server processes for tests, on free ports, configured as each test needs."""

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis

from tests.process_guard import stop

# What the session's server runs with unless a test asks otherwise: nothing written to disk.
NO_PERSISTENCE = ("--save", "", "--appendonly", "no")


class RedisStartError(RuntimeError):
    """redis-server is missing or did not answer in time."""


@contextlib.contextmanager
def running_redis(workdir: Path, *args: str, port: int | None = None) -> Iterator[str]:
    """Run redis-server on 127.0.0.1 with extra `args` (e.g. `--maxmemory-policy allkeys-lru`) and its files in
    `workdir`; yield its base URL (`redis://127.0.0.1:PORT`), stop it on exit."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RedisStartError("redis-server is not installed; .ci/run installs it (apt-get install redis-server)")
    workdir.mkdir(parents=True, exist_ok=True)
    # A port picked free can be taken before redis-server binds it, even by another test's redis-server, which
    # would then answer in its place: a chosen port is tried a few times, and only this process's answer counts.
    for _ in range(1 if port else 5):
        chosen = port or _free_port()
        proc = subprocess.Popen(
            [binary, "--port", str(chosen), "--bind", "127.0.0.1", "--dir", str(workdir), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            if _serving(proc, chosen, args):
                break
        except BaseException:
            stop(proc)
            raise
        stop(proc)
    else:
        raise RedisStartError(f"redis-server {' '.join(args)} found no free port")
    try:
        yield f"redis://127.0.0.1:{chosen}"
    finally:
        stop(proc)


def _free_port() -> int:
    from tests.conftest import free_port

    return free_port()


def _serving(proc: subprocess.Popen, port: int, args: tuple[str, ...] | list[str], timeout: float = 10) -> bool:
    """Whether `proc` answers on `port` (False: it exited first, e.g. could not bind it); RedisStartError after
    `timeout` seconds. Refused connections and a server still loading its files are waited out."""
    deadline = time.monotonic() + timeout
    with redis.Redis(port=port, socket_timeout=5) as client:
        while True:
            try:
                if int(client.info("server")["process_id"]) == proc.pid:
                    return True
            except redis.ConnectionError:
                pass
            if proc.poll() is not None:
                return False
            if time.monotonic() > deadline:
                raise RedisStartError(f"redis-server {' '.join(args)} did not start")
            time.sleep(0.05)


def ha_node(replicas: int = 1) -> tuple[str, ...]:
    """A data node's settings in a Sentinel group of `replicas` replicas: it takes no write it could not hand to
    every replica, so a demoted primary refuses writes at once (the promoted replica left it) instead of taking
    writes a resync will discard."""
    return (
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--save",
        "",
        "--maxmemory-policy",
        "noeviction",
        "--min-replicas-to-write",
        str(replicas),
        "--min-replicas-max-lag",
        "10",
    )


SERVICE = "copydesk"


class RedisNode:
    """One redis-server (a data node or, with `sentinel_of`, a sentinel) on a fixed port and folder, so it can be
    SIGKILLed and started again."""

    def __init__(self, workdir: Path, *args: str, sentinel_of: tuple[str, int] | None = None) -> None:
        from tests.conftest import free_port

        self.port = free_port()
        self.workdir = workdir
        self.args = args
        self.sentinel_of = sentinel_of
        self.proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client(self, **options) -> redis.Redis:
        return redis.Redis(port=self.port, **{"socket_timeout": 5, **options})

    def start(self) -> "RedisNode":
        binary = shutil.which("redis-server")
        if binary is None:
            raise RedisStartError("redis-server is not installed; .ci/run installs it (apt-get install redis-server)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir), *self.args]
        if self.sentinel_of is not None:
            # A sentinel rewrites its configuration file as it learns the group: it must have one of its own.
            config = self.workdir / "sentinel.conf"
            if not config.exists():
                host, port = self.sentinel_of
                config.write_text(
                    f"sentinel monitor {SERVICE} {host} {port} 1\n"
                    f"sentinel down-after-milliseconds {SERVICE} 1000\n"
                    f"sentinel failover-timeout {SERVICE} 4000\n"
                )
            argv = [
                binary,
                str(config),
                "--sentinel",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.workdir),
            ]
        with open(self.workdir / "log", "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        if not _serving(self.proc, self.port, argv[1:], timeout=20):
            raise RedisStartError(f"redis-server {' '.join(argv[1:])} did not start")
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop(self.proc)


# A sentinel asks each node for INFO every INFO-PERIOD (10 s), and turns a demoted primary that still says it is a
# primary into a replica only after it has said so for 4 PUBLISH-PERIODs (8 s): a test that waits for a replica's link
# or for a failed-over group to settle waits for these. They pace the sentinel's checks, not what it decides.
QUICK_PERIODS = {"INFO-PERIOD": 1000, "PUBLISH-PERIOD": 250}


class SentinelGroup:
    """A primary, `replicas` replicas and `sentinels` sentinels on loopback (each redis-server with `ha_node`'s
    settings unless `node_args` says otherwise); `url` is the Sentinel URL Copydesk takes."""

    def __init__(
        self,
        workdir: Path,
        *,
        replicas: int = 1,
        sentinels: int = 1,
        node_args: tuple[str, ...] | None = None,
        periods: dict[str, int] | None = None,
    ) -> None:
        node_args = ha_node(replicas) if node_args is None else node_args
        self.primary = RedisNode(workdir / "node0", *node_args)
        self.replicas = [
            RedisNode(workdir / f"node{n + 1}", *node_args, "--replicaof", "127.0.0.1", str(self.primary.port))
            for n in range(replicas)
        ]
        self.sentinels = [
            RedisNode(workdir / f"sentinel{n}", sentinel_of=("127.0.0.1", self.primary.port)) for n in range(sentinels)
        ]
        self.periods = periods or {}

    @property
    def nodes(self) -> list[RedisNode]:
        return [self.primary, *self.replicas]

    def url(self, db: int = 0) -> str:
        hosts = ",".join(s.address for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}/{db}"

    def __enter__(self) -> "SentinelGroup":
        try:
            for node in [*self.nodes, *self.sentinels]:
                node.start()
            self.set_periods(self.periods)
            self.wait_until_known(self.primary.port)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for node in [*self.sentinels, *self.nodes]:
            node.stop()

    def set_periods(self, periods: dict[str, int]) -> None:
        """Set each sentinel's timers (SENTINEL DEBUG, in ms); see `QUICK_PERIODS`."""
        for sentinel in self.sentinels:
            with sentinel.client() as client:
                for name, milliseconds in periods.items():
                    client.execute_command("SENTINEL", "DEBUG", name, milliseconds)

    def master_port(self) -> int | None:
        """The primary's port as the first sentinel sees it (None when it knows none)."""
        with self.sentinels[0].client() as client:
            reply = client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
        return int(reply[1]) if reply else None

    def node(self, port: int) -> RedisNode:
        return next(node for node in self.nodes if node.port == port)

    def wait_until_known(self, primary_port: int, timeout: float = 30) -> None:
        """Until every sentinel names `primary_port` as primary and sees every other data node as its healthy,
        in-sync replica."""
        deadline = time.monotonic() + timeout
        others = {n.port for n in self.nodes if n.port != primary_port and n.proc and n.proc.poll() is None}
        while not all(self._sees(s, primary_port, others) for s in self.sentinels):
            if time.monotonic() > deadline:
                raise RedisStartError(
                    f"the sentinels did not settle on primary {primary_port} with replicas "
                    f"{sorted(others)} within {timeout} s"
                )
            time.sleep(0.1)

    @staticmethod
    def _sees(sentinel: RedisNode, primary_port: int, replicas: set[int]) -> bool:
        try:
            with sentinel.client() as client:
                master = client.sentinel_master(SERVICE)
                found = client.sentinel_slaves(SERVICE)
        except redis.RedisError:
            return False
        healthy = {r["port"] for r in found if not r["is_sdown"] and r.get("master-link-status") == "ok"}
        return master["port"] == primary_port and not master["is_sdown"] and replicas <= healthy
