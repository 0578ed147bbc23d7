"""Shared fixtures: a real redis-server per test session, real git repositories in temp folders."""

import contextlib
import socket
from pathlib import Path

import pytest
import redis

from service.workspace.git import Git

# The GitHub emulator's fixtures (`github`, `github_app`), the scripted GitHub's (`scripted_github_server`),
# the docs-site fixtures (`sites`, `open_site`) and the dashboard's (`dash`, `chromium`, `browser_page`).
# Fixtures shared between test modules are defined once, in these plugins: the model stand-in (`standin`), the
# GitHub App bot (`bot`, `installed`, `pull`), worker processes (`workers`), hostile projects (`register`).
pytest_plugins = [
    "tests.github_fixtures",
    "tests.scripted_github",
    "tests.docsite_fixtures",
    "tests.dashboard_fixtures",
    "tests.model_fixtures",
    "tests.github_event_fixtures",
    "tests.worker_fixtures",
    "tests.hostile_fixtures",
    "tests.process_guard",
    "tests.scheduling",
]


def pytest_configure(config) -> None:
    """Compile the project's bytecode once per run (in the controller, before xdist's workers start): where
    PYTHONDONTWRITEBYTECODE is set nothing else writes it, and every web, worker and CLI process a test starts
    (hundreds) compiled some 170 modules again, about 0.3 s each. Files whose bytecode is current are skipped."""
    import compileall

    if not hasattr(config, "workerinput"):
        here = Path(__file__).resolve().parent
        for package in ("bot", "service"):
            compileall.compile_dir(here.parent / package, quiet=2)
        compileall.compile_dir(here, maxlevels=0, quiet=2)  # the helpers, not the data folders' files


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """Start a private redis-server on a free port for the whole session; yields its base URL."""
    from tests.redis_servers import NO_PERSISTENCE, RedisStartError, running_redis

    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(running_redis(tmp_path_factory.mktemp("redis"), *NO_PERSISTENCE))
        except RedisStartError as exc:
            pytest.fail(str(exc))
        yield url


@pytest.fixture
def redis_url(redis_server):
    """The session server's database 0, emptied before and after the test (a process a test leaves behind is
    caught by `tests.process_guard`, not hidden in a database of its own)."""
    url = f"{redis_server}/0"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


@pytest.fixture
def redis_client(redis_url):
    client = redis.Redis.from_url(url=redis_url)
    yield client
    client.close()


@pytest.fixture
def git():
    return Git()


def commit_files(
    git: Git,
    bare: Path,
    files: dict[str, str | bytes | None],
    *,
    branch: str = "main",
    message: str = "Update",
    parent: str | None = "auto",
) -> str:
    """Commit `files` (path -> content, None deletes) onto `branch` of a bare repository; return the sha.

    Builds the commit with plumbing, like a person pushing from elsewhere would produce one.
    """
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        index_env = {
            "GIT_INDEX_FILE": os.path.join(tmp, "index"),
            "GIT_AUTHOR_NAME": "Test Person",
            "GIT_AUTHOR_EMAIL": "person@example.com",
            "GIT_COMMITTER_NAME": "Test Person",
            "GIT_COMMITTER_EMAIL": "person@example.com",
        }
        head = None
        if parent == "auto":
            proc = git.run("rev-parse", "--verify", "-q", f"refs/heads/{branch}", git_dir=bare, check=False)
            head = proc.stdout.decode().strip() or None
        elif parent:
            head = parent
        if head:
            git.run("read-tree", head, git_dir=bare, env=index_env)
        for path, content in files.items():
            if content is None:
                # --force-remove needs a work tree; an index-info line with mode 0 removes the entry.
                git.run(
                    "update-index",
                    "--index-info",
                    git_dir=bare,
                    env=index_env,
                    input=f"0 {'0' * 40}\t{path}\n".encode(),
                )
                continue
            data = content.encode() if isinstance(content, str) else content
            sha = git.out("hash-object", "-w", "--stdin", git_dir=bare, input=data)
            git.run("update-index", "--add", "--cacheinfo", f"100644,{sha},{path}", git_dir=bare, env=index_env)
        tree = git.out("write-tree", git_dir=bare, env=index_env)
        args = ["commit-tree", tree, "-m", message] + (["-p", head] if head else [])
        sha = git.out(*args, git_dir=bare, env=index_env)
        git.run("update-ref", f"refs/heads/{branch}", sha, git_dir=bare)
        return sha


