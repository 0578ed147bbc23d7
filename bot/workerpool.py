"""`copydesk worker --processes N`: N worker processes on one host, each running one job at a time, supervised by
one process that alone sweeps, fans webhooks out and looks after the mirrors, and restarts a child that dies.

The children are `copydesk worker --supervised` (a fresh interpreter each, like any worker); they keep every
worker's grace semantics. A first SIGTERM or SIGINT is passed on to each child (it lets its run go on for
COPYDESK_STOP_GRACE, then hands it back); a second is passed on too (hand back now). The supervisor exits once
every child has.
"""

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import redis

from bot import worker as single
from bot.context import Context
from bot.heartbeat import default_name
from service import metrics

log = logging.getLogger(__name__)

SUPERVISE_INTERVAL_SECONDS = 0.5
# A child that dies sooner than this after its start is restarted after a growing delay (a crash loop), up to the
# longest one; a child that ran longer is restarted at once. One that exits 2 refused to work (Redis evicts keys):
# the pool stops and exits 2 as a lone worker would, for the operator (or the outer supervisor) to see.
REFUSED_EXIT_CODE = 2
HEALTHY_AFTER_SECONDS = 30.0
FIRST_RESTART_DELAY_SECONDS = 1.0
LONGEST_RESTART_DELAY_SECONDS = 30.0


@dataclass
class _Slot:
    """One child of the pool: its name, its process, and when it may be started again after dying young."""

    name: str
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    delay: float = FIRST_RESTART_DELAY_SECONDS
    restart_at: float = 0.0


class WorkerPool:
    """Supervises `processes` children named `<name>-1`..`<name>-N`; the upkeep runs here, once for the host."""

    def __init__(self, ctx: Context, processes: int) -> None:
        self._ctx = ctx
        base = ctx.settings.worker_name or default_name()
        self._slots = [_Slot(f"{base}-{n}") for n in range(1, processes + 1)]
        self._signals = 0
        self._stop = threading.Event()
        self._exit_code = 0

    def run(self) -> int:
        """Start the children and the upkeep, supervise until stopped and every child has exited; returns 0, or 2
        when a child refused to work."""
        handlers = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        background = threading.Event()
        try:
            try:
                single.sweep_once(self._ctx)
            except redis.RedisError:
                log.warning("worker pool: Redis unreachable at start; the sweep will catch up")
            single.start_upkeep(self._ctx, background)
            for slot in self._slots:
                self._start(slot)
            while True:
                self._supervise()
                if self._stop.is_set() and not self._running():
                    break
                time.sleep(SUPERVISE_INTERVAL_SECONDS)  # a signal's handler runs meanwhile
        finally:
            background.set()
            self._signal_children(signal.SIGKILL)  # only left running if this loop itself failed
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
        log.info("worker pool: every worker process has exited")
        return self._exit_code

    def _on_signal(self, signum, frame) -> None:
        self._signals += 1
        log.info(
            "worker pool: %s (%d); passing it on to %d worker process(es)",
            signal.Signals(signum).name,
            self._signals,
            sum(1 for s in self._slots if s.proc and s.proc.poll() is None),
        )
        self._stop.set()
        self._signal_children(signal.SIGTERM)

    def _running(self) -> bool:
        return any(slot.proc is not None and slot.proc.poll() is None for slot in self._slots)

    def _supervise(self) -> None:
        """Reap children that exited; restart them (unless stopping), after a delay when they died young."""
        now = time.monotonic()
        for slot in self._slots:
            proc = slot.proc
            if proc is not None and proc.poll() is not None:
                self._reaped(slot, proc)
                if proc.returncode == REFUSED_EXIT_CODE and not self._stop.is_set():
                    log.error("worker pool: worker %s refused to start; stopping the pool", slot.name)
                    self._exit_code = REFUSED_EXIT_CODE
                    self._stop.set()
                    self._signal_children(signal.SIGTERM)
                if self._stop.is_set():
                    continue
                lived = now - slot.started_at
                slot.delay = (
                    FIRST_RESTART_DELAY_SECONDS
                    if lived > HEALTHY_AFTER_SECONDS
                    else min(slot.delay * 2, LONGEST_RESTART_DELAY_SECONDS)
                )
                slot.restart_at = now + (0 if lived > HEALTHY_AFTER_SECONDS else slot.delay)
                log.warning(
                    "worker pool: worker %s (pid %d) exited with %s after %.0f s; restarting it%s",
                    slot.name,
                    proc.pid,
                    proc.returncode,
                    lived,
                    "" if lived > HEALTHY_AFTER_SECONDS else f" in {slot.delay:.0f} s",
                )
            if slot.proc is None and not self._stop.is_set() and now >= slot.restart_at:
                self._start(slot)

    def _start(self, slot: _Slot) -> None:
        # Its own process group: a Ctrl-C in a terminal reaches the supervisor alone, which passes it on once (a
        # child that got it twice would hand its run back at once instead of after the grace).
        slot.proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "worker", "--name", slot.name, "--supervised"], process_group=0
        )
        slot.started_at = time.monotonic()
        log.info("worker pool: started worker %s (pid %d)", slot.name, slot.proc.pid)

    def _reaped(self, slot: _Slot, proc: subprocess.Popen) -> None:
        """Forget an exited child, and its live metric gauges and its horses'. What it left in its process group
        goes too: RQ's scheduler, a fork of it, would keep its Redis connections open, and Redis would hand the
        next job to the dead worker's blocking pop on one of them."""
        slot.proc = None
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # nothing left in the group
        directory = self._ctx.settings.metrics_dir
        for identity in (metrics.process_identity(proc.pid), metrics.process_identity(proc.pid, "horse")):
            try:
                metrics.process_ended(identity, directory)
            except OSError:
                log.debug("could not clear the metric files of %s", identity, exc_info=True)

    def _signal_children(self, signum: int) -> None:
        for slot in self._slots:
            if slot.proc is not None and slot.proc.poll() is None:
                try:
                    slot.proc.send_signal(signum)
                except ProcessLookupError:
                    pass
