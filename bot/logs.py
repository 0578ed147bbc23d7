"""Logging set-up: readable lines by default, one JSON object per line in production."""

import json
import logging
import sys

from service.logcontext import ContextFilter


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name,
                 "message": record.getMessage()}
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
        tags = " ".join(f"[{value}]" for value in (getattr(record, "request_id", None),
                                                    getattr(record, "job_id", None)) if value)
        line = super().format(record)
        return f"{line} {tags}" if tags else line


def configure(json_lines: bool, level: int = logging.INFO) -> None:
    """Send log records to stderr in the chosen format."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
