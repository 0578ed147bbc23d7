"""Automation schedules: cron checks, due slots (missed ones run once, summer time both ways), one claim per slot."""

import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import redis

from service.automations.schedule import FIRST_SLOT_GRACE, check_cron, claim_slot, due_slot, latest_slot, next_slot
from service.errors import InvalidRequest

BERLIN = "Europe/Berlin"


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    "expr",
    ["0 9 * * 1", "*/5 * * * *", "@daily", "@hourly", "0 9 * * MON-FRI", "30 2 * * *", "  0  9 * * 1 ", "0 0 L * *"],
)
def test_standard_expressions_pass(expr):
    check_cron(expr, BERLIN)


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("61 * * * *", "not a valid cron expression"),
        ("a b c d e", "not a valid cron expression"),
        ("0 0 30 2 *", "not a valid cron expression"),  # parses, but never comes
        ("0 9 * *", "five fields"),
        ("0 0 9 * * 1", "five fields"),  # seconds are not cron
        ("", "five fields"),
        ("@reboot", "five fields"),
        ("R 9 * * *", "H or R"),  # croniter's random minute: each process would get another schedule
        ("H 9 * * *", "H or R"),
        ("* * * * *", "every minute"),
        ("*/4 * * * *", "every 4 minutes"),
        ("0,2 9 * * *", "every 2 minutes"),
        ("0,59 0,23 * * *", "every minute"),  # 23:59 then 00:00 the next day
    ],
)
def test_bad_or_too_frequent_expressions_are_refused_clearly(expr, words):
    with pytest.raises(InvalidRequest) as caught:
        check_cron(expr, "UTC")
    assert words in caught.value.detail
    assert caught.value.field == "cron"


def test_the_minimum_interval_is_a_parameter():
    check_cron("* * * * *", "UTC", min_interval=timedelta(minutes=1))
    with pytest.raises(InvalidRequest, match="every 30 minutes"):
        check_cron("0,30 * * * *", "UTC", min_interval=timedelta(hours=1))


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "../../etc/passwd", "/usr/share/zoneinfo/UTC", "europe berlin"])
def test_bad_time_zones_are_refused_clearly(zone):
    with pytest.raises(InvalidRequest, match="not an IANA time zone") as caught:
        check_cron("0 9 * * *", zone)
    assert caught.value.field == "timeZone"


def test_next_and_latest_slot_in_a_zone():
    # Monday 9:00 in Berlin is 8:00 UTC in winter.
    now = at(2026, 1, 7, 12, 0)  # a Wednesday
    assert next_slot("0 9 * * 1", BERLIN, now) == at(2026, 1, 12, 8, 0)
    assert latest_slot("0 9 * * 1", BERLIN, now) == at(2026, 1, 5, 8, 0)
    # A slot exactly at `now` is the latest, not the next.
    assert latest_slot("0 9 * * 1", BERLIN, at(2026, 1, 12, 8, 0)) == at(2026, 1, 12, 8, 0)
    assert next_slot("0 9 * * 1", BERLIN, at(2026, 1, 12, 8, 0)) == at(2026, 1, 19, 8, 0)
    assert next_slot("0 9 * * 1", BERLIN, now).tzinfo is UTC
    # Fractions of a second: a slot is latest only once it has come.
    just_before, just_after = at(2026, 1, 12, 7, 59, 59) + timedelta(microseconds=999_999), at(2026, 1, 12, 8, 0, 0, 1)
    assert latest_slot("0 9 * * 1", BERLIN, just_before) == at(2026, 1, 5, 8, 0)
    assert next_slot("0 9 * * 1", BERLIN, just_before) == at(2026, 1, 12, 8, 0)
    assert latest_slot("0 9 * * 1", BERLIN, just_after) == at(2026, 1, 12, 8, 0)
    assert next_slot("0 9 * * 1", BERLIN, just_after) == at(2026, 1, 19, 8, 0)


def test_naive_times_are_refused():
    with pytest.raises(ValueError, match="no time zone"):
        next_slot("0 9 * * 1", BERLIN, datetime(2026, 1, 7, 12, 0))


def test_slots_missed_while_everything_was_down_run_once():
    last = at(2026, 1, 1, 9, 0)
    now = at(2026, 1, 20, 9, 30)  # nineteen hourly-or-daily slots went by
    slot = due_slot("0 * * * *", "UTC", last, now)
    assert slot == at(2026, 1, 20, 9, 0)
    assert due_slot("0 * * * *", "UTC", slot, now) is None
    assert due_slot("0 * * * *", "UTC", slot, at(2026, 1, 20, 10, 0)) == at(2026, 1, 20, 10, 0)


