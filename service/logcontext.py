"""The request or job a piece of work belongs to, carried into every log record it writes."""

import contextvars
import logging
from contextlib import contextmanager

_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
_job_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("job_id", default=None)


@contextmanager
def job(job_id: str):
    """Tag the log records written inside the block with `job_id`."""
    token = _job_id.set(job_id)
    try:
        yield
    finally:
        _job_id.reset(token)


def set_request(request_id: str | None) -> None:
    """Tag this thread's log records with a request id (None clears it); the web edge calls this."""
    _request_id.set(request_id)


class ContextFilter(logging.Filter):
    """Adds `request_id` and `job_id` attributes to every record (None when not in such work)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        record.job_id = _job_id.get()
        return True
