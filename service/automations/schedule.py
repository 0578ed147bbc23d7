"""Cron schedules in a time zone: checking them, finding the slot that is due, and claiming it once in Redis.

Slots are computed on the zone's wall clock and then placed in UTC. Across a change to summer time a wall time
that does not exist (02:30 in Europe/Berlin on the last Sunday of March) falls on the moment the clocks jump
(03:00 local), as cron does; across the change back a wall time that happens twice (02:30 on the last Sunday of
October) is one slot, the first. So a daily schedule runs once on both days, and slots never go back in time.
"""

import re
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import redis
from croniter import CroniterError, croniter

from service.clock import iso
from service.errors import InvalidRequest

# Why a floor: every slot is a model run (tokens, a worker for minutes, perhaps a pull request round); a schedule
# every minute would spend the account's budget and the workers on one automation, and runs would overlap.
MIN_INTERVAL = timedelta(minutes=5)
# A new automation (no slot run yet) runs the slot due now only if it came at most this long ago: the worker's
# upkeep looks every few seconds, so a slot that just passed is caught, while creating an automation never runs a
# slot from an hour ago. Callers that know when the automation was created can pass that as `last_slot` instead.
FIRST_SLOT_GRACE = timedelta(minutes=1)
# A claim outlives the moments several processes may see the same slot due (until the winner records it).
CLAIM_TTL = timedelta(days=2)
ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# croniter's own extensions that give each process a different schedule ("R": random, "H": hashed): refused.
_NOT_STANDARD = re.compile(r"(?<![A-Za-z])[HhRr](?![A-Za-z])")
_FIELDS = "minute hour day-of-month month day-of-week"


def check_cron(expr: str, time_zone: str, *, min_interval: timedelta = MIN_INTERVAL) -> None:
    """Refuse (InvalidRequest) a cron expression that is not five standard fields or an @alias, a time zone that
    is not an IANA name, or a schedule whose slots can come closer together than `min_interval`."""
    _zone(time_zone)
    fields = _standard(expr)
    try:
        parsed = croniter(fields, datetime(2000, 1, 1))
        parsed.get_next(datetime)  # "0 0 30 2 *" parses but never comes
    except (CroniterError, ValueError, KeyError) as exc:
        raise InvalidRequest(f"`cron` {expr!r} is not a valid cron expression: {exc}", field="cron") from None
    gap = _shortest_gap(parsed.expanded[0], parsed.expanded[1])
    if gap < min_interval:
        raise InvalidRequest(
            f"`cron` {expr!r} runs as often as every {_minutes(gap)}; automations may run at most "
            f"every {_minutes(min_interval)} (each run is a model run)",
            field="cron",
        )


def next_slot(cron: str, time_zone: str, now: datetime) -> datetime:
    """The first slot after `now`, in UTC."""
    zone, now = _zone(time_zone), _utc(now)
    walk = croniter(_standard(cron), _wall(now, zone))
    while True:
        # A wall time later than now's can still be earlier in UTC: the first pass of an hour that repeats.
        slot = _instant(walk.get_next(datetime), zone)
        if slot > now:
            return slot


def latest_slot(cron: str, time_zone: str, now: datetime) -> datetime:
    """The last slot at or before `now`, in UTC."""
    zone, now = _zone(time_zone), _utc(now)
    wall = _wall(now, zone)
    # croniter's previous is strictly before its start: the next whole second after `wall` lets `wall` itself count.
    walk = croniter(_standard(cron), wall.replace(microsecond=0) + timedelta(seconds=1))
    slot = _instant(walk.get_prev(datetime), zone)  # at or before `wall`, so at or before `now`
    forward = croniter(_standard(cron), wall)
    while (later := _instant(forward.get_next(datetime), zone)) <= now:
        slot = later  # in the second pass of a repeated hour, slots just after `wall` already happened
    return slot


