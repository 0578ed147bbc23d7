"""Timestamps as the API shows them: ISO 8601, UTC, millisecond precision, a trailing Z."""

from datetime import UTC, datetime


def now() -> datetime:
    """The current time in UTC."""
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """Format a datetime as the API's timestamp string."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def now_iso() -> str:
    """The current time as the API's timestamp string."""
    return iso(now())


def parse_iso(text: str) -> datetime:
    """Read back a timestamp written by `iso`."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
