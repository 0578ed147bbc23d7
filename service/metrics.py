"""Copydesk's Prometheus instruments, recorded in prometheus_client's multi-process mode.

Web workers, worker processes and work horses are separate processes (forked, some short-lived): each writes its
values to its own files in one folder per host, and `/metrics` adds them up (`registry`). The instruments are
module-level, as prometheus_client intends; every one has labels, so no value exists before `enable` picks the
files. A process that never calls `enable` (a test, the demo) keeps its values in memory, which nothing reads.
"""

import os
import socket
from collections.abc import Iterable
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, values
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

# Seconds: a run takes seconds (a question) to many minutes (a large change; COPYDESK_RUN_TIMEOUT is 15 min).
RUN_BUCKETS = (1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1800)
PHASE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)

RUNS = Counter(
    "copydesk_runs",
    "Runs (one message of a job each) by how they ended; code is the error code of a failed run",
    ["outcome", "code"],
    registry=None,
)
RUN_SECONDS = Histogram(
    "copydesk_run_duration_seconds",
    "Wall-clock time of a run, start to recorded outcome",
    ["outcome"],
    buckets=RUN_BUCKETS,
    registry=None,
)
PHASE_SECONDS = Histogram(
    "copydesk_run_phase_seconds",
    "Time a run spent in each phase: fetch (mirror), agent "
    "(model and tools), push, pull_request (open or update, comment)",
    ["phase"],
    buckets=PHASE_BUCKETS,
    registry=None,
)
MODEL_TOKENS = Counter(
    "copydesk_model_tokens",
    "Model tokens by model and kind; input includes the cached "
    "kinds (cache_read, cache_write) where the vendor reports them",
    ["model", "kind"],
    registry=None,
)
RECOVERIES = Counter(
    "copydesk_lease_recoveries",
    "Runs requeued because no live run held them: by the sweep "
    "(lease lapsed or never queued) or by the worker whose work horse died",
    ["by"],
    registry=None,
)
WEBHOOK_DELIVERIES = Counter(
    "copydesk_webhook_deliveries", "Webhook delivery attempts by result", ["result"], registry=None
)
GITHUB_RATE_REMAINING = Gauge(
    "copydesk_github_rate_limit_remaining",
    "GitHub's remaining API calls in the current window, as its last answer said (X-RateLimit-Remaining)",
    ["resource"],
    multiprocess_mode="mostrecent",
    registry=None,
)


def process_identity(pid: int | None = None, role: str = "") -> str:
    """The name of a process's value files: host and pid (this process's by default), since containers of one
    host may share the folder and reuse pids; `role` names files that successive processes reuse in turn."""
    return f"{socket.gethostname()}-{pid or os.getpid()}" + (f"-{role}" if role else "")


_identity = {"pid": -1, "name": ""}


def _current_identity() -> str:
    if _identity["pid"] != os.getpid():  # a fork: a new process, not yet named
        _identity.update(pid=os.getpid(), name=process_identity())
    return str(_identity["name"])


def name_this_process(name: str) -> None:
    """Write this process's values to the files called `name` from now on (a work horse takes its worker's horse
    files, so a worker that runs thousands of jobs leaves one set of files, not thousands)."""
    _identity.update(pid=os.getpid(), name=name)


def enable(directory: Path) -> None:
    """Record this process's values in files under `directory` (shared by every Copydesk process of the host)."""
    directory.mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    # prometheus_client picks its value class when first imported, from this variable; Copydesk reads its
    # settings later, so it picks again (before any labelled value exists, see the module docstring).
    values.ValueClass = values.MultiProcessValue(process_identifier=_current_identity)


def process_ended(identity: str, directory: Path) -> None:
    """Drop the live gauges of a process that exited (gunicorn's worker, a supervised worker); counters stay."""
    if directory.is_dir():
        mark_process_dead(identity, str(directory))


def registry(directory: Path, extra: Iterable[Collector] = ()) -> CollectorRegistry:
    """A registry that reads every process's files under `directory`, plus collectors computed at scrape time."""
    found = CollectorRegistry()
    directory.mkdir(parents=True, exist_ok=True)
    MultiProcessCollector(found, path=str(directory))
    for collector in extra:
        found.register(collector)
    return found
