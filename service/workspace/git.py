"""Runs the git CLI with system and global config ignored and secrets kept off argv, disk and logs."""

import os
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Settings every git call gets: nothing in the repository or the machine may run code or prompt.
_SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.askPass=",
    "credential.helper=",
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.detachedHead=false",
    "init.defaultBranch=main",
    # Only the transports Copydesk uses: local bare repositories and HTTPS (plain HTTP for test servers).
    "protocol.allow=never",
    "protocol.file.allow=always",
    "protocol.https.allow=always",
    "protocol.http.allow=always",
)


@dataclass(frozen=True)
class Remote:
    """Where a repository lives and the per-command config that authenticates to it.

    `config` (e.g. an `http.extraHeader`) is handed to git through `GIT_CONFIG_*` environment
    variables, so it never appears in a process listing, a `.git/config` or a log line.
    `config_source`, when given, is called for every git command instead, so credentials that
    expire during a long run (installation tokens) are fresh for each fetch and push.
    `trusted` marks a repository on this machine that Copydesk was configured with (a local project): git opens it
    although another user owns its files (see `Git.pack_program`).
    """

    url: str
    config: Mapping[str, str] = field(default_factory=dict, repr=False)
    config_source: Callable[[], Mapping[str, str]] | None = field(default=None, repr=False, compare=False)
    trusted: bool = False

    def current_config(self) -> Mapping[str, str]:
        """The config for the git command about to run."""
        return self.config_source() if self.config_source is not None else self.config

    def __repr__(self) -> str:
        hidden = "from source" if self.config_source is not None else f"{len(self.config)} hidden"
        return f"Remote(url={self.url!r}, config=<{hidden}>)"


class GitError(Exception):
    """A git command that exited non-zero."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args[:3])} exited {returncode}: {stderr.strip()[:500]}")
        self.git_args = list(args)
        self.returncode = returncode
        self.stderr = stderr


class Git:
    """A hardened git command runner."""

    def __init__(self, binary: str = "git") -> None:
        self.binary = binary
        self._base_env = _base_env()

    def env(self, remote: Remote | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for one git command, with the remote's secret config if any."""
        env = dict(self._base_env)
        config = remote.current_config() if remote is not None else {}
        if config:
            env["GIT_CONFIG_COUNT"] = str(len(config))
            for i, (key, value) in enumerate(config.items()):
                env[f"GIT_CONFIG_KEY_{i}"] = key
                env[f"GIT_CONFIG_VALUE_{i}"] = value
        if extra:
            env.update(extra)
        return env

    def pack_program(self, remote: Remote, program: str) -> list[str]:
        """`--upload-pack=...` (fetch, ls-remote) or `--receive-pack=...` (push) for `remote`: for a trusted local
        repository, the git that serves it gets `safe.directory` set to exactly that path, so a repository mounted
        with another owner is not refused as of "dubious ownership". Git clears the command line's `-c` before it
        starts the serving side of a local transport, so this is the only way to reach it; never `*`."""
        if not remote.trusted:
            return []
        serve = f"{shlex.quote(self.binary)} -c {shlex.quote('safe.directory=' + remote.url)} {program}"
        return [f"--{program}={serve}"]

    def argv(self, *args: str, git_dir: Path | str | None = None) -> list[str]:
        """The command line for `git ARGS` with the hardening config (and `--git-dir` when given)."""
        argv = [self.binary]
        for item in _SAFE_CONFIG:
            argv += ["-c", item]
        if git_dir is not None:
            argv.append(f"--git-dir={git_dir}")
        return argv + list(args)

    def run(
        self,
        *args: str,
        git_dir: Path | str | None = None,
        cwd: Path | str | None = None,
        input: bytes | None = None,
        remote: Remote | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        timeout: float | None = 600,
    ) -> subprocess.CompletedProcess:
        """Run `git ARGS`; raise GitError on a non-zero exit when `check` (stdout is bytes)."""
        proc = subprocess.run(
            self.argv(*args, git_dir=git_dir),
            cwd=cwd,
            input=input,
            capture_output=True,
            env=self.env(remote, env),
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise GitError(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
        return proc

    def out(self, *args: str, **kwargs) -> str:
        """Run git and return its stdout as stripped text."""
        return self.run(*args, **kwargs).stdout.decode("utf-8", "replace").strip()


def _base_env() -> dict[str, str]:
    keep = ("PATH", "TMPDIR", "LANG", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="/bin/false",
        SSH_ASKPASS="/bin/false",
        GCM_INTERACTIVE="never",
        HOME=os.devnull,
        LC_ALL="C",
    )
    return env
