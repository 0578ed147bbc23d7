"""Install Copydesk as an operator would and run one job with it: the built wheel (not editable, no extras) in a
fresh venv holding only the runtime lock, `copydesk web` until /healthz answers, then one job through the API run
by `copydesk worker` from the same install, on the local code host with the bundled scripted model.

    .venv/bin/python scripts/wheel_smoke.py    # .ci/run does this; prints each step, exits 0 or 1

It needs python3 (with venv), git and redis-server, and reaches the package index for the runtime lock (pip's
cache makes a second run quick). Standard library only.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "service")
# What a wheel is built from: the packages and the files pyproject.toml names (readme, license).
SOURCES = ("pyproject.toml", "README.md", "LICENSE", *PACKAGES)
# Imports every module of the installed packages: each runtime import must come from the runtime lock.
IMPORT_ALL = """
import importlib, pkgutil, sys
for name in sys.argv[1:]:
    package = importlib.import_module(name)
    for module in pkgutil.walk_packages(package.__path__, name + "."):
        importlib.import_module(module.name)
print(sys.modules["bot"].__file__)
"""
TERMINAL = {"completed", "failed", "archived"}


class SmokeFailure(Exception):
    """A step of the installed Copydesk did not do what it should."""


def main() -> int:
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="copydesk-wheel-") as tmp:
            smoke(Path(tmp))
    except (SmokeFailure, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        print(f"wheel smoke: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"wheel smoke: passed in {time.monotonic() - started:.0f} s", flush=True)
    return 0


def smoke(tmp: Path) -> None:
    wheel = build_wheel(tmp)
    venv = install(tmp, wheel)
    check_installed(venv)
    with ExitStack() as stack:
        redis_url = stack.enter_context(redis_server(tmp))
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        env = child_env(redis_url=redis_url, data_dir=tmp / "data", base_url=base_url)
        web = stack.enter_context(
            process(
                [str(venv / "bin" / "copydesk"), "web", "--port", str(port), "--workers", "1"],
                env,
                tmp,
                tmp / "web.log",
            )
        )
        wait_for(lambda: http("GET", f"{base_url}/healthz"), 60, "/healthz", web, tmp / "web.log")
        step("copydesk web answers /healthz")
        check_registration_page(venv, env, tmp)
        run_one_job(venv, env, tmp, base_url)


def step(text: str) -> None:
    print(f"wheel smoke: {text}", flush=True)


def build_wheel(tmp: Path) -> Path:
    """The wheel, built from a copy of the sources (the work tree gets no build/ or egg-info of it)."""
    source = tmp / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, source / name)
    # The build backend comes from the lock, installed with the development venv running this script.
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp / "dist"),
            str(source),
        ]
    )
    (wheel,) = (tmp / "dist").glob("copydesk-*.whl")
    step(f"built {wheel.name}")
    return wheel


def install(tmp: Path, wheel: Path) -> Path:
    """A fresh venv with the runtime lock (hashes required), then the wheel on top, resolving nothing."""
    venv = tmp / "venv"
    run([os.environ.get("PYTHON", "python3"), "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    run([*pip, "install", "--quiet", "--require-hashes", "-r", str(ROOT / "requirements.lock")])
    run([*pip, "install", "--quiet", "--no-deps", str(wheel)])
    run([*pip, "check"])  # every dependency the wheel declares is in the runtime lock
    step("installed the wheel into a fresh venv from requirements.lock")
    return venv


def check_installed(venv: Path) -> None:
    """Every module imports from the install, and every file the code reads besides itself was installed."""
    out = run([str(venv / "bin" / "python"), "-c", IMPORT_ALL, *PACKAGES], cwd=venv)
    site = Path(out.strip().splitlines()[-1]).parent.parent
    if ROOT in site.parents or site == ROOT:
        raise SmokeFailure(f"the modules were imported from the work tree ({site}), not the install")
    data = [
        path.relative_to(ROOT)
        for package in PACKAGES
        for path in (ROOT / package).rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc")
    ]
    missing = [str(path) for path in data if not (site / path).is_file()]
    if missing:
        raise SmokeFailure(f"package data missing from the wheel: {missing}; list it in pyproject.toml")
    step(f"every module imports and all {len(data)} package data files are installed")


def check_registration_page(venv: Path, env: dict[str, str], tmp: Path) -> None:
    """The GitHub registration page renders the App manifest (app.yml) shipped in the wheel."""
    link = json.loads(run([str(venv / "bin" / "copydesk"), "github", "register-link", "--json"], env=env, cwd=tmp))
    status, body = http("GET", link["url"])
    if status != 200 or "/github/webhooks" not in body:
        raise SmokeFailure(f"the GitHub registration page answered {status}: {body[:300]}")
    step("the GitHub registration page renders the packaged app.yml")


def run_one_job(venv: Path, env: dict[str, str], tmp: Path, base_url: str) -> None:
    copydesk = str(venv / "bin" / "copydesk")
    files_and_prompt = run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import json; from bot import demo_repo; print(json.dumps([demo_repo.FILES, demo_repo.PROMPT]))",
        ],
        cwd=tmp,
    )
    files, prompt = json.loads(files_and_prompt)
    repo = sample_repository(tmp, files)
    project = json.loads(
        run([copydesk, "project", "add", "--repository", str(repo), "--ref", "main", "--json"], env=env, cwd=tmp)
    )
    key = json.loads(run([copydesk, "key", "create", "--account", "local", "--json"], env=env, cwd=tmp))["key"]
    headers = {"Authorization": f"Bearer {key}"}
    status, body = http("POST", f"{base_url}/v2/agent/{project['id']}/job", {"prompt": prompt}, headers)
    if status != 201:
        raise SmokeFailure(f"creating a job answered {status}: {body[:300]}")
    job_url = f"{base_url}/v2/agent/{project['id']}/job/{json.loads(body)['id']}"
    run([copydesk, "worker", "--burst"], env=env, cwd=tmp, timeout=300)
    job = json.loads(http("GET", job_url, headers=headers)[1])
    if job["status"] != "completed" or not job["prLink"]:
        raise SmokeFailure(f"the job ended {job['status']} (error {job['error']}); see {tmp}/web.log")
    changed = run(["git", f"--git-dir={repo}", "diff", "--stat", "main", job["branch"]])
    step(f"copydesk worker ran the job to completed with a pull request:\n{changed.rstrip()}")


def sample_repository(tmp: Path, files: dict[str, str]) -> Path:
    work, bare = tmp / "sample", tmp / "sample.git"
    run(["git", "init", "-q", "-b", "main", str(work)])
    for name, content in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(content)
    run(["git", "add", "-A"], cwd=work)
    run(["git", "-c", "user.name=Smoke", "-c", "user.email=smoke@example.test", "commit", "-q", "-m", "Docs"], cwd=work)
    run(["git", "clone", "-q", "--bare", str(work), str(bare)])
    return bare


def child_env(**settings: object) -> dict[str, str]:
    """This environment without anything that could import the work tree, pointed at the smoke's Redis."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("COPYDESK_", "PYTHON", "VIRTUAL_ENV"))
        and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_APP_ID")
    }
    env.update({f"COPYDESK_{name.upper()}": str(value) for name, value in settings.items()})
    env["COPYDESK_MODEL"] = "scripted:demo"
    return env


@contextmanager
def redis_server(tmp: Path) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SmokeFailure("redis-server is not installed")
    port = free_port()
    with process(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        os.environ.copy(),
        tmp,
        tmp / "redis.log",
    ) as proc:
        url = f"redis://127.0.0.1:{port}/0"
        wait_for(
            lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close(),
            20,
            "redis-server",
            proc,
            tmp / "redis.log",
        )
        yield url


@contextmanager
def process(argv: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> Iterator[subprocess.Popen]:
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_for(probe: Callable[[], object], seconds: float, what: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            probe()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text("utf-8", "replace")[-3000:]
                state = f"exited {proc.returncode}" if proc.poll() is not None else f"not up within {seconds:.0f} s"
                raise SmokeFailure(f"{what}: {state}; its log ends:\n{tail}") from None
            time.sleep(0.2)


def http(method: str, url: str, body: dict | None = None, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """(status, body) of one request; connection errors raise OSError (URLError is one)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={**({"Content-Type": "application/json"} if data else {}), **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def run(argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 600) -> str:
    """Run a command; its stdout, or CalledProcessError with its stderr shown."""
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise subprocess.CalledProcessError(proc.returncode, argv[:4])
    return proc.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
