"""A persistent `git cat-file --batch-command` process that reads objects (or their sizes) by id, and streams."""

import subprocess
import threading
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from service.workspace.git import Git, GitError
from service.workspace.proc import popen

_CHUNK = 1 << 20


class ObjectTooLarge(Exception):
    """An object larger than the caller's limit; it was not read into memory."""

    def __init__(self, oid: str, size: int) -> None:
        super().__init__(f"object {oid} has {size} bytes")
        self.oid, self.size = oid, size


class CatFile:
    """Reads objects from one repository through a single long-lived `git cat-file --batch-command`."""

    def __init__(self, git: Git, git_dir: Path | str) -> None:
        self._git, self._git_dir = git, git_dir
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> "CatFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def read(self, oid: str, *, max_size: int | None = None) -> tuple[str, bytes]:
        """Return `(type, content)` of object `oid` (an id or revision); raise KeyError if it is missing.

        With `max_size`, a larger object raises ObjectTooLarge without being read.
        """
        with self._lock, self._in_step():
            if max_size is not None:
                _, size = self._ask("info", oid)
                if size > max_size:
                    raise ObjectTooLarge(oid, size)
            kind, size = self._ask("contents", oid)
            assert self._proc is not None and self._proc.stdout is not None
            data = self._proc.stdout.read(size + 1)[:size]
            return kind, data

    def size(self, oid: str) -> tuple[str, int]:
        """Return `(type, size in bytes)` of object `oid` without reading it; KeyError if it is missing."""
        with self._lock, self._in_step():
            return self._ask("info", oid)

    @contextmanager
    def _in_step(self) -> Iterator[None]:
        """Stop the process when a request is cut off midway (a stopped run, a tool past its time budget):
        its output is out of step with the requests from then on; the next request starts a fresh one."""
        try:
            yield
        except (KeyError, ObjectTooLarge):
            raise  # answered whole: still in step
        except BaseException:
            self._close_locked()
            raise

    def _ask(self, command: str, oid: str) -> tuple[str, int]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(f"{command} {oid}\n".encode("ascii"))
            proc.stdin.flush()
            header = proc.stdout.readline()
        except BrokenPipeError:
            header = b""
        if not header:
            self._close_locked()
            raise GitError(["cat-file", "--batch-command"], -1, "git cat-file --batch-command stopped unexpectedly")
        fields = header.split()
        if len(fields) != 3:
            raise KeyError(oid)
        return fields[1].decode("ascii"), int(fields[2])

    def close(self) -> None:
        """Stop the process if it is running."""
        with self._lock:
            self._close_locked()

    def _start(self) -> subprocess.Popen:
        if self._proc is None:
            self._proc = popen(self._git, "cat-file", "--batch-command", git_dir=self._git_dir, stdin=subprocess.PIPE)
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


def stream_blobs(
    git: Git, git_dir: Path | str, oids: Iterable[str], *, max_size: int
) -> Generator[tuple[str, bytes | None], None, None]:
    """(oid, content) of each blob in order, through one `git cat-file --batch` of its own; content is None
    for an object larger than `max_size` (skipped in chunks, never held whole). Stopping early ends git."""
    proc = popen(git, "cat-file", "--batch", git_dir=git_dir, stdin=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def feed() -> None:
        # Written from a thread so git never blocks on a full pipe while this side reads.
        try:
            for oid in oids:
                stdin.write(oid.encode("ascii") + b"\n")
            stdin.close()
        except (BrokenPipeError, ValueError, OSError):
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        while True:
            header = proc.stdout.readline()
            if not header:
                return
            fields = header.split()
            if len(fields) != 3:
                continue  # missing object
            oid, size = fields[0].decode("ascii"), int(fields[2])
            if size > max_size:
                _skip(proc.stdout, size + 1)
                yield oid, None
            else:
                yield oid, proc.stdout.read(size + 1)[:size]
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        writer.join(timeout=5)


def _skip(stream, count: int) -> None:
    while count > 0:
        got = stream.read(min(count, _CHUNK))
        if not got:
            return
        count -= len(got)
