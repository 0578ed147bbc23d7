"""A pytest plugin: a test that leaves a child process of the pytest process running fails, naming its command."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

EXIT_GRACE_SECONDS = 5.0  # a child that was told to stop may take this long to go


def live_children(parent: int) -> dict[int, str]:
    """The running (not zombie) child processes of `parent`, pid -> command line, read from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            if int(fields.get("PPid", "0")) != parent or fields.get("State", "").startswith(("Z", "X")):
                continue
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue  # it ended while being read
        children[int(entry)] = command.strip()
    return children


def stop(proc: subprocess.Popen, timeout: float = 10) -> None:
    """SIGTERM `proc`, then SIGKILL it if it has not ended after `timeout` seconds; wait for it either way."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _kill(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def leaked_children(before: set[int], grace: float = EXIT_GRACE_SECONDS) -> dict[int, str]:
    """Children of this process not in `before` that are still running after `grace` seconds, pid -> command
    line; they are killed, so the next test starts clean."""
    deadline = time.monotonic() + grace
    while leaked := {pid: cmd for pid, cmd in live_children(os.getpid()).items() if pid not in before}:
        if time.monotonic() >= deadline:
            _kill(leaked)
            return leaked
        time.sleep(0.05)
    return {}


@pytest.fixture(autouse=True)
def no_leaked_processes():
    """Fail the test if a child process it started is still running shortly after it ended."""
    before = set(live_children(os.getpid()))
    yield
    if leaked := leaked_children(before):
        pytest.fail(
            "the test left child processes running: "
            + "; ".join(f"pid {pid}: {cmd[:300]}" for pid, cmd in sorted(leaked.items())),
            pytrace=False,
        )
