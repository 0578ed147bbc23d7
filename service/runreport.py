"""How a run ended, told once: the run's log line (one per run) and its metrics (count, duration, phases, tokens)."""

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from service import metrics
from service.agent.model import Usage

log = logging.getLogger("copydesk.run")

# Phases of a run, in the order they happen (the metric's `phase` label).
PHASES = ("fetch", "agent", "push", "pull_request")


class PhaseClock:
    """Seconds a run spends in each phase; each `with clock.phase(name)` adds to that phase's total."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - started


@dataclass
class RunReport:
    """One run's ending: `outcome` is completed, failed, cancelled, handed_back or lease_lost; `code` the error
    code of a failed run."""

    job_id: str
    message_id: str
    model: str
    attempt: int
    outcome: str
    seconds: float
    code: str = ""
    commit: str | None = None
    pr_link: str | None = None
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    phases: dict[str, float] = field(default_factory=dict)

    def fields(self) -> dict:
        """The run line's structured fields (JSON logs put them at the top level)."""
        return {
            "job_id": self.job_id,
            "message_id": self.message_id,
            "outcome": self.outcome,
            "code": self.code or None,
            "duration_s": round(self.seconds, 3),
            "model": self.model,
            "attempt": self.attempt,
            "steps": self.steps,
            "commit": self.commit,
            "pr_link": self.pr_link,
            "tokens": {
                "input": self.usage.input_tokens,
                "output": self.usage.output_tokens,
                "cache_read": self.usage.cache_read_tokens,
                "cache_write": self.usage.cache_write_tokens,
            },
            "phases_s": {name: round(seconds, 3) for name, seconds in self.phases.items()},
        }


def report(run: RunReport) -> None:
    """Log the run's line and record its metrics; a failed run's line is a warning."""
    metrics.RUNS.labels(run.outcome, run.code).inc()
    metrics.RUN_SECONDS.labels(run.outcome).observe(run.seconds)
    for name, seconds in run.phases.items():
        metrics.PHASE_SECONDS.labels(name).observe(seconds)
    usage = run.usage
    for kind, count in (
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
        ("cache_read", usage.cache_read_tokens),
        ("cache_write", usage.cache_write_tokens),
    ):
        if count:
            metrics.MODEL_TOKENS.labels(run.model, kind).inc(count)
    ended = f"failed ({run.code})" if run.code else run.outcome.replace("_", " ")
    commit = f", commit {run.commit[:12]}" if run.commit else ""
    log.log(
        logging.WARNING if run.code else logging.INFO,
        "run of job %s message %s %s in %.1f s: %d steps, %d input and %d output tokens%s",
        run.job_id,
        run.message_id,
        ended,
        run.seconds,
        run.steps,
        usage.input_tokens,
        usage.output_tokens,
        commit,
        extra={"fields": run.fields()},
    )
