"""Real `copydesk worker` processes for fault tests: start, find the work horse, freeze, kill, stop."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


class WorkerProcess:
    """One `python -m bot.cli worker *args` (e.g. `--name w1`) with its own environment; its output goes to a log
    file."""

    def __init__(self, env: dict[str, str], log_path: Path, *args: str) -> None:
        self.log_path = log_path
        self._terminated = False
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "worker", *args],
            env={**os.environ, **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def __enter__(self) -> "WorkerProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stopped(self) -> bool:
        """Whether the worker process is stopped (SIGSTOP, as a freeze fault point does to itself)."""
        try:
            return Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
        except OSError:
            return False

    def horse_pid(self) -> int | None:
        """The work horse running a job right now, if any: the child forked without an exec that leads its own
        process group (the worker's other children are commands such as `git version`, and RQ's scheduler, a
        fork that stays in the worker's group)."""
        try:
            children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
            own = Path(f"/proc/{self.pid}/cmdline").read_bytes()
        except OSError:
            return None
        for child in children:
            try:
                if Path(f"/proc/{child}/cmdline").read_bytes() == own and os.getpgid(int(child)) == int(child):
                    return int(child)
            except OSError:  # ProcessLookupError included: the child ended meanwhile
                continue
        return None

    def wait_for_horse(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while (pid := self.horse_pid()) is None:
            assert time.monotonic() < deadline, f"no work horse appeared; log:\n{self.log()}"
            time.sleep(0.05)
        return pid

    def freeze(self) -> list[int]:
        """SIGSTOP the worker, its horse and everything the horse started (its process group)."""
        frozen = [self.pid]
        os.kill(self.pid, signal.SIGSTOP)
        horse = self.horse_pid()
        if horse is not None:
            os.killpg(horse, signal.SIGSTOP)
            frozen.append(horse)
        return frozen

    def thaw(self, frozen: list[int]) -> None:
        for pid in reversed(frozen):
            try:
                (os.killpg if pid != self.pid else os.kill)(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def terminate(self) -> None:
        """SIGTERM (RQ's warm shutdown) without waiting, once: a second would be RQ's cold shutdown."""
        if self.alive() and not self._terminated:
            self.proc.send_signal(signal.SIGTERM)
            self._terminated = True

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM (unless `terminate` sent it), then SIGKILL after `timeout`; returns the exit code (again when it
        has already stopped)."""
        if self.alive():
            self.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL the worker and every child it has (its horse, RQ's scheduler): none may outlive the test."""
        for pid in [self.pid, *self._children()]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=30)

    def _children(self) -> list[int]:
        try:
            return [int(c) for c in Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()]
        except OSError:
            return []

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-6000:]
