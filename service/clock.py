"""Timestamps as the API shows them: ISO 8601, UTC, millisecond precision, a trailing Z."""

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path


def now() -> datetime:
    """The current time in UTC."""
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """Format a datetime as the API's timestamp string."""
    # isoformat is C and half strftime's cost (every API request stamps a key's use); "+00:00" becomes "Z".
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def now_iso() -> str:
    """The current time as the API's timestamp string."""
    return iso(now())


def parse_iso(text: str) -> datetime:
    """Read back a timestamp written by `iso`."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def clock_of(path: Path | None) -> Callable[[], datetime]:
    """The clock a worker's automation triggers read: the real one, or (tests only, COPYDESK_TEST_CLOCK_FILE) the
    timestamp written in the file at `path`, read again at each call, so a test moves time for every process."""
    if path is None:
        return now
    source = path

    def read() -> datetime:
        return parse_iso(source.read_text().strip())  # OSError, ValueError: the test has not set it (yet)

    return read