def test_a_new_automation_does_not_run_a_slot_from_before_it_existed():
    # No slot run yet: only a slot within the grace counts.
    assert due_slot("0 9 * * *", "UTC", None, at(2026, 1, 5, 9, 0, 20)) == at(2026, 1, 5, 9, 0)
    assert due_slot("0 9 * * *", "UTC", None, at(2026, 1, 5, 9, 0) + FIRST_SLOT_GRACE) == at(2026, 1, 5, 9, 0)
    assert due_slot("0 9 * * *", "UTC", None, at(2026, 1, 5, 9, 0) + FIRST_SLOT_GRACE + timedelta(seconds=1)) is None
    assert due_slot("0 9 * * *", "UTC", None, at(2026, 1, 5, 15, 0)) is None
    assert due_slot("0 9 * * *", "UTC", None, at(2026, 1, 5, 15, 0), grace=timedelta(hours=7)) == at(2026, 1, 5, 9, 0)


TICK = timedelta(minutes=4)  # off the slots' minutes, so a tick comes after its slot as a real one does


def _fired(cron: str, zone: str, start: datetime, end: datetime, step: timedelta) -> list[datetime]:
    """What a worker ticking every `step` fires from `start` to `end`, remembering its last slot as the store
    would."""
    fired: list[datetime] = []
    now, last = start, start  # the automation exists from `start`
    while now <= end:
        slot = due_slot(cron, zone, last, now)
        if slot is not None:
            fired.append(slot)
            last = slot
        now += step
    return fired


def test_a_daily_slot_at_half_past_two_runs_once_on_the_spring_forward_day():
    # 2026-03-29 in Berlin: 02:00 CET becomes 03:00 CEST, so 02:30 does not exist; the slot is at the jump.
    fired = _fired("30 2 * * *", BERLIN, at(2026, 3, 27, 12, 1), at(2026, 3, 31, 12, 0), TICK)
    assert fired == [at(2026, 3, 28, 1, 30), at(2026, 3, 29, 1, 0), at(2026, 3, 30, 0, 30), at(2026, 3, 31, 0, 30)]
    assert next_slot("30 2 * * *", BERLIN, at(2026, 3, 29, 0, 0)) == at(2026, 3, 29, 1, 0)


def test_a_daily_slot_at_half_past_two_runs_once_on_the_fall_back_day():
    # 2026-10-25 in Berlin: 03:00 CEST becomes 02:00 CET, so 02:30 happens twice (00:30 and 01:30 UTC): once.
    fired = _fired("30 2 * * *", BERLIN, at(2026, 10, 23, 12, 1), at(2026, 10, 27, 12, 0), TICK)
    assert fired == [at(2026, 10, 24, 0, 30), at(2026, 10, 25, 0, 30), at(2026, 10, 26, 1, 30), at(2026, 10, 27, 1, 30)]
    # In the hour's second pass, 02:30 is behind: the next slot is the next day's.
    assert next_slot("30 2 * * *", BERLIN, at(2026, 10, 25, 1, 15)) == at(2026, 10, 26, 1, 30)
    assert latest_slot("30 2 * * *", BERLIN, at(2026, 10, 25, 1, 45)) == at(2026, 10, 25, 0, 30)


def test_slots_never_go_back_in_time_across_summer_time():
    for start in (at(2026, 3, 28, 22, 0), at(2026, 10, 24, 22, 0)):
        fired = _fired("*/15 * * * *", BERLIN, start, start + timedelta(hours=6), TICK)
        assert fired == sorted(set(fired))
        assert all(b - a >= timedelta(minutes=15) for a, b in zip(fired, fired[1:], strict=False))


def test_claim_slot_has_one_winner_among_threads(redis_url):
    slot = at(2026, 1, 5, 9, 0)
    barrier = threading.Barrier(8)
    results: list[bool] = []

    def claim() -> None:
        client = redis.Redis.from_url(redis_url)
        try:
            barrier.wait(timeout=10)
            results.append(claim_slot(client, "auto_1", slot))
        finally:
            client.close()

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(results) == [False] * 7 + [True]


CLAIM = """
import sys
from datetime import datetime
import redis
from service.automations.schedule import claim_slot
client = redis.Redis.from_url(sys.argv[1])
print(claim_slot(client, sys.argv[2], datetime.fromisoformat(sys.argv[3])))
client.close()
"""


def test_claim_slot_has_one_winner_among_processes(redis_url, redis_client):
    slot = at(2026, 1, 5, 9, 0)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIM, redis_url, "auto_2", slot.isoformat()], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    results = [proc.communicate(timeout=60)[0].strip() for proc in procs]
    assert sorted(results) == ["False"] * 3 + ["True"]
    # Another slot, or another automation, is another claim; the same moment in another zone is the same slot.
    assert claim_slot(redis_client, "auto_2", slot + timedelta(hours=1))
    assert claim_slot(redis_client, "auto_3", slot)
    assert not claim_slot(redis_client, "auto_2", slot.astimezone(ZoneInfo(BERLIN)))
    # The claim expires by itself.
    assert 0 < redis_client.ttl("cd:automation:auto_2:slot:2026-01-05T09:00:00.000Z") <= 2 * 86400
