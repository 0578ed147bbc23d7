"""The triggers that fire by themselves: each worker's tick runs the schedule slots that are due and, one worker at a
time, looks for new commits in local source repositories.

Only workers tick, never web processes: workers own background work (sweeps, fan-out, upkeep), and a web process
may be one of many behind a balancer, scaled to requests, or stopped between them. Every worker ticks (none is
special, so no single one must be alive); a claim per slot in Redis lets one of them run it.
"""

import logging
import os
import socket
import uuid
from datetime import datetime, timedelta

import redis

from service.automations import schedule
from service.automations.codechange import run_batch, scan_local, slot_key
from service.automations.events import TriggerEvent
from service.automations.model import Automation, AutomationRun, ChangeMode, TriggerType
from service.automations.runs import fire
from service.clock import iso, parse_iso
from service.errors import AutomationNotFound
from service.faults import Faults
from service.services import Services
from service.store.replies import text, transaction

log = logging.getLogger(__name__)

# A slot's claim lapses after this: a process that died holding it leaves the slot to another after that long
# (`fire` dedupes by the slot's event key, so a slot whose run had started is not run twice).
CLAIM_TTL = timedelta(minutes=10)
DUE_PER_TICK = 100  # automations looked at per tick; the rest, due later in the index, come next tick
LOCAL_SCAN_TURN = "cd:automations:local-scan:turn"
# A scan holds the turn for this many ticks, renewed after each automation it scanned, and gives it back when done
# (the next tick's scan can be anyone's); a process that died holding it loses it that soon. A scan that outlasts
# it (a git command stuck near its own time-out) may overlap another: harmless, as both fire by event key.
LOCAL_SCAN_HOLD_TICKS = 3
TICK_MARK_SECONDS_FACTOR = 3  # a worker's tick mark outlives three ticks


def tick(
    services: Services, now: datetime, *, max_diff_chars: int, faults: Faults = Faults(), interval: int = 30
) -> list[AutomationRun]:
    """One tick of this process: the due schedule slots, then the local scan if it is this process's turn."""
    if not services.automations.indexed():  # automations made before the trigger indexes existed
        count = services.automations.index_all(project.id for project in services.projects.all())
        log.info("%d automation(s) put in the trigger indexes", count)
    runs = tick_schedules(services, now)
    runs += scan_local_turn(
        services, max_diff_chars=max_diff_chars, faults=faults, hold_seconds=LOCAL_SCAN_HOLD_TICKS * interval
    )
    mark_tick(services.redis, now, interval)
    return runs


def tick_schedules(services: Services, now: datetime) -> list[AutomationRun]:
    """Run each enabled automation whose cron has a slot due at `now` (found in the store's due index), once per
    slot across every process; slots missed meanwhile give one run."""
    runs = []
    for automation_id in services.automations.due(now.timestamp(), limit=DUE_PER_TICK):
        try:
            run = _tick_one(services, automation_id, now)
        except redis.RedisError:
            raise
        except Exception:  # one automation's failure must not stop the others' slots; its claim lapses, it retries
            log.exception("automation %s: its schedule slot failed", automation_id)
            continue
        if run is not None:
            runs.append(run)
    return runs


def _tick_one(services: Services, automation_id: str, now: datetime) -> AutomationRun | None:
    store = services.automations
    automation = store.find(automation_id)
    if automation is None or automation.trigger.cron is None or not automation.enabled:
        store.unschedule(automation_id)
        return None
    cron, zone = automation.trigger.cron, automation.trigger.time_zone
    last = parse_iso(automation.last_slot or automation.created_at)
    slot = schedule.due_slot(cron, zone, last, now)
    if slot is None:  # run by another process since it was listed, or the index ran ahead of this clock
        store.reschedule(automation, max(now, last))
        return None
    if not schedule.claim_slot(services.redis, automation.id, slot, ttl=CLAIM_TTL):
        return None  # another process runs this slot
    run = run_slot(services, automation, slot)
    try:
        store.set_last_slot(automation.id, iso(slot))
    except AutomationNotFound:
        pass  # deleted while its slot ran: nothing to remember
    return run


def run_slot(services: Services, automation: Automation, slot: datetime) -> AutomationRun:
    """The run of one slot: a batched code-change automation's run over its batch, or a schedule's run."""
    trigger = automation.trigger
    if trigger.type is TriggerType.CODE_CHANGE and trigger.mode is ChangeMode.BATCHED:
        return run_batch(services, automation, slot)
    return fire(services, automation, TriggerEvent(kind=TriggerType.SCHEDULE.value, key=slot_key(automation, slot)))


def scan_local_turn(
    services: Services, *, max_diff_chars: int, faults: Faults = Faults(), hold_seconds: int = 90
) -> list[AutomationRun]:
    """The local scan (codechange.scan_local) if no other process is scanning: the cursors are read and then
    written, so two scans at once could move one back."""
    client = services.redis
    token = uuid.uuid4().hex
    hold = max(1, hold_seconds)
    if not client.set(LOCAL_SCAN_TURN, token, nx=True, ex=hold):
        return []
    try:
        return scan_local(
            services, max_diff_chars=max_diff_chars, faults=faults, renew=lambda: _turn(client, token, hold)
        )
    finally:
        _turn(client, token, None)


def _turn(client: redis.Redis, token: str, hold: int | None) -> bool:
    """Keep this process's turn `hold` seconds more, or (None) end it; False when it lapsed and is another's."""

    def attempt(pipe) -> bool:
        held = pipe.get(LOCAL_SCAN_TURN)
        mine = held is not None and text(held) == token
        pipe.multi()
        if mine and hold is None:
            pipe.delete(LOCAL_SCAN_TURN)
        elif mine:
            pipe.expire(LOCAL_SCAN_TURN, hold)
        return mine

    return transaction(client, attempt, LOCAL_SCAN_TURN)


def tick_mark_key(process: str) -> str:
    return f"cd:automations:tick:{process}"


def process_name() -> str:
    """This process as the tick marks name it: host and pid."""
    return f"{socket.gethostname()}-{os.getpid()}"


def mark_tick(client: redis.Redis, now: datetime, interval: int) -> None:
    """Leave the time this process last ticked for (its clock's), for a while: shows the tick is alive."""
    client.set(tick_mark_key(process_name()), iso(now), ex=max(1, interval * TICK_MARK_SECONDS_FACTOR))
