"""`copydesk demo`: one whole job, end to end on this machine, against the local code host."""

import json
import os
import secrets
import shutil
import signal
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
from bot.demo_records import DemoRun, remove_run
from service import redisconn
from service.settings import Settings
from service.workspace.git import Git

_TERMINAL = {"completed", "failed", "archived"}


def run_demo(settings: Settings, *, keep: bool = False, serve: bool = False) -> int:
    """Create a sample repository, project and key, start web and worker, run one job and show its diff.

    The demo has its own account and queue, so a worker of a shared Redis never takes its job, and at the end it
    removes its project, key and records (unless `keep`). With `serve`, then print a one-time dashboard sign-in
    link and keep serving until interrupted.
    """
    try:
        return _run(settings, keep=keep, serve=serve)
    except KeyboardInterrupt:  # before it served the dashboard: what it started is stopped and removed by now
        _say("\nStopped the demo.")
        return 130  # a shell's status for a command ended by Ctrl-C


def _run(settings: Settings, *, keep: bool, serve: bool) -> int:
    with ExitStack() as stack:
        stack.enter_context(_interrupted_by(signal.SIGTERM, signal.SIGHUP))
        root = Path(tempfile.mkdtemp(prefix="copydesk-demo-"))
        if not keep:
            stack.callback(shutil.rmtree, root, ignore_errors=True)
        redis_url = stack.enter_context(_redis(settings.redis_url, root))
        port = _free_port()
        model = _choose_model(settings)
        name = f"demo-{secrets.token_hex(4)}"
        settings = settings.with_overrides(
            redis_url=redis_url,
            data_dir=root / "data",
            model=model,
            models=(),
            base_url=f"http://127.0.0.1:{port}",
            queue_name=f"copydesk-{name}",
        )
        ctx = context.build(settings)
        repo = _sample_repository(Git(), root / "acme-widgets.git")
        project = ctx.local.register(ctx.services.projects, path=repo, ref="main", account=name)
        key, api_key = ctx.services.keys.create(
            account=name, name="demo", projects=[project.id], host=project.host, expires_in_days=7
        )
        run = DemoRun(account=name, queue_name=settings.queue_name, project_id=project.id, key_id=key.id)
        # Registered before the processes start, so it runs after they stopped (an ExitStack unwinds backwards).
        stack.callback(_leave, ctx, run, root, keep)
        _say(f"Sample repository  {repo}\nProject            {project.id} (account {name})\nModel              {model}")

        env = _child_env(settings)
        stack.enter_context(
            _processes(
                env,
                ([sys.executable, "-m", "bot.cli", "web", "--port", str(port), "--workers", "1"], root / "web.log"),
                ([sys.executable, "-m", "bot.cli", "worker"], root / "worker.log"),
            )
        )
        _wait_healthy(settings.base_url)

        api = requests.Session()
        api.headers["Authorization"] = f"Bearer {api_key}"
        _say(f"\nPOST /v2/agent/{project.id}/job\n  prompt: {demo_repo.PROMPT}")
        created = api.post(
            f"{settings.base_url}/v2/agent/{project.id}/job", json={"prompt": demo_repo.PROMPT}, timeout=10
        )
        created.raise_for_status()
        job_url = settings.base_url + created.headers["Location"]
        job = _follow(api, job_url)
        _say("\nJob record:\n" + json.dumps(job, indent=2))
        scripted = model.startswith("scripted:")
        if job["error"]:
            _say(
                f"\nThe job failed: {job['error']['message']} ({job['error']['code']}). "
                "Run `copydesk demo --keep` to keep the web and worker logs."
            )
        elif not scripted:  # a language model's own account of what it did
            replies = [m for m in api.get(f"{job_url}/messages", timeout=10).json()["messages"] if m["role"] == "agent"]
            if replies:
                _say(f"\nAgent's summary: {replies[-1]['content']}")
        if job["prLink"]:
            number = int(job["prLink"].rsplit("/", 1)[1])
            pull = ctx.local.pull(project.id, number)
            assert pull is not None  # the job's prLink names it
            diff = ctx.local.diff(project, pull)
            _say(f"\nPull request #{number}: {pull.title}\n{job['prLink']}\n")
            if scripted:
                _say(
                    f"The scripted model made this change: it replayed the bundled demo script's tool calls (no "
                    f"language model was asked) and changed {', '.join(_changed_files(diff))}.\n"
                )
            _say(_colour(diff))
        elif scripted and not job["error"]:
            _say("\nThe scripted model changed nothing.")
        if serve:
            _serve_dashboard(ctx, settings)
        return 0 if job["status"] == "completed" else 1


