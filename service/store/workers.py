"""Worker heartbeats: each worker's last beat and current job, in Redis and in a file beside its mirrors."""

import os
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from service.models import Record
from service.store.codec import dump, load
from service.store.replies import text

_INDEX = "cd:workers"  # sorted set: worker name -> time of its last beat
# A worker whose last beat is older than this many of its intervals is stale: frozen, dead, or its host gone.
STALE_AFTER_BEATS = 3
# A dead worker stays listed (as stale) this long after its last beat, then is forgotten.
FORGET_AFTER_SECONDS = 24 * 3600


def _key(name: str) -> str:
    return f"cd:worker:{name}"


@dataclass
class WorkerBeat(Record):
    """One heartbeat: who beat, when (Unix seconds), and what the worker was doing."""

    name: str
    host: str
    pid: int
    started_at: float
    beat_at: float
    interval: float = 5  # seconds between this worker's beats
    state: str = "idle"  # RQ's worker state: idle, busy, suspended...
    job: str | None = None  # the Copydesk job of the run in progress
    task: str | None = None  # the queued function in progress (a run, a GitHub event)

    @property
    def stale_after(self) -> float:
        """Seconds without a beat after which this worker counts as not alive."""
        return STALE_AFTER_BEATS * self.interval

    def age(self, now: float | None = None) -> float:
        """Seconds since this beat."""
        return (time.time() if now is None else now) - self.beat_at

    def to_json(self, now: float | None = None) -> dict:
        """The beat as `copydesk doctor --json` shows it."""
        age = self.age(now)
        return {
            "name": self.name,
            "host": self.host,
            "pid": self.pid,
            "state": self.state,
            "job": self.job,
            "task": self.task,
            "startedAt": self.started_at,
            "lastHeartbeat": self.beat_at,
            "secondsSinceHeartbeat": round(age, 1),
            "stale": age > self.stale_after,
        }


class WorkerRegistry:
    """The workers' heartbeats in Redis, for listing every worker from anywhere."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def beat(self, beat: WorkerBeat) -> None:
        """Record `beat` as its worker's latest."""
        with self._redis.pipeline() as pipe:
            pipe.set(_key(beat.name), dump(beat), ex=FORGET_AFTER_SECONDS)
            pipe.zadd(_INDEX, {beat.name: beat.beat_at})
            pipe.zremrangebyscore(_INDEX, "-inf", beat.beat_at - FORGET_AFTER_SECONDS)
            pipe.execute()

    def remove(self, name: str) -> None:
        """Forget a worker that stopped cleanly."""
        with self._redis.pipeline() as pipe:
            pipe.delete(_key(name))
            pipe.zrem(_INDEX, name)
            pipe.execute()

    def all(self) -> list[WorkerBeat]:
        """Every worker's latest beat, most recent first."""
        names = [text(n) for n in self._redis.zrevrange(_INDEX, 0, -1)]
        if not names:
            return []
        raws = self._redis.mget([_key(n) for n in names])
        return [load(WorkerBeat, raw) for raw in raws if raw is not None]


class HeartbeatFiles:
    """The same beats as files `<data dir>/workers/<name>.json`: a liveness probe reads them without Redis."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.json"

    def write(self, beat: WorkerBeat) -> None:
        """Replace the worker's file with `beat` atomically, so a reader never sees half a file."""
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.path(beat.name)
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        partial.write_bytes(dump(beat))
        os.replace(partial, target)

    def remove(self, name: str) -> None:
        self.path(name).unlink(missing_ok=True)

    def read(self, name: str) -> WorkerBeat | None:
        """The worker's last beat, or None when it has no readable file."""
        try:
            return load(WorkerBeat, self.path(name).read_text())
        except (OSError, ValueError, TypeError):
            return None

    def all(self) -> list[WorkerBeat]:
        """Every worker's last beat found in the folder."""
        names = sorted(p.stem for p in self.folder.glob("*.json")) if self.folder.is_dir() else []
        return [beat for beat in map(self.read, names) if beat is not None]
