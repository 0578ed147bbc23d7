"""The job events clients can follow: their types, and one event as the stream, the API and webhooks show it."""

import enum
import json
from dataclasses import dataclass


class EventType(str, enum.Enum):
    JOB_CREATED = "job.created"
    JOB_COMPLETED = "job.completed"
    JOB_FAILED = "job.failed"
    JOB_ARCHIVED = "job.archived"
    JOB_CANCELLED = "job.cancelled"
    JOB_BUDGET_REACHED = "job.budget_reached"
    RUN_STARTED = "run.started"
    RUN_STEP = "run.step"
    RUN_PUSHED = "run.pushed"
    RUN_FINISHED = "run.finished"
    PR_OPENED = "pr.opened"
    PR_UPDATED = "pr.updated"


# After one of these a job is no longer `active`: a stream that does not follow the job ends there.
SETTLING = frozenset({EventType.JOB_COMPLETED, EventType.JOB_FAILED, EventType.JOB_ARCHIVED, EventType.JOB_CANCELLED})


@dataclass(frozen=True)
class JobEvent:
    """One event of a job: `id` is its Redis Stream id (monotonic within the job), `data` the job record and
    the event's own fields (`run`, `pullRequest`)."""

    id: str
    job_id: str
    type: EventType
    timestamp: str
    data: dict

    def body(self) -> dict:
        """The event as a webhook body and an SSE `data:` line carry it: `{type, timestamp, data}`."""
        return {"type": self.type.value, "timestamp": self.timestamp, "data": self.data}

    def body_json(self) -> str:
        """`body()` as compact JSON: a webhook delivery's payload and an SSE `data:` line."""
        return json.dumps(self.body(), separators=(",", ":"))

    def to_api(self) -> dict:
        """The event in the JSON list of `?after=`: the body plus its id."""
        return {"id": self.id, **self.body()}

    def to_sse(self) -> str:
        """The event as one Server-Sent Events message."""
        return f"id: {self.id}\nevent: {self.type.value}\ndata: {self.body_json()}\n\n"
