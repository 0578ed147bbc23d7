"""How a run is stopped from outside its own code: one reason per stop, noticed by a watchdog, delivered at once."""

import ctypes
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum

# The signal the watchdog sends the run's thread to deliver a stop; its handler raises inside the run's code,
# which also ends a blocking wait (a model call's socket read, a git subprocess).
INTERRUPT_SIGNAL = signal.SIGUSR1
REDELIVER_SECONDS = 1.0


class StopReason(Enum):
    """Why a run was stopped before it ended by itself; the runner has one way of ending for each."""

    DEADLINE = "deadline"  # COPYDESK_RUN_TIMEOUT passed: the run fails with time_limit_exceeded
    LEASE_LOST = "lease_lost"  # another run may own the job now: write nothing
    HAND_BACK = "hand_back"  # the worker is shutting down: requeue the message, no attempt counted
    CANCELLED = "cancelled"  # the job was cancelled: push nothing, record the message cancelled


class RunStopped(BaseException):
    """Raised inside a run that must stop. A BaseException, so that `except Exception` in a tool, a parser or
    an SDK's retry loop cannot swallow it."""

    def __init__(self, reason: StopReason | None = None) -> None:
        super().__init__(reason.value if reason is not None else "stopped")
        self.reason = reason  # None when raised asynchronously: the run's RunStop knows it


class ToolTimedOut(BaseException):
    """Raised inside a tool call that ran past its own time budget; the executor turns it into a tool error."""


# What the watchdog asks, each tick, about the run: a reason to stop it now, or None.
StopSource = Callable[[], "StopReason | None"]


