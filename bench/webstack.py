"""What the web benchmarks serve: a private redis-server, a local project, a key and one job, then `copydesk web`."""

import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import redis
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot import context  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from tests.conftest import commit_files, free_port  # noqa: E402
from tests.web_process import WebServer  # noqa: E402


@dataclass
class Served:
    url: str
    port: int
    job_url: str
    headers: dict[str, str]
    project_id: str


@contextlib.contextmanager
def redis_server(root: Path) -> Iterator[str]:
    """A throw-away redis-server; yields its URL."""
    port = free_port()
    proc = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind",
                             "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        for _ in range(100):
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait()


@contextlib.contextmanager
def served(worker_class: str, workers: int = 2) -> Iterator[Served]:
    """`copydesk web --worker-class worker_class` over a fresh store holding one project, key and job."""
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-web-") as tmp, redis_server(Path(tmp)) as redis_url:
        root = Path(tmp)
        git = Git()
        bare = root / "docs.git"
        git.run("init", "--bare", "-q", str(bare))
        commit_files(git, bare, {"README.md": "# Docs\n"})
        port = free_port()
        settings = Settings(redis_url=redis_url, data_dir=root / "data", base_url=f"http://127.0.0.1:{port}")
        ctx = context.build(settings, environ={})
        project = ctx.local.register(ctx.services.projects, path=bare, ref="main")
        _, key = ctx.services.keys.create(account="local", name="bench")
        env = {"COPYDESK_REDIS_URL": redis_url, "COPYDESK_DATA_DIR": str(root / "data"),
               "COPYDESK_BASE_URL": settings.base_url, "COPYDESK_RATE_LIMIT": "1000000"}
        with WebServer(env, port, root / "web.log", worker_class=worker_class, workers=workers) as server:
            headers = {"Authorization": f"Bearer {key}"}
            created = requests.post(f"{server.url}/v2/agent/{project.id}/job", json={"prompt": "bench"},
                                    headers=headers, timeout=30)
            created.raise_for_status()
            yield Served(server.url, port, f"{server.url}/v2/agent/{project.id}/job/{created.json()['id']}",
                         headers, project.id)
