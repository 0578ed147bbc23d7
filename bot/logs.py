"""Logging set-up: readable lines by default, one JSON object per line in production."""

import json
import logging
import sys
import threading

from service.logcontext import ContextFilter


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in ("request_id", "job_id"):
            if getattr(record, name, None):
                entry[name] = getattr(record, name)
        # A line's own fields (a run's outcome, a request's status) sit beside the message, never over it.
        for name, value in (getattr(record, "fields", None) or {}).items():
            entry.setdefault(name, value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        tags = " ".join(
            f"[{value}]" for value in (getattr(record, "request_id", None), getattr(record, "job_id", None)) if value
        )
        line = super().format(record)
        return f"{line} {tags}" if tags else line


def configure(json_lines: bool, level: int = logging.INFO) -> None:
    """Send log records to stderr in the chosen format; Python's warnings too, and in JSON mode uncaught
    exceptions (a traceback printed as is would be many lines that are not JSON)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.captureWarnings(True)
    if json_lines:
        sys.excepthook = _log_uncaught
        threading.excepthook = lambda hook: _log_uncaught(
            hook.exc_type, hook.exc_value, hook.exc_traceback, thread=hook.thread
        )


def _log_uncaught(exc_type, exc_value, traceback, thread=None) -> None:
    if issubclass(exc_type, KeyboardInterrupt | SystemExit):
        return
    where = f" in thread {thread.name}" if thread is not None else ""
    logging.getLogger("copydesk").critical("uncaught exception%s", where, exc_info=(exc_type, exc_value, traceback))
