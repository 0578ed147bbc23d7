"""Private redis-server processes for tests, on free ports, configured as each test needs."""

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis

# What the session's server runs with unless a test asks otherwise: nothing written to disk.
NO_PERSISTENCE = ("--save", "", "--appendonly", "no")


class RedisStartError(RuntimeError):
    """redis-server is missing or did not answer in time."""


@contextlib.contextmanager
def running_redis(workdir: Path, *args: str, port: int | None = None) -> Iterator[str]:
    """Run redis-server on 127.0.0.1 with extra `args` (e.g. `--maxmemory-policy allkeys-lru`) and its files in
    `workdir`; yield its base URL (`redis://127.0.0.1:PORT`), stop it on exit."""
    from tests.conftest import free_port

    binary = shutil.which("redis-server")
    if binary is None:
        raise RedisStartError("redis-server is not installed; .ci/run installs it (apt-get install redis-server)")
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    try:
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RedisStartError(f"redis-server {' '.join(args)} did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
