"""Starts streamed or long-lived git processes with the same hardening as `Git.run`."""

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from service.workspace.git import Git


def popen(
    git: Git,
    *args: str,
    git_dir: Path | str,
    env: Mapping[str, str] | None = None,
    stdin: int | IO | None = subprocess.DEVNULL,
    stdout: int | IO | None = subprocess.PIPE,
    stderr: int | IO | None = subprocess.DEVNULL,
) -> subprocess.Popen:
    """Start `git ARGS` on `git_dir` with the hardened config and environment; the caller owns the process."""
    return subprocess.Popen(
        git.argv(*args, git_dir=git_dir), stdin=stdin, stdout=stdout, stderr=stderr, env=git.env(None, env)
    )
