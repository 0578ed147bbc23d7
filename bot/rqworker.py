"""The RQ worker process around Copydesk's runs: it keeps its horse's lease, stops it at its deadline, hands
runs back on shutdown, and requeues at once the run of a horse that died. Its horses run their tasks with the
worker's own context, built (and the model SDKs imported) once, before any fork."""

import ctypes
import faulthandler
import logging
import os
import re
import signal
import sys
import time

import redis
import rq
from rq.exceptions import StopRequested

from bot.context import Context, run_job_id
from bot.tasks import in_worker
from service import metrics
from service.agent.loop import time_limit_failure
from service.dispatch import RUN_DESCRIPTION_PREFIX
from service.errors import RunFailed
from service.faults import FREEZE_AFTER_DEQUEUE, Faults
from service.lease import LeaseInfo, LeaseLost, release_token, renew_for_worker
from service.queues import runs_queue
from service.replication import NotWritable
from service.runstop import INTERRUPT_SIGNAL
from service.store.jobs import RunOutcome
from service.timeouts import block_seconds

STACKS_SIGNAL = signal.SIGUSR2  # a worker or horse given it writes its threads' stacks to its log

log = logging.getLogger(__name__)

# After telling its horse to hand its run back, how long the worker waits before it kills the horse and hands
# the run back itself (the horse may be stuck in C code, or in the middle of publishing).
HAND_BACK_TIMEOUT_SECONDS = 5.0
_PR_SET_PDEATHSIG = 1


