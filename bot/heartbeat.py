"""Worker liveness: a thread that publishes the worker's heartbeat and current job, and the probe that reads it."""

import enum
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass

import redis
import rq

from bot.context import Context, run_job_id
from service.settings import Settings
from service.store.workers import HeartbeatFiles, WorkerBeat, WorkerRegistry

log = logging.getLogger(__name__)


def default_name() -> str:
    """`<hostname>.<pid>`: unique among the workers of a host; in a container, the same after a restart."""
    return f"{socket.gethostname()}.{os.getpid()}"


def heartbeat_files(settings: Settings) -> HeartbeatFiles:
    return HeartbeatFiles(settings.data_dir / "workers")


@dataclass
class _Current:
    """What the worker is doing, worked out once per RQ job."""

    rq_job_id: str | None = None
    task: str | None = None
    job: str | None = None


class WorkerHeartbeat:
    """Publishes the worker's heartbeat every `worker_heartbeat_seconds` from a thread of the worker's own process,
    to Redis (for `copydesk doctor`) and to a file in the data folder (for a liveness probe, Redis or not).

    Use as a context manager around the worker's loop, and `watch` each RQ worker it runs (a new one after a
    Redis outage); a clean exit removes the worker from both.
    """

    def __init__(self, ctx: Context, *, name: str | None = None) -> None:
        self.name = name or ctx.settings.worker_name or default_name()
        self._worker: rq.Worker | None = None
        self._interval = ctx.settings.worker_heartbeat_seconds
        self._registry = WorkerRegistry(ctx.services.redis)
        self._files = heartbeat_files(ctx.settings)
        self._started = time.time()
        self._current = _Current()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat_forever, name="copydesk-heartbeat", daemon=True)
        self._redis_down = self._file_failing = False

    def __enter__(self) -> "WorkerHeartbeat":
        self.beat()
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 5)
        self._files.remove(self.name)
        try:
            self._registry.remove(self.name)
        except redis.RedisError:
            log.warning("could not remove worker %s from Redis; it will show as stale", self.name)

    def watch(self, worker: rq.Worker) -> None:
        """Report the state and current job of `worker` from now on."""
        self._worker = worker
        self._current = _Current()

    def _beat_forever(self) -> None:
        while not self._stop.wait(self._interval):
            self.beat()

    def beat(self) -> WorkerBeat:
        """Publish one heartbeat now; a failing file or Redis is logged once per outage, never raised."""
        worker = self._worker
        current = self._current_job(worker) if worker else _Current()
        beat = WorkerBeat(
            name=self.name,
            host=socket.gethostname(),
            pid=os.getpid(),
            started_at=self._started,
            beat_at=time.time(),
            interval=self._interval,
            state=_state(worker) if worker else "starting",
            job=current.job,
            task=current.task,
        )
        try:
            self._files.write(beat)
            self._file_failing = False
        except OSError:
            if not self._file_failing:
                log.warning("cannot write the heartbeat file of worker %s", self.name, exc_info=True)
            self._file_failing = True
        try:
            self._registry.beat(beat)
            if self._redis_down:
                log.info("worker %s: heartbeats reach Redis again", self.name)
            self._redis_down = False
        except redis.RedisError:
            if not self._redis_down:
                log.warning(
                    "worker %s: cannot publish its heartbeat to Redis; retrying every %d s", self.name, self._interval
                )
            self._redis_down = True
        return beat

    def _current_job(self, worker: rq.Worker) -> _Current:
        # `executions` lives in this (the parent) process: reading it costs no Redis call. list() copies it
        # in one step, so the worker's own thread changing it meanwhile does no harm.
        executions = list(getattr(worker, "executions", {}).values())
        rq_job_id = executions[0].job_id if executions else None
        if rq_job_id != self._current.rq_job_id:
            self._current = _describe(worker, rq_job_id)
        return self._current


def _state(worker: rq.Worker) -> str:
    state = worker.get_state()
    return state.value if isinstance(state, enum.Enum) else str(state)


def _describe(worker: rq.Worker, rq_job_id: str | None) -> _Current:
    """The task and Copydesk job of RQ job `rq_job_id` (a run's first argument is its job id)."""
    if rq_job_id is None:
        return _Current()
    try:
        rq_job = rq.job.Job.fetch(rq_job_id, connection=worker.connection)
        task = rq_job.func_name
        job = run_job_id(rq_job)
    except Exception:  # noqa: BLE001 - a job that vanished or cannot be read is only not described
        log.debug("cannot describe RQ job %s", rq_job_id, exc_info=True)
        # Not remembered as this job's description: the next beat tries again (Redis may be back).
        return _Current(task="unknown")
    return _Current(rq_job_id=rq_job_id, task=(task or "unknown").rsplit(".", 1)[-1], job=job)


def probe(settings: Settings, name: str | None, max_age: float | None = None) -> tuple[bool, str]:
    """The liveness probe: (alive, why) for worker `name`, or with no name for any worker of this host, from
    the heartbeat files alone (so a Redis outage does not make workers look dead). A beat counts when it is
    at most `max_age` seconds old, by default three of that worker's heartbeat intervals."""
    files = heartbeat_files(settings)
    if name:
        beat = files.read(name)
        beats = [beat] if beat else []
        if not beats:
            return False, f"no heartbeat file for worker {name} in {files.folder}"
    else:
        host = socket.gethostname()
        beats = [beat for beat in files.all() if beat.host == host]
        if not beats:
            return False, f"no heartbeat file of a worker on {host} in {files.folder}"
    freshest = min(beats, key=lambda beat: beat.age())
    age = freshest.age()
    limit = max_age if max_age is not None else freshest.stale_after
    if age > limit:
        return False, f"worker {freshest.name}'s last heartbeat was {age:.0f} s ago (more than {limit:.0f} s)"
    return True, f"worker {freshest.name} beat {age:.1f} s ago ({freshest.state}, job {freshest.job or '-'})"
