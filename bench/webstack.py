"""What the web benchmarks serve: a private redis-server, a local project and a key, then `copydesk web`
(`web_stack`); `served` adds one job."""

import contextlib
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot import context  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from tests.conftest import commit_files, free_port  # noqa: E402
from tests.redis_servers import NO_PERSISTENCE, running_redis  # noqa: E402
from tests.web_process import WebServer  # noqa: E402


@dataclass
class WebStack:
    url: str
    port: int
    headers: dict[str, str]  # the key's Authorization header
    project_id: str
    env: dict[str, str]  # what `copydesk web` runs with: a `copydesk worker` of this stack runs with it too
    root: Path  # the stack's folder, for logs


@dataclass
class Served:
    url: str
    port: int
    job_url: str
    headers: dict[str, str]
    project_id: str


@contextlib.contextmanager
def web_stack(
    worker_class: str = "gevent",
    workers: int = 2,
    *,
    env: dict[str, str] | None = None,
    files: dict[str, str] | None = None,
) -> Iterator[WebStack]:
    """`copydesk web --worker-class worker_class` with `env` over a fresh store holding one project (a repository
    of `files`, a README by default) and a key. Fails loudly when Redis or the web does not come up."""
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-web-") as tmp:
        root = Path(tmp)
        with running_redis(root / "redis", *NO_PERSISTENCE) as base:
            redis_url = f"{base}/0"
            git = Git()
            bare = root / "docs.git"
            git.run("init", "--bare", "-q", str(bare))
            commit_files(git, bare, files or {"README.md": "# Docs\n"})
            port = free_port()
            settings = Settings(redis_url=redis_url, data_dir=root / "data", base_url=f"http://127.0.0.1:{port}")
            ctx = context.build(settings, environ={})
            project = ctx.local.register(ctx.services.projects, path=bare, ref="main")
            _, key = ctx.services.keys.create(account="local", name="bench")
            web_env = {
                "COPYDESK_REDIS_URL": redis_url,
                "COPYDESK_DATA_DIR": str(root / "data"),
                "COPYDESK_BASE_URL": settings.base_url,
                "COPYDESK_RATE_LIMIT": "1000000",
                **(env or {}),
            }
            with WebServer(web_env, port, root / "web.log", worker_class=worker_class, workers=workers) as server:
                yield WebStack(server.url, port, {"Authorization": f"Bearer {key}"}, project.id, web_env, root)


@contextlib.contextmanager
def served(worker_class: str, workers: int = 2) -> Iterator[Served]:
    """`copydesk web --worker-class worker_class` over a fresh store holding one project, key and job."""
    with web_stack(worker_class, workers) as web:
        created = requests.post(
            f"{web.url}/v2/agent/{web.project_id}/job", json={"prompt": "bench"}, headers=web.headers, timeout=30
        )
        created.raise_for_status()
        yield Served(
            web.url,
            web.port,
            f"{web.url}/v2/agent/{web.project_id}/job/{created.json()['id']}",
            web.headers,
            web.project_id,
        )