@pytest.fixture
def fsck_at_teardown(git):
    """Call with a bare repository: on teardown every commit Copydesk made in it must pass `git fsck --strict`."""
    from tests.fsck_check import assert_copydesk_commits_pass_fsck

    repos: list[Path] = []
    yield repos.append
    for bare in dict.fromkeys(repos):
        assert_copydesk_commits_pass_fsck(bare, git)


@pytest.fixture
def make_repo(tmp_path, git, fsck_at_teardown):
    """Factory: a bare repository at tmp/<name>.git whose `main` holds the given files. On teardown every
    commit Copydesk made in it must pass `git fsck --strict`."""

    def make(files: dict[str, str | bytes], name: str = "docs", branch: str = "main") -> Path:
        bare = tmp_path / f"{name}.git"
        git.run("init", "--bare", "-q", str(bare))
        git.run("symbolic-ref", "HEAD", f"refs/heads/{branch}", git_dir=bare)
        commit_files(git, bare, files, branch=branch, message="Initial docs")
        fsck_at_teardown(bare)
        return bare

    yield make


DOCS = {
    "README.md": "# Widgets\n\nSee [the docs](docs/index.md).\n",
    "docs/index.md": "# Widgets\n\n- [Install](install.md)\n",
    "docs/install.md": "# Install\n\nRun `pip install widgets`.\n",
}


@pytest.fixture
def openapi_validator():
    from service.api.openapi import openapi_document
    from tests.openapi_check import ResponseValidator

    return ResponseValidator(openapi_document("http://127.0.0.1", ("scripted:x",)))


@pytest.fixture
def stack_factory(redis_url, tmp_path, make_repo, monkeypatch, openapi_validator):
    """Factory: the whole service on one machine (web server, store, local project, key) with settings
    overrides; the default model is a scripted one whose runs each test sets. On teardown every commit
    Copydesk made in the project's repository must pass `git fsck --strict` (see `make_repo`)."""

    from bot import context
    from bot.app import create_app
    from service.settings import Settings
    from tests.harness import CheckedSession, LiveServer, Stack

    with contextlib.ExitStack() as running:

        def build(**overrides) -> Stack:
            script_path = tmp_path / "script.json"
            script_path.write_text('{"runs": []}')
            server = running.enter_context(LiveServer())  # bound first: its URL goes into the settings
            settings = Settings(
                redis_url=redis_url,
                data_dir=tmp_path / "data",
                base_url=server.url,
                model=f"scripted:{script_path}",
            )
            settings = settings.with_overrides(**overrides)
            ctx = context.build(settings)
            repo = make_repo(DOCS)
            project = ctx.local.register(ctx.services.projects, path=repo, ref="main")
            _key, plaintext = ctx.services.keys.create(account="local", name="tests")
            server.mount(create_app(settings, ctx))
            api = CheckedSession(server.url, openapi_validator)
            api.headers["Authorization"] = f"Bearer {plaintext}"
            built = Stack(
                settings=settings,
                ctx=ctx,
                url=server.url,
                repo=repo,
                project_id=project.id,
                key=plaintext,
                api=api,
                script_path=script_path,
            )
            # The worker's task builds its own context from the environment, as in production.
            for name, value in built.env().items():
                monkeypatch.setenv(name, value)
            return built

        yield build


@pytest.fixture
def stack(stack_factory):
    """The whole service on one machine with a scripted model."""
    return stack_factory()


@pytest.fixture
def workspace(repository):
    """A fresh workspace over the test module's `repository` fixture."""
    with repository.open() as opened:
        yield opened


@pytest.fixture
def open_workspace(tmp_path, git):
    """Factory: a real Workspace over a new bare repository (same arguments as `make_repository`)."""
    from tests.repositories import make_repository

    opened = []

    def open_(files: dict[str, str | bytes], **entries):
        workspace = make_repository(git, tmp_path / f"repo{len(opened)}", files, **entries).open()
        opened.append(workspace)
        return workspace

    yield open_
    for workspace in opened:
        workspace.close()
