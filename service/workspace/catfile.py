"""A persistent `git cat-file --batch` process that reads objects by id."""

import subprocess
import threading
from pathlib import Path

from service.workspace.git import Git, GitError
from service.workspace.proc import popen


class CatFile:
    """Reads objects from one repository through a single long-lived `git cat-file --batch`."""

    def __init__(self, git: Git, git_dir: Path | str) -> None:
        self._git, self._git_dir = git, git_dir
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> "CatFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def read(self, oid: str) -> tuple[str, bytes]:
        """Return `(type, content)` of object `oid` (an id or revision); raise KeyError if it is missing."""
        with self._lock:
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(oid.encode("ascii") + b"\n")
                proc.stdin.flush()
                header = proc.stdout.readline()
            except BrokenPipeError:
                header = b""
            if not header:
                self._close_locked()
                raise GitError(["cat-file", "--batch"], -1, "git cat-file --batch stopped unexpectedly")
            fields = header.split()
            if len(fields) != 3:
                raise KeyError(oid)
            size = int(fields[2])
            data = proc.stdout.read(size + 1)[:size]
            return fields[1].decode("ascii"), data

    def close(self) -> None:
        """Stop the process if it is running."""
        with self._lock:
            self._close_locked()

    def _start(self) -> subprocess.Popen:
        if self._proc is None:
            self._proc = popen(self._git, "cat-file", "--batch", git_dir=self._git_dir, stdin=subprocess.PIPE)
        return self._proc

    def _close_locked(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
