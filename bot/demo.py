"""`copydesk demo`: one whole job, end to end on this machine, against the local code host."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import redis
import requests

from bot import context, demo_repo
from service import redisconn
from service.settings import Settings
from service.workspace.git import Git

_TERMINAL = {"completed", "failed", "archived"}


def run_demo(settings: Settings, *, keep: bool = False, serve: bool = False) -> int:
    """Create a sample repository, project and key, start web and worker, run one job and show its diff.

    With `serve`, then print a one-time dashboard sign-in link and keep serving until interrupted.
    """
    with ExitStack() as stack:
        root = Path(tempfile.mkdtemp(prefix="copydesk-demo-"))
        if not keep:
            stack.callback(shutil.rmtree, root, ignore_errors=True)
        redis_url = stack.enter_context(_redis(settings.redis_url, root))
        port = _free_port()
        model = _choose_model(settings)
        settings = settings.with_overrides(redis_url=redis_url, data_dir=root / "data", model=model, models=(),
                                           base_url=f"http://127.0.0.1:{port}")
        ctx = context.build(settings)
        repo = _sample_repository(Git(), root / "acme-widgets.git")
        # A separate account keeps the demo's records apart from real local projects in a shared Redis.
        project = ctx.local.register(ctx.services.projects, path=repo, ref="main", account="demo")
        _key, api_key = ctx.services.keys.create(account="demo", name="demo", projects=[project.id], host=project.host)
        _say(f"Sample repository  {repo}\nProject            {project.id}\nModel              {model}")

        env = _child_env(settings)
        stack.enter_context(_process([sys.executable, "-m", "bot.cli", "web", "--port", str(port), "--workers", "1"],
                                     env, root / "web.log"))
        stack.enter_context(_process([sys.executable, "-m", "bot.cli", "worker"], env, root / "worker.log"))
        _wait_healthy(settings.base_url)

        api = requests.Session()
        api.headers["Authorization"] = f"Bearer {api_key}"
        _say(f"\nPOST /v2/agent/{project.id}/job\n  prompt: {demo_repo.PROMPT}")
        created = api.post(f"{settings.base_url}/v2/agent/{project.id}/job", json={"prompt": demo_repo.PROMPT},
                           timeout=10)
        created.raise_for_status()
        job_url = settings.base_url + created.headers["Location"]
        job = _follow(api, job_url)
        _say("\nJob record:\n" + json.dumps(job, indent=2))
        replies = [m for m in api.get(f"{job_url}/messages", timeout=10).json()["messages"] if m["role"] == "agent"]
        if replies:
            _say(f"\nAgent's summary: {replies[-1]['content']}")
        if job["error"]:
            _say(f"\nThe job failed: {job['error']['message']} ({job['error']['code']}). "
                 "Run `copydesk demo --keep` to keep the web and worker logs.")
        if job["prLink"]:
            number = int(job["prLink"].rsplit("/", 1)[1])
            pull = ctx.local.pull(project.id, number)
            assert pull is not None  # the job's prLink names it
            _say(f"\nPull request #{number}: {pull.title}\n{job['prLink']}\n")
            _say(_colour(ctx.local.diff(project, pull)))
        if keep:
            _say(f"\nKept the demo's files in {root}")
        if serve:
            _serve_dashboard(ctx, settings)
        return 0 if job["status"] == "completed" else 1


def _serve_dashboard(ctx: context.Context, settings: Settings) -> None:
    """Print a one-time operator sign-in link and keep the web server and worker up until Ctrl-C."""
    from bot.dashboard.operator import issue_login_link

    link = issue_login_link(ctx.services.redis, settings.base_url)
    _say(f"\nSee the job on the dashboard (this link signs you in once, within 15 minutes):\n  {link}\n"
         "Press Ctrl-C to stop the demo.")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        _say("\nStopping the demo.")


def _choose_model(settings: Settings) -> str:
    if os.environ.get("COPYDESK_MODEL"):
        _say(f"Using the model set in COPYDESK_MODEL: {settings.model}\n")
        return settings.model
    if settings.model != Settings.model:  # a vendor key is set, so the settings chose that vendor's model
        _say(f"Using {settings.model}, because its API key is set (COPYDESK_MODEL chooses another).\n")
        return settings.model
    _say("No model configured: using the bundled demo script (the `scripted` provider replays recorded "
         "tool calls; it is not a language model). Set ANTHROPIC_API_KEY or OPENAI_API_KEY to use one.\n")
    return "scripted:demo"


def _sample_repository(git: Git, path: Path) -> Path:
    work = path.with_suffix(".work")
    git.run("init", "-q", "-b", "main", str(work))
    for name, content in demo_repo.FILES.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(content)
    git.run("add", "-A", cwd=work)
    git.run("-c", "user.name=Acme Writer", "-c", "user.email=writer@acme.test", "commit", "-q", "-m",
            "Initial docs", cwd=work)
    git.run("clone", "-q", "--bare", str(work), str(path))
    shutil.rmtree(work)
    return path


@contextmanager
def _redis(url: str, root: Path):
    """Use the configured Redis, or start a private one when nothing listens and redis-server exists."""
    if _answers(url):
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        raise redis.ConnectionError(f"nothing answers at {url} and redis-server is not installed")
    port = _free_port()
    _say(f"No Redis at {url}: starting redis-server on port {port} for the demo.")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                             "no", "--dir", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    local = f"redis://127.0.0.1:{port}/0"
    try:
        _wait(lambda: redis.Redis.from_url(local).ping(), "redis-server")
        yield local
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _answers(url: str) -> bool:
    try:
        return bool(redisconn.client(url, socket_connect_timeout=1).ping())
    except redis.ConnectionError:
        return False


@contextmanager
def _process(argv: list[str], env: dict, log_path: Path):
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def _follow(api: requests.Session, url: str) -> dict:
    """Poll the job until its status is terminal, showing each change."""
    started, last = time.monotonic(), None
    while True:
        job = api.get(url, timeout=10).json()
        if job["status"] != last:
            _say(f"  {time.monotonic() - started:5.1f}s  {job['status']}")
            last = job["status"]
        if job["status"] in _TERMINAL:
            return job
        if time.monotonic() - started > 300:
            raise TimeoutError("the job did not finish within 5 minutes; see the worker log")
        time.sleep(0.3)


def _wait_healthy(base_url: str) -> None:
    _wait(lambda: requests.get(f"{base_url}/readyz", timeout=1).raise_for_status(), "the web server")


def _wait(probe, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            probe()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} did not start within {seconds:.0f} s") from None
            time.sleep(0.1)


def _child_env(settings: Settings) -> dict:
    env = dict(os.environ)
    env.update(COPYDESK_REDIS_URL=settings.redis_url, COPYDESK_DATA_DIR=str(settings.data_dir),
               COPYDESK_BASE_URL=settings.base_url, COPYDESK_MODEL=settings.model)
    env.pop("COPYDESK_MODELS", None)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _colour(diff: str) -> str:
    if not sys.stdout.isatty():
        return diff
    colours = {"+": "\033[32m", "-": "\033[31m", "@": "\033[36m"}
    return "\n".join(colours.get(line[:1], "") + line + "\033[0m" if line[:1] in colours else line
                     for line in diff.splitlines())


def _say(text: str) -> None:
    print(text, flush=True)
