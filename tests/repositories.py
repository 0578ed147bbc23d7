"""Real bare repositories with workspaces over them, for the agent and workspace tests."""

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from service.agent.model import ToolCall
from service.agent.tools import ToolExecutor
from service.workspace.git import Git, Remote
from service.workspace.mirror import Mirror, MirrorStore
from service.workspace.overlay import Workspace
from tests.conftest import commit_files

# A commit that exists nowhere: a submodule entry only records an id.
SUBMODULE_SHA = "1234567890abcdef1234567890abcdef12345678"


@dataclass
class Repository:
    """A bare repository fetched into a mirror; each `open()` is a fresh workspace over its `main`."""

    bare: Path
    mirror: Mirror
    sha: str

    def open(self) -> Workspace:
        return self.mirror.open(self.sha)


def make_repository(
    git: Git,
    root: Path,
    files: dict[str, str | bytes],
    *,
    symlinks: dict[str, str] | None = None,
    submodules: list[str] | None = None,
) -> Repository:
    """Create `root/origin.git` holding `files`, symlink entries (path -> target) and submodule entries."""
    bare = root / "origin.git"
    git.run("init", "--bare", "-q", str(bare))
    git.run("symbolic-ref", "HEAD", "refs/heads/main", git_dir=bare)
    commit_files(git, bare, files, message="Initial docs")
    if symlinks or submodules:
        _add_special_entries(git, bare, symlinks or {}, submodules or [])
    remote = Remote(str(bare))
    mirror = MirrorStore(root / "mirrors", git).mirror(remote)
    sha = mirror.fetch(remote, {"refs/heads/main": "refs/test/base"})["refs/test/base"]
    return Repository(bare, mirror, sha)


def call(executor: ToolExecutor, name: str, **arguments):
    """Run one tool call through the executor, as the loop does."""
    return executor.execute(ToolCall(f"call_{name}", name, arguments))


def add_entries(git, bare, entries: dict[str, tuple[str, bytes | str]], branch: str = "main") -> str:
    """Commit entries with explicit modes (`path -> (mode, blob content or commit id)`) onto `branch`."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "GIT_INDEX_FILE": os.path.join(tmp, "index"),
            "GIT_AUTHOR_NAME": "T",
            "GIT_AUTHOR_EMAIL": "t@x",
            "GIT_COMMITTER_NAME": "T",
            "GIT_COMMITTER_EMAIL": "t@x",
        }
        head = git.out("rev-parse", f"refs/heads/{branch}", git_dir=bare)
        git.run("read-tree", head, git_dir=bare, env=env)
        for path, (mode, content) in entries.items():
            data = content if isinstance(content, bytes) else content.encode()
            oid = content if mode == "160000" else git.out("hash-object", "-w", "--stdin", git_dir=bare, input=data)
            git.run("update-index", "--add", "--cacheinfo", f"{mode},{oid},{path}", git_dir=bare, env=env)
        tree = git.out("write-tree", git_dir=bare, env=env)
        sha = git.out("commit-tree", tree, "-p", head, "-m", "Special entries", git_dir=bare, env=env)
        git.run("update-ref", f"refs/heads/{branch}", sha, git_dir=bare)
        return sha


def _add_special_entries(git: Git, bare: Path, symlinks: dict[str, str], submodules: list[str]) -> None:
    # commit_files only writes regular files; symlinks (120000) and gitlinks (160000) need their own modes.
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "GIT_INDEX_FILE": os.path.join(tmp, "index"),
            "GIT_AUTHOR_NAME": "T",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "T",
            "GIT_COMMITTER_EMAIL": "t@example.com",
        }
        head = git.out("rev-parse", "refs/heads/main", git_dir=bare)
        git.run("read-tree", head, git_dir=bare, env=env)
        for path, target in symlinks.items():
            sha = git.out("hash-object", "-w", "--stdin", git_dir=bare, input=target.encode())
            git.run("update-index", "--add", "--cacheinfo", f"120000,{sha},{path}", git_dir=bare, env=env)
        for path in submodules:
            git.run("update-index", "--add", "--cacheinfo", f"160000,{SUBMODULE_SHA},{path}", git_dir=bare, env=env)
        tree = git.out("write-tree", git_dir=bare, env=env)
        sha = git.out("commit-tree", tree, "-p", head, "-m", "Links", git_dir=bare, env=env)
        git.run("update-ref", "refs/heads/main", sha, git_dir=bare)
