"""The guard that fails a test leaving a child process running sees such a child, and only such a child."""

import os
import subprocess

from tests.process_guard import leaked_children, live_children


def test_a_child_left_running_is_reported_with_its_command_line_and_killed():
    before = set(live_children(os.getpid()))
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert leaked_children(before, grace=0.2) == {child.pid: "sleep 30"}
        assert child.wait(timeout=10) == -9
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)


def test_a_child_that_ends_within_the_grace_is_not_a_leak():
    before = set(live_children(os.getpid()))
    child = subprocess.Popen(["sleep", "0.2"])
    assert leaked_children(before, grace=10) == {}
    assert child.wait(timeout=10) == 0