def due_slot(
    cron: str, time_zone: str, last_slot: datetime | None, now: datetime, *, grace: timedelta = FIRST_SLOT_GRACE
) -> datetime | None:
    """The slot to run now: the latest one at or before `now` if it is after `last_slot`, else None.

    Slots missed while nothing ran give that one slot, not one run each. Without a `last_slot` (nothing run
    yet) the latest slot counts only if it is at most `grace` old, so a new automation does not run at once
    for a slot from before it existed.
    """
    slot = latest_slot(cron, time_zone, now)
    if last_slot is None:
        return slot if _utc(now) - slot <= grace else None
    return slot if slot > _utc(last_slot) else None


def claim_slot(client: redis.Redis, automation_id: str, slot: datetime, *, ttl: timedelta = CLAIM_TTL) -> bool:
    """True for exactly one caller per automation and slot, across every process sharing `client`'s Redis."""
    key = f"cd:automation:{automation_id}:slot:{iso(_utc(slot))}"
    return bool(client.set(key, "1", nx=True, ex=int(ttl.total_seconds())))


def _standard(expr: str) -> str:
    """The five cron fields of `expr` (aliases expanded), or InvalidRequest."""
    text = " ".join(expr.split())
    text = ALIASES.get(text.lower(), text)
    fields = text.split(" ")
    if len(fields) != 5 or not text:
        raise InvalidRequest(
            f'`cron` {expr[:100]!r} must have five fields ({_FIELDS}), e.g. "0 9 * * 1", or be '
            f"one of {', '.join(ALIASES)}",
            field="cron",
        )
    if _NOT_STANDARD.search(text):
        raise InvalidRequest(
            f"`cron` {expr!r} uses H or R, which are not standard cron; give the minutes and hours explicitly",
            field="cron",
        )
    return text


@cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def _zone(name: str) -> ZoneInfo:
    # Only names in the zone database: ZoneInfo would also try a path made of any other text.
    if name not in _zone_names():
        raise InvalidRequest(
            f'`timeZone` {name[:100]!r} is not an IANA time zone name such as "Europe/Berlin" or "UTC"',
            field="timeZone",
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidRequest(f"`timeZone` {name!r} cannot be loaded on this machine", field="timeZone") from None


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError(f"{moment!r} has no time zone; schedules take aware datetimes")
    return moment.astimezone(UTC)


def _wall(moment: datetime, zone: ZoneInfo) -> datetime:
    """`moment` as the zone's wall clock shows it, without a time zone (what croniter walks on)."""
    return moment.astimezone(zone).replace(tzinfo=None)


def _instant(wall: datetime, zone: ZoneInfo) -> datetime:
    """The UTC moment of a wall time: the first when it happens twice, the jump when it does not happen."""
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if _wall(first, zone) == wall:
        return first
    # In the gap: fold=1 reads the wall time with the later offset, which lands before the jump; fold=0 after it.
    low = int(wall.replace(tzinfo=zone, fold=1).timestamp())
    high = int(first.timestamp())
    while high - low > 1:  # the jump is the first second whose wall time is past `wall`
        middle = (low + high) // 2
        if _wall(datetime.fromtimestamp(middle, UTC), zone) >= wall:
            high = middle
        else:
            low = middle
    return datetime.fromtimestamp(high, UTC)


def _shortest_gap(minutes: list, hours: list) -> timedelta:
    """The shortest time between two slots of a day's minute and hour fields, counting the step over midnight
    (checked for every expression: which days follow one another is left out, to stay simple and strict)."""
    minute_values = range(60) if minutes == ["*"] else sorted(int(m) for m in minutes)
    hour_values = range(24) if hours == ["*"] else sorted(int(h) for h in hours)
    times = [h * 60 + m for h in hour_values for m in minute_values]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)] + [times[0] + 24 * 60 - times[-1]]
    return timedelta(minutes=min(gaps))


def _minutes(span: timedelta) -> str:
    count = int(span.total_seconds() // 60)
    return "minute" if count == 1 else f"{count} minutes"
