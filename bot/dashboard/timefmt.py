"""Times as people read them on the dashboard: "in 3 days", "2 hours ago", "Nov 23, 14:05 UTC"."""

from service.clock import parse_iso


def span(seconds: float) -> str:
    """A rounded length of time: "45 seconds", "3 minutes", "5 hours", "30 days"."""
    seconds = abs(int(seconds))
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def until(moment: str | None, now: str) -> str:
    """How long from `now` to `moment` (both ISO timestamps)."""
    return span((parse_iso(moment) - parse_iso(now)).total_seconds()) if moment else ""


def when(moment: str | None) -> str:
    """A short absolute UTC time, or an em dash for none."""
    return parse_iso(moment).strftime("%b %d %Y, %H:%M UTC") if moment else "—"
