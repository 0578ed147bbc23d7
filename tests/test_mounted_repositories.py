"""Repositories mounted into a container with another owner: Copydesk trusts exactly the registered path (git's
`safe.directory`, per command), and `project add` refuses a repository its user cannot read and write."""

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from bot.cli import main
from service.workspace.git import Git, GitError, Remote
from tests.conftest import DOCS, commit_files
from tests.flow_scripts import FAQ, finish, show

OWNER = 12345  # owns the mounted repositories
STRANGER = 12346  # another user, neither owner nor root

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="changing file owners and users needs root")


def chown_tree(path: Path, uid: int) -> None:
    os.chown(path, uid, uid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


def test_a_job_runs_on_a_bare_repository_owned_by_another_user(stack):
    chown_tree(stack.repo, OWNER)
    stack.script([FAQ, finish()])
    job = stack.create("Add an FAQ page").json()

    stack.drain()

    done = stack.job(job["id"])
    assert done["status"] == "completed", done
    assert show(stack.repo, done["branch"], "docs/faq.md") == "# FAQ\n\nAsk away."


def test_git_still_refuses_the_repository_to_anything_but_its_own_remote(stack, tmp_path):
    """The trust is the registered path's, given per command: a plain fetch of the same repository is refused."""
    chown_tree(stack.repo, OWNER)
    git = Git()
    mirror = tmp_path / "other.git"
    git.run("init", "--bare", "-q", str(mirror))
    with pytest.raises(GitError, match="dubious ownership"):
        git.run("fetch", "-q", str(stack.repo), "main:refs/heads/main", git_dir=mirror)
    remote = Remote(url=str(stack.repo), trusted=True)
    git.run(
        "fetch", "-q", *git.pack_program(remote, "upload-pack"), str(stack.repo), "main:refs/heads/main", git_dir=mirror
    )
    assert git.pack_program(Remote(url=str(stack.repo)), "upload-pack") == []
    assert "safe.directory=*" not in " ".join(git.pack_program(remote, "upload-pack"))


@pytest.fixture
def shared_dir():
    """A folder every user may enter (pytest's own temporary folders are root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="copydesk-mounted-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def run_as(uid: int, argv: list[str]) -> tuple[int, str, str]:
    """`copydesk ARGV` through `main`, in a forked child that runs as `uid`: (exit status, stdout, stderr)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 70
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
            os.write(write, json.dumps([code, out.getvalue(), err.getvalue()]).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        raw = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0 and raw, f"the child running as uid {uid} failed"
    code, out, err = json.loads(raw)
    return code, out, err


def test_project_add_refuses_a_repository_its_user_cannot_write(shared_dir, redis_url, monkeypatch, git):
    repo = shared_dir / "docs.git"
    git.run("init", "--bare", "-q", str(repo))
    commit_files(git, repo, DOCS, branch="main", message="Initial docs")
    chown_tree(repo, OWNER)
    data = shared_dir / "data"
    data.mkdir(mode=0o777)
    data.chmod(0o777)
    monkeypatch.setenv("COPYDESK_REDIS_URL", redis_url)
    monkeypatch.setenv("COPYDESK_DATA_DIR", str(data))
    add = ["project", "add", "--repository", str(repo), "--ref", "main", "--json"]

    code, out, err = run_as(STRANGER, add)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"{repo} is not usable by this user (uid {STRANGER})" in err, err
    assert f"chown -R {STRANGER}:{STRANGER} {repo}" in err

    code, out, err = run_as(OWNER, add)  # the user the worker runs as
    assert code == 0, err
    assert json.loads(out)["repository"] == str(repo)

    repo.chmod(0o700)  # not even readable by others: said so, not "not a git repository"
    code, _, err = run_as(STRANGER, add)
    assert code == 2 and f"it cannot read, write and enter {repo}." in err, err
    repo.chmod(0o755)

    (repo / "objects" / "pack").chmod(0o555)  # one folder a push writes to, read-only even for its owner
    code, _, err = run_as(OWNER, add)
    assert code == 2 and f"cannot read, write and enter {repo / 'objects' / 'pack'}" in err, err