@contextmanager
def _interrupted_by(*signals: signal.Signals):
    """While inside, these signals stop the demo as Ctrl-C does. A `kill` or a closed terminal reaches only this
    process, and would otherwise end it at once, leaving its web server and worker running and its records in
    Redis."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = {number: signal.signal(number, interrupt) for number in signals}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _leave(ctx: context.Context, run: DemoRun, root: Path, keep: bool) -> None:
    """Remove the demo's records from Redis, or say where they and its files are kept."""
    if keep:
        _say(
            f"\nKept the demo's files in {root}, and its project {run.project_id} and key {run.key_id} (account "
            f"{run.account}, the key expiring in 7 days) in Redis."
        )
        return
    removed = remove_run(ctx.services.redis, ctx.services, run)
    _say(
        f"\nRemoved the demo's project, key and records ({removed} Redis keys) and its files; "
        "`copydesk demo --keep` keeps them."
    )


def _changed_files(diff: str) -> list[str]:
    """The paths a `git diff` changed, in its order."""
    return [line.split(" b/", 1)[1] for line in diff.splitlines() if line.startswith("diff --git a/")]


def _serve_dashboard(ctx: context.Context, settings: Settings) -> None:
    """Print a one-time operator sign-in link and keep the web server and worker up until Ctrl-C."""
    from bot.dashboard.operator import issue_login_link

    link = issue_login_link(ctx.services.redis, settings.base_url)
    try:
        # Inside: a Ctrl-C that comes as the line is written, before the wait, stops the demo as any other does.
        _say(
            f"\nSee the job on the dashboard (this link signs you in once, within 15 minutes):\n  {link}\n"
            "Press Ctrl-C to stop the demo."
        )
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
    _say(
        "No model configured: using the bundled demo script (the `scripted` provider replays recorded "
        "tool calls; it is not a language model). Set ANTHROPIC_API_KEY or OPENAI_API_KEY to use one.\n"
    )
    return "scripted:demo"


def _sample_repository(git: Git, path: Path) -> Path:
    work = path.with_suffix(".work")
    git.run("init", "-q", "-b", "main", str(work))
    for name, content in demo_repo.FILES.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(content)
    git.run("add", "-A", cwd=work)
    git.run(
        "-c",
        "user.name=Acme Writer",
        "-c",
        "user.email=writer@acme.test",
        "commit",
        "-q",
        "-m",
        "Initial docs",
        cwd=work,
    )
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
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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
def _processes(env: dict, *commands: tuple[list[str], Path]):
    """Run each (argv, log path) as a process; at the end ask all to stop at once (each takes a second or more
    to wind down), then wait for each."""
    with ExitStack() as logs:
        procs = []
        try:
            for argv, log_path in commands:
                log = logs.enter_context(open(log_path, "wb"))
                procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT))
            yield procs
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
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
    env.update(
        COPYDESK_REDIS_URL=settings.redis_url,
        COPYDESK_DATA_DIR=str(settings.data_dir),
        COPYDESK_BASE_URL=settings.base_url,
        COPYDESK_MODEL=settings.model,
        COPYDESK_QUEUE=settings.queue_name,
    )
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
    return "\n".join(
        colours.get(line[:1], "") + line + "\033[0m" if line[:1] in colours else line for line in diff.splitlines()
    )


def _say(text: str) -> None:
    print(text, flush=True)
