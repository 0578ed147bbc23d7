"""`copydesk doctor` and the start-up checks of `copydesk web` and `copydesk worker`: what is wrong, and the fix."""

import json
import logging
import sys
import time

import redis

from bot import heartbeat
from bot.context import Context
from service.agent.providers import missing_keys
from service.preflight import Check, Status, failed, run_checks
from service.settings import Settings
from service.store import schema
from service.store.workers import STALE_AFTER_BEATS, WorkerBeat, WorkerRegistry

log = logging.getLogger("copydesk.startup")


def checks(ctx: Context, *, redis_required: bool) -> list[Check]:
    """Every start-up check for the settings of `ctx`."""
    return run_checks(
        ctx.settings,
        ctx.services.redis,
        ctx.git,
        ctx.models(),
        missing_keys(ctx.settings),
        redis_required=redis_required,
    )


def startup_checks(ctx: Context, process: str) -> bool:
    """Run the checks before `process` (web, worker) starts; print errors and warnings; False when it must not
    start. An unreachable Redis is only a warning here: an outage at start is no configuration error (the worker
    and /readyz check Redis's settings at their first contact with it). Data of another schema version is refused
    in one line that says the fix."""
    found = checks(ctx, redis_required=False)
    mismatch = next((c for c in found if c.name == "schema" and c.status is Status.ERROR), None)
    if mismatch is not None:
        if ctx.settings.log_json:
            log.error("not starting: %s", mismatch.detail, extra={"fields": {"process": process, "fix": mismatch.fix}})
        else:
            print(f"copydesk {process}: not starting: {mismatch.detail}; fix: {mismatch.fix}", file=sys.stderr)
        return False
    if any(c.name == "schema" for c in found):  # Redis answered (else the worker's first contact does this)
        try:
            schema.stamp_new(ctx.services.redis)  # a new Redis starts at the current version
        except redis.RedisError:
            pass  # gone since the checks: the worker and /readyz check again at their first contact
    return report(found, process, json_lines=ctx.settings.log_json)


def report(found: list[Check], process: str, *, json_lines: bool = False) -> bool:
    """Print the errors and warnings among `found` for `process` (log them, in JSON mode); False (and say so) when
    it must not start."""
    for check in found:
        if check.status is Status.OK:
            continue
        if json_lines:
            log.log(
                logging.ERROR if check.status is Status.ERROR else logging.WARNING,
                "%s: %s",
                check.name,
                check.detail,
                extra={"fields": {"process": process, "check": check.name, "fix": check.fix}},
            )
        else:
            print(
                f"copydesk {process}: {check.status.value}: {check.name}: {check.detail}"
                + (f"\n  fix: {check.fix}" if check.fix else ""),
                file=sys.stderr,
            )
    if failed(found):
        if json_lines:
            log.error("copydesk %s: not starting; `copydesk doctor` runs these checks again", process)
        else:
            print(f"copydesk {process}: not starting; `copydesk doctor` runs these checks again", file=sys.stderr)
        return False
    return True


def doctor(ctx: Context, *, as_json: bool) -> int:
    """Print every check and the workers' heartbeats; 2 when a check failed, else 0."""
    found = checks(ctx, redis_required=True)
    try:
        workers = WorkerRegistry(ctx.services.redis).all()
    except redis.RedisError:
        workers = None  # the Redis check already says why
    now = time.time()
    if as_json:
        print(
            json.dumps(
                {
                    "ok": not failed(found),
                    "checks": [c.to_json() for c in found],
                    "workers": None if workers is None else [w.to_json(now) for w in workers],
                }
            )
        )
    else:
        width = max(len(c.name) for c in found)
        for check in found:
            print(
                f"{check.status.value:8} {check.name:{width}}  {check.detail}"
                + (f"\n{'':8} {'':{width}}  fix: {check.fix}" if check.fix else "")
            )
        print()
        print(_workers_table(workers, now))
    return 2 if failed(found) else 0


def worker_alive(settings: Settings, name: str | None, max_age: float | None) -> int:
    """The liveness probe: 0 when the worker (or one on this host) beat recently, else 1. Needs no Redis."""
    alive, why = heartbeat.probe(settings, name, max_age)
    print(why, file=sys.stdout if alive else sys.stderr)
    return 0 if alive else 1


def _workers_table(workers: list[WorkerBeat] | None, now: float) -> str:
    if workers is None:
        return "Workers: unknown (Redis is unreachable)"
    if not workers:
        return "Workers: none has published a heartbeat"
    rows = [("NAME", "STATE", "JOB", "TASK", "LAST HEARTBEAT")]
    for worker in workers:
        age = worker.age(now)
        rows.append(
            (
                worker.name,
                worker.state,
                worker.job or "-",
                worker.task or "-",
                f"{age:.0f} s ago" + (" STALE" if age > worker.stale_after else ""),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return f"Workers ({len(workers)}; stale after {STALE_AFTER_BEATS} heartbeat intervals without one):\n" + "\n".join(
        lines
    )
