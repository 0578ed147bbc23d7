"""Reading a job's events: pages of the event list and server-sent event streams."""

import time

STATE_TYPES = [
    "job.created",
    "run.started",
    "run.step",
    "run.step",
    "run.pushed",
    "run.finished",
    "pr.opened",
    "job.completed",
]


def events_url(stack, job_id: str) -> str:
    return f"{stack.url}/v2/agent/{stack.project_id}/job/{job_id}/events"


def page(stack, job_id: str, after: str = "0") -> list[dict]:
    response = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job_id}/events", params={"after": after})
    assert response.status_code == 200, response.text
    return response.json()["events"]


def read_sse(response, until: float, records: list[dict] | None = None) -> list[dict]:
    """Parse an SSE response into {"id", "event", "data", "comment"} records until it ends; each is appended to
    `records` (when given) as it arrives, for a test that watches the stream from another thread."""
    records, current = [] if records is None else records, {}
    for raw in response.iter_lines(decode_unicode=True):
        assert time.monotonic() < until, "the stream did not end in time"
        if raw == "":
            if current:
                records.append(current)
            current = {}
        elif raw.startswith(":"):
            records.append({"comment": raw[1:].strip()})
        else:
            name, _, value = raw.partition(":")
            current[name] = value.lstrip(" ")
    return records