class CopydeskWorker(rq.Worker):
    """An RQ worker whose monitoring loop also looks after the lease of the run its work horse holds."""

    # RQ's dequeue waits this long at most between attempts while Redis is unreachable (its own default, 60 s,
    # would leave a worker idle for up to a minute after a Sentinel failover that took seconds).
    max_connection_wait_time = 5.0

    def __init__(self, queues, *, ctx: Context, **kwargs) -> None:
        settings = ctx.settings
        # The monitoring loop wakes this often to renew the horse's lease and check the deadline and the grace.
        interval = max(1, int(settings.lease_ttl_seconds // 3))
        self._ctx = ctx  # before RQ's __init__, which reads the time-outs below
        super().__init__(queues, connection=ctx.services.redis, job_monitoring_interval=interval, **kwargs)
        self.shutting_down = False
        # A horse whose worker process died hands its run back at once (SIGTERM) instead of running on unwatched,
        # and RQ's scheduler stops instead of living on orphaned.
        end_forks_with_this_process()
        # `kill -USR2` a worker or its horse: every thread's stack goes to the worker's log (a run that will not end).
        faulthandler.register(STACKS_SIGNAL, all_threads=True)
        self._grace_ends: float | None = None
        self._handed_back_at: float | None = None
        self._killed_for: str | None = None  # "deadline" or "hand_back" when this worker killed its horse
        self.refusal: NotWritable | None = None  # why it stopped taking work: Redis takes no writes
        if not any(isinstance(f, RunOkFilter) for f in self.log.filters):
            self.log.addFilter(RunOkFilter(runs_queue(settings.queue_name)))

    # -- time-outs -----------------------------------------------------------------------------

    @property
    def dequeue_timeout(self) -> int:
        # RQ's own (its worker TTL less 15 s: 405 s) outlasts the client's read time-out, and RQ would then raise
        # the read time-out of the client the whole process shares to match. Block for less than it instead.
        return block_seconds(self._ctx.settings)

    @property
    def connection_timeout(self) -> int:
        # What RQ requires of the client's read time-out; the chosen one meets it, so RQ leaves it alone.
        return self._ctx.settings.redis_socket_timeout

    def dequeue_job_and_maintain_ttl(self, timeout, max_idle_time=None):
        # A node that takes no writes would fail every run handed out: take none, and let `run_worker` wait.
        try:
            self._ctx.services.durability.writable()
        except NotWritable as refusal:
            self.refusal = refusal
            raise StopRequested() from None
        return super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)

    # -- the work horse ------------------------------------------------------------------------

    def main_work_horse(self, job, queue):
        # Nudges outside a run (before its watchdog starts, after it ends) are ignored, never fatal.
        signal.signal(INTERRUPT_SIGNAL, signal.SIG_IGN)
        self._ctx.after_fork()
        # Each horse is a new process; they take turns on one set of metric files per worker.
        metrics.name_this_process(horse_identity(os.getppid()))
        super().main_work_horse(job, queue)

    def perform_job(self, job, queue, execution):
        """In the horse: run the job with the worker's context, and log the modules the job had to import (none
        of the model SDKs, which the worker imported before it forked)."""
        before = set(sys.modules)
        try:
            with in_worker(self._ctx):
                return super().perform_job(job, queue, execution)
        finally:
            imported = set(sys.modules) - before
            log.info(
                "work horse: job %s imported %d new modules (%s)",
                run_job_id(job) or job.id,
                len(imported),
                ", ".join(sorted({name.partition(".")[0] for name in imported})) or "none",
            )

    def execute_job(self, job, queue):
        if run_job_id(job) is not None:
            Faults(self._ctx.settings.test_faults).reach(FREEZE_AFTER_DEQUEUE)
        self._killed_for = None
        self._handed_back_at = None
        super().execute_job(job, queue)

    def maintain_heartbeats(self, job, execution):
        try:
            super().maintain_heartbeats(job, execution)
        except redis.RedisError:
            log.warning("worker %s: could not write RQ's heartbeat; Redis unreachable", self.name)
        try:
            self._look_after(job)
        except redis.RedisError:
            log.warning("worker %s: could not renew its horse's lease; Redis unreachable", self.name)

    def _look_after(self, job) -> None:
        """Each monitoring tick: renew the run's lease, and end the run if it is past its deadline or grace."""
        job_id = run_job_id(job)
        if job_id is None:
            return
        settings = self._ctx.settings
        renew_for_worker(self.connection, job_id, self.name, settings.lease_ttl_seconds)
        now = time.monotonic()
        if self._handed_back_at is None and self._grace_ends is not None and now > self._grace_ends:
            log.info("worker %s: stop grace is over; handing the run of job %s back", self.name, job_id)
            self._ask_horse_to_hand_back()
        elif self._handed_back_at is not None and now - self._handed_back_at > HAND_BACK_TIMEOUT_SECONDS:
            log.warning("worker %s: the horse did not hand job %s back in time; killing it", self.name, job_id)
            self._killed_for = "hand_back"
            self.kill_horse()
        else:
            info = LeaseInfo.read(self.connection, job_id)
            if info is None or info.worker != self.name:
                return
            if info.kill_at and time.time() > info.kill_at:
                log.warning(
                    "worker %s: the run of job %s is past its deadline and did not stop; killing its horse",
                    self.name,
                    job_id,
                )
                self._killed_for = "deadline"
                self.kill_horse()
            else:
                # Nudge the horse to read its clock (deadline, tool budget) even when C code starves its watchdog.
                self._signal_horse(INTERRUPT_SIGNAL)

    def handle_work_horse_killed(self, job, retpid, ret_val, rusage):
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)
        job_id = run_job_id(job)
        if job_id is None:
            return
        try:
            self._settle_dead_horse(job_id)
        except redis.RedisError:
            log.warning("worker %s: could not settle job %s after its horse died; the sweep will", self.name, job_id)

    def _settle_dead_horse(self, job_id: str) -> None:
        """The horse is gone and its run with it: end the run the way its death calls for."""
        services = self._ctx.services
        info = LeaseInfo.read(self.connection, job_id)
        if info is None or info.worker != self.name:
            return  # the lease lapsed or was never taken: the sweep or the new holder sees to the message
        try:
            if self._killed_for == "deadline" and info.message_id:
                failure: RunFailed = time_limit_failure()
                services.jobs.finish_message(
                    job_id,
                    info.message_id,
                    RunOutcome(error={"code": failure.code.value, "message": failure.message}),
                    fence=info.fence,
                )
                metrics.RUNS.labels("failed", failure.code).inc()  # the horse died before it could report
                log.warning(
                    "run of job %s message %s failed (%s): its horse was killed past the deadline",
                    job_id,
                    info.message_id,
                    failure.code,
                )
            elif self._killed_for == "hand_back" and info.message_id:
                services.jobs.hand_back(job_id, info.message_id, info.fence)
            # Else the horse crashed mid-run: the attempt counts, and the run resumes now rather than after the
            # lease lapses.
        except LeaseLost:
            return
        release_token(self.connection, job_id, info.token)
        if services.jobs.has_pending(job_id):
            services.dispatcher.kick(job_id, first=True)
            if self._killed_for is None:
                metrics.RECOVERIES.labels("worker").inc()
        log.info(
            "worker %s: settled job %s after its horse died (%s)", self.name, job_id, self._killed_for or "crashed"
        )

    # -- shutting down -------------------------------------------------------------------------

    def request_stop(self, signum, frame):
        """First SIGTERM or SIGINT: take no more work, and let the run go on for the stop grace."""
        self.shutting_down = True
        if self.horse_pid:
            self._grace_ends = time.monotonic() + self._ctx.settings.stop_grace_seconds
            log.info(
                "worker %s: stopping; the current run has %d s to finish before it is handed back",
                self.name,
                self._ctx.settings.stop_grace_seconds,
            )
        super().request_stop(signum, frame)

    def request_force_stop(self, signum, frame):
        """A second signal: hand the run back now (the horse requeues it), then stop."""
        self.shutting_down = True
        if not self.horse_pid:
            raise SystemExit()
        if self._handed_back_at is None:
            log.info("worker %s: second signal; handing the run back now", self.name)
            self._ask_horse_to_hand_back()

    def _ask_horse_to_hand_back(self) -> None:
        self._handed_back_at = time.monotonic()
        self._signal_horse(signal.SIGTERM)

    def _signal_horse(self, signum: int) -> None:
        try:
            os.kill(self.horse_pid, signum)
        except ProcessLookupError:
            pass


