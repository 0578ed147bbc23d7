"""A run's stop reaches it wherever it is: a blocking socket read, a subprocess, Python code that swallows
exceptions, a tool past its own budget; outside its interruptible stretches it waits for the next check."""

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from service.runstop import RunStop, RunStopped, StopReason, ToolTimedOut, discard_early_stop, request_current


def test_the_deadline_cuts_a_blocking_socket_read_in_the_main_thread():
    stop = RunStop(deadline=time.monotonic() + 0.3)
    left, right = socket.socketpair()
    started = time.monotonic()
    with left, right, stop.watch([], tick_seconds=0.05):
        with pytest.raises(RunStopped):
            with stop.interruptible():
                left.recv(1)  # a model call waiting for its answer
    assert stop.reason is StopReason.DEADLINE
    assert time.monotonic() - started < 3


def test_a_stop_ends_a_subprocess_and_is_not_swallowed_by_except_exception():
    stop = RunStop()
    asked = {"n": 0}

    def source():
        asked["n"] += 1
        return StopReason.HAND_BACK if asked["n"] >= 2 else None

    started = time.monotonic()
    with stop.watch([source], tick_seconds=0.05):
        with pytest.raises(RunStopped):
            with stop.interruptible():
                try:
                    subprocess.run(["sleep", "30"], check=False)
                except Exception:  # a tool's own error handling must not keep the run going
                    pass
                time.sleep(30)
    assert stop.reason is StopReason.HAND_BACK
    assert time.monotonic() - started < 5


def test_outside_an_interruptible_stretch_the_stop_waits_for_the_next_check():
    stop = RunStop()
    with stop.watch([lambda: StopReason.LEASE_LOST], tick_seconds=0.05):
        waited = time.monotonic() + 10
        while stop.reason is None and time.monotonic() < waited:
            time.sleep(0.05)  # publishing: never cut in the middle
        assert stop.reason is StopReason.LEASE_LOST
        with pytest.raises(RunStopped):
            stop.check()
        with pytest.raises(RunStopped):
            with stop.interruptible():
                pass  # entering one after the stop raises at once


def test_the_first_reason_wins():
    stop = RunStop()
    assert stop.request(StopReason.HAND_BACK) is True
    assert stop.request(StopReason.DEADLINE) is False
    assert stop.reason is StopReason.HAND_BACK


def test_a_time_box_stops_only_the_call_that_ran_past_it():
    stop = RunStop(deadline=time.monotonic() + 60)
    with stop.watch([], tick_seconds=0.05), stop.interruptible():
        with pytest.raises(ToolTimedOut):
            with stop.time_box(0.2):
                time.sleep(10)
        with stop.time_box(5):
            time.sleep(0.3)  # within its budget: runs to the end
    assert stop.reason is None


def test_a_run_in_another_thread_is_stopped_at_its_next_bytecode():
    stop_holder = {}
    caught = []

    def run():
        stop = stop_holder["stop"] = RunStop(deadline=time.monotonic() + 0.2)
        try:
            with stop.watch([], tick_seconds=0.05), stop.interruptible():
                while True:
                    sum(range(1000))
        except RunStopped:
            caught.append(stop.reason)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive() and caught == [StopReason.DEADLINE]


def test_a_stop_asked_for_before_the_run_is_watched_stops_the_next_run_at_once():
    # A horse whose worker died while it was still loading the job (SIGTERM before the run's watch began).
    assert request_current(StopReason.HAND_BACK) is False
    stop = RunStop()
    try:
        with stop.watch([], tick_seconds=0.05):
            with pytest.raises(RunStopped):
                with stop.interruptible():
                    pytest.fail("the run went on although it was asked to stop")
        assert stop.reason is StopReason.HAND_BACK
        later = RunStop()
        with later.watch([], tick_seconds=0.05):  # asked once: only that run stops
            assert later.reason is None
    finally:
        discard_early_stop()


def test_an_early_stop_is_forgotten_once_its_job_has_ended():
    request_current(StopReason.HAND_BACK)
    discard_early_stop()
    stop = RunStop()
    with stop.watch([], tick_seconds=0.05):
        assert stop.reason is None


def test_a_stop_a_signal_asks_for_while_the_run_holds_its_lock_does_not_hang_the_run():
    # A horse's SIGTERM handler runs in the run's thread between two bytecodes, perhaps inside one of the stop's
    # locked stretches (entering an interruptible step, the interrupt handler): in a process of its own, bounded.
    script = """
import os, signal, time
from service.runstop import RunStop, RunStopped, StopReason, request_current
stop = RunStop()
with stop.watch([], tick_seconds=0.05):
    signal.signal(signal.SIGTERM, lambda *_: request_current(StopReason.HAND_BACK))
    try:
        with stop.interruptible():
            with stop._locked():
                os.kill(os.getpid(), signal.SIGTERM)
                held = True
            time.sleep(20)  # a model call: the stop's next delivery cuts it
    except RunStopped:
        print(stop.reason.value, stop._interruptible)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, cwd=Path(__file__).parents[1]
    )
    assert done.stdout.split() == ["hand_back", "0"], done.stderr