class RunStop:
    """One run's stop: the first reason wins. Inside `interruptible()` the run's thread is interrupted at once;
    elsewhere the run notices at its next `check()`."""

    def __init__(self, deadline: float | None = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.deadline = deadline  # a `clock()` value, None for no time limit
        self._clock = clock
        # Re-entrant: a signal handler (SIGTERM's hand back, the interrupt) runs in the run's thread between two
        # bytecodes, perhaps while that thread holds this lock; a plain lock would hang the run for good.
        self._lock = threading.RLock()
        self._holder: int | None = None  # the thread inside `_locked`, if any
        self._reason: StopReason | None = None
        self._thread = threading.current_thread()
        self._interruptible = 0
        self._box_until: float | None = None
        self._delivered_at = float("-inf")

    @property
    def reason(self) -> StopReason | None:
        return self._reason

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            outer, self._holder = self._holder, threading.get_ident()
            try:
                yield
            finally:
                self._holder = outer

    def held_here(self) -> bool:
        """Whether the calling thread is inside one of this stop's locked stretches (a signal handler may be)."""
        return self._holder == threading.get_ident()

    def request(self, reason: StopReason) -> bool:
        """Stop the run for `reason` unless it was stopped already; True when this call stopped it."""
        with self._locked():
            if self._reason is not None:
                return False
            self._reason = reason
            self._delivered_at = float("-inf")  # deliver this stop now, whatever was delivered before
        if self._due():
            self._interrupt()
        return True

    def check(self) -> None:
        """Raise RunStopped if the run must stop (its deadline counts even without a watchdog)."""
        if self._reason is None and self.deadline is not None and self._clock() > self.deadline:
            self.request(StopReason.DEADLINE)
        if self._reason is not None:
            raise RunStopped(self._reason)

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - self._clock()

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """A stretch of the run that may be cut anywhere (agent steps, tools, model calls, the docs check)."""
        with self._locked():
            self._thread = threading.current_thread()
            self._interruptible += 1
            pending = self._reason is not None
        try:
            if pending:
                raise RunStopped(self._reason)
            yield
        finally:
            with self._locked():
                self._interruptible -= 1

    @contextmanager
    def time_box(self, seconds: float | None) -> Iterator[None]:
        """Raise ToolTimedOut inside the block when it runs longer than `seconds` (needs a watchdog)."""
        if seconds is None:
            yield
            return
        with self._locked():
            self._box_until = self._clock() + seconds
        try:
            yield
        finally:
            with self._locked():
                self._box_until = None

    def tick(self) -> None:
        """The watchdog's look at the clock: the run's deadline and the current time box."""
        if self._due():
            self._interrupt()

    def _due(self) -> bool:
        """Note a passed deadline; True when the run's thread should be interrupted now. Delivery repeats every
        REDELIVER_SECONDS until the run leaves its interruptible stretch: an exception raised inside a weakref
        callback or a destructor is dropped by the interpreter, so one delivery may not be enough."""
        now = self._clock()
        with self._locked():
            if self._reason is None and self.deadline is not None and now > self.deadline:
                self._reason = StopReason.DEADLINE
            if self._interruptible <= 0 or now - self._delivered_at < REDELIVER_SECONDS:
                return False
            due = self._reason is not None or (self._box_until is not None and now > self._box_until)
            if due:
                self._delivered_at = now
            return due

    def pending_exception(self) -> BaseException | None:
        """What the interrupted thread must raise now, if anything (called in that thread)."""
        with self._locked():
            if self._interruptible <= 0:
                return None
            if self._reason is not None:
                return RunStopped(self._reason)
            if self._box_until is not None and self._clock() > self._box_until:
                return ToolTimedOut()
        return None

    def _interrupt(self) -> None:
        thread = self._thread
        if thread is threading.main_thread() and signal.getsignal(INTERRUPT_SIGNAL) is _on_interrupt:
            assert thread.ident is not None  # the main thread is always started
            signal.pthread_kill(thread.ident, INTERRUPT_SIGNAL)
            return
        # Another thread, or no handler installed: raise at its next bytecode (a blocking call finishes first).
        exc = self.pending_exception()
        if exc is not None and thread.ident is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(type(exc)))

    @contextmanager
    def watch(self, sources: list[StopSource], *, tick_seconds: float = 0.2) -> Iterator["RunStop"]:
        """Run the watchdog while the block runs: it checks the clock and asks each source, every tick."""
        installed = _install_handler(self)
        halt = threading.Event()

        def watchdog() -> None:
            while not halt.wait(tick_seconds):
                self.tick()
                for source in sources:
                    if self._reason is not None:
                        break
                    reason = source()
                    if reason is not None:
                        self.request(reason)

        thread = threading.Thread(target=watchdog, name="copydesk-run-watchdog", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            halt.set()
            thread.join()
            if installed is not None:
                installed()


# The stop the signal handler serves: one run at a time per process (a work horse runs one job).
_current: RunStop | None = None
# A stop asked for while no run was watched yet (its worker died as the horse was loading the job): the run this
# process watches next starts stopped, instead of running unwatched to its end.
_early: StopReason | None = None


def request_current(reason: StopReason) -> bool:
    """Stop the run this process is running (a signal handler's way in); True when it was stopped. With no run
    watched yet, the next one starts stopped (until `discard_early_stop`)."""
    global _early
    stop = _current
    if stop is None:
        _early = _early or reason
        return False
    return stop.request(reason)


def discard_early_stop() -> None:
    """Forget a stop asked for before any run was watched (the job it was meant for has ended)."""
    global _early
    _early = None


def _on_interrupt(signum, frame) -> None:
    # Sent by the watchdog, or by the worker process every few seconds: C code that holds the interpreter lock
    # (Python's `re`) starves the watchdog thread but still runs signal handlers, so the clock is read here too.
    stop = _current
    if stop is None or stop.held_here():
        return  # raised inside a locked stretch, it would leave the stop's counts wrong: the next delivery raises
    stop._due()
    exc = stop.pending_exception()
    if exc is not None:
        raise exc


def _install_handler(stop: RunStop) -> Callable[[], None] | None:
    """Point the interrupt signal at `stop` (main thread only); returns how to undo it."""
    global _current, _early
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.signal(INTERRUPT_SIGNAL, _on_interrupt)
    _current = stop
    if _early is not None:
        stop.request(_early)
        _early = None

    def undo() -> None:
        global _current
        _current = None
        signal.signal(INTERRUPT_SIGNAL, previous)

    return undo