def hold_pool_across_fork(pool) -> None:
    """Make each fork of this process wait until no other thread is inside `pool`'s bookkeeping.

    A forked child's first Redis command resets the inherited pool (redis-py compares process ids) under the
    pool's lock; had another thread of the parent (the sweeper, the webhook fan-out) held that lock at the fork,
    the child would wait for it for ever. Holding it across the fork rules that out.
    """
    lock = getattr(pool, "_lock", None)  # redis-py's pool lock; other pools need nothing
    if lock is not None:
        os.register_at_fork(before=lock.acquire, after_in_parent=lock.release, after_in_child=lock.release)


def horse_identity(worker_pid: int) -> str:
    """The metric files of the work horses of the worker process `worker_pid`."""
    return metrics.process_identity(worker_pid, "horse")


_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


class RunOkFilter(logging.Filter):
    """Drops RQ's "Job OK" and "Successfully completed" lines for a run: the task returning says nothing of the
    run, which may have failed. The run writes its own line (service.runreport) with its outcome; RQ's failed
    registry keeps crashes only."""

    def __init__(self, runs_queue: str) -> None:
        super().__init__()
        self._runs_queue = runs_queue

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if len(args) == 4 and "Job OK" in str(args[2]):
            return _COLOUR.sub("", str(args[1])) != self._runs_queue
        if str(record.msg).startswith("Successfully completed %s job") and args:
            return not str(args[0]).startswith(RUN_DESCRIPTION_PREFIX)
        return True


def signal_on_parent_death(signum: int, *, parent: int | None = None) -> None:
    """Ask Linux to send `signum` to this process when its parent dies (elsewhere: nothing). With `parent`, the pid
    the parent had, also when it died before the request took effect (this process was handed to another then)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signum))
    except (OSError, AttributeError):
        return
    # Not `getppid() == 1`: in a container the worker itself is often process 1, and its children are then its own.
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), signum)


_forking = {"parent": 0, "registered": False}


def end_forks_with_this_process() -> None:
    """From now on every process this one forks (work horses, RQ's scheduler) gets SIGTERM when this one dies: RQ's
    scheduler would otherwise live on after its worker was killed, orphaned, heartbeating and holding its lock."""
    if not _forking["registered"]:
        _forking["registered"] = True
        os.register_at_fork(before=_note_forking_parent, after_in_child=_end_with_forking_parent)


def _note_forking_parent() -> None:
    _forking["parent"] = os.getpid()


def _end_with_forking_parent() -> None:
    signal_on_parent_death(signal.SIGTERM, parent=_forking["parent"])
