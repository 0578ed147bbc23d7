"""Automations of projects, their runs and their trigger bookkeeping, in Redis.

Keys: `cd:automation:<id>` (the record), `cd:project:<id>:automations` (the project's ids), and the automation's
own `cd:automation:<id>:<suffix>` keys (runs, claimed events, the day's run counts, the pending batch, the jobs it
started and its last job), all deleted with it.

Indexes for the triggers, kept in the same transaction as every write of a record, so no trigger ever scans keys:
`cd:automations:due` (a sorted set: the enabled automations with a cron, by the epoch second their next slot is
due), `cd:automations:code-change:<host>` (the code-change automations of a code host) and
`cd:automations:watch:<host>:<digest of the repository>` (those watching one source repository).
"""

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from typing import cast

import redis
from redis.lock import Lock

from service.automations import schedule
from service.automations.model import Automation, AutomationRun, AutomationSpec, TriggerType
from service.clock import now_iso, parse_iso
from service.errors import AutomationLimitReached, AutomationNotFound, InvalidRequest
from service.ids import UlidGenerator, new_id
from service.store.codec import dump, load
from service.store.replies import text, transaction

RUNS_KEPT = 500  # runs in an automation's history, newest first
EVENT_MEMORY_SECONDS = 30 * 24 * 3600  # a delivery repeated within this is still seen as a repeat
DAY_TTL_SECONDS = 2 * 24 * 3600
JOBS_KEPT = 200  # the jobs an automation started that are looked at for its open pull requests
BATCH_MAX = 200  # changes waiting for a batched run
SECRET_PREFIX = "cdah_"
_SUFFIXES = ("runs", "run-records", "events", "event-runs", "message-runs", "batch", "jobs", "last-job", "starting")
STARTING_SECONDS = 60  # how long one start may hold the automation (a start is a few Redis round trips)


def automation_key(automation_id: str) -> str:
    return f"cd:automation:{automation_id}"


def _index_key(project_id: str) -> str:
    return f"cd:project:{project_id}:automations"


def _own(automation_id: str, suffix: str) -> str:
    return f"cd:automation:{automation_id}:{suffix}"


DUE_KEY = "cd:automations:due"
INDEXED_KEY = "cd:automations:indexed"  # set once every automation is in the indexes


def _code_change_key(host: str) -> str:
    return f"cd:automations:code-change:{host}"


def watch_key(host: str, repository: str) -> str:
    """The set of automations watching `repository` on `host` (GitHub names compared without case)."""
    name = repository if host == "local" else repository.lower()
    return f"cd:automations:watch:{host}:{hashlib.sha256(name.encode()).hexdigest()}"


def _day_key(automation_id: str, day: str) -> str:
    return f"cd:automation:{automation_id}:day:{day}"


def _today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def secret_digest(secret: str) -> str:
    """What is stored of a webhook secret: its SHA-256 (a secret is 256 random bits, so no slow hash is needed)."""
    return hashlib.sha256(secret.encode()).hexdigest()


class AutomationStore:
    def __init__(self, client: redis.Redis, ids: UlidGenerator) -> None:
        self._redis = client
        self._ids = ids

    # -- automations -------------------------------------------------------------------------

    def create(
        self,
        project_id: str,
        *,
        host: str,
        account: str,
        spec: AutomationSpec,
        template: str | None = None,
        limit: int | None = None,
    ) -> tuple[Automation, str | None]:
        """Add an automation to the project; AutomationLimitReached past `limit` (checked atomically). A webhook
        trigger gets a secret: returned here once, only its digest kept."""
        stamp = now_iso()
        secret = _new_secret() if spec.trigger.type.value == "webhook" else None
        automation = Automation(
            id=new_id("auto", self._ids),
            project_id=project_id,
            host=host,
            account=account,
            name=spec.name,
            prompt=spec.prompt,
            trigger=spec.trigger,
            options=spec.options,
            enabled=spec.enabled,
            template=template,
            created_at=stamp,
            updated_at=stamp,
            webhook_secret=None if secret is None else secret_digest(secret),
            # The first slot after creation runs (not one from before it existed).
            last_slot=stamp if spec.trigger.cron is not None else None,
        )
        members = _index_key(project_id)

        def attempt(pipe) -> Automation:
            if limit is not None and pipe.scard(members) >= limit:
                raise AutomationLimitReached(
                    f"project {project_id} has {limit} automations, as many as it may "
                    "(COPYDESK_MAX_AUTOMATIONS); delete one first"
                )
            pipe.multi()
            pipe.set(automation_key(automation.id), dump(automation))
            pipe.sadd(members, automation.id)
            _reindex(pipe, None, automation)
            return automation

        return transaction(self._redis, attempt, members), secret

    def find(self, automation_id: str) -> Automation | None:
        if not automation_id.startswith("auto_") or len(automation_id) > 64:
            return None
        return load(Automation, self._redis.get(automation_key(automation_id)))

    def get(self, project_id: str, automation_id: str) -> Automation:
        """The project's automation, or AutomationNotFound (also for another project's)."""
        automation = self.find(automation_id)
        if automation is None or automation.project_id != project_id:
            raise AutomationNotFound(f"no automation {automation_id} in project {project_id}")
        return automation

    def of_project(self, project_id: str) -> list[Automation]:
        """The project's automations, oldest first."""
        ids = sorted(text(i) for i in cast(set, self._redis.smembers(_index_key(project_id))))
        raws = self._redis.mget([automation_key(i) for i in ids]) if ids else []
        return [load(Automation, raw) for raw in raws if raw is not None]

    def update(self, project_id: str, automation_id: str, spec: AutomationSpec) -> tuple[Automation, str | None]:
        """Replace name, prompt, trigger, options and enabled. A trigger that becomes a webhook gets a secret
        (returned once); one that stops being a webhook loses it."""
        new_secret: list[str] = []

        def change(automation: Automation) -> None:
            becomes_webhook = spec.trigger.type.value == "webhook"
            if becomes_webhook and automation.webhook_secret is None:
                new_secret.append(_new_secret())
                automation.webhook_secret = secret_digest(new_secret[0])
            elif not becomes_webhook:
                automation.webhook_secret = None
            if spec.trigger != automation.trigger or (spec.enabled and not automation.enabled):
                # A new trigger, or one switched on again, starts from now: slots and commits of the time it was
                # off or different are not run afterwards.
                automation.cursor = None
                automation.last_slot = now_iso() if spec.trigger.cron is not None else None
            automation.name, automation.prompt, automation.trigger = spec.name, spec.prompt, spec.trigger
            automation.options, automation.enabled = spec.options, spec.enabled

        updated = self._update(project_id, automation_id, change)
        return updated, (new_secret[0] if new_secret else None)

    def rotate_secret(self, project_id: str, automation_id: str) -> tuple[Automation, str]:
        """A new webhook secret (returned once); the old one stops working at once."""
        secret = _new_secret()

        def change(automation: Automation) -> None:
            if automation.trigger.type.value != "webhook":
                raise InvalidRequest(
                    f"automation {automation_id} has a {automation.trigger.type.value} trigger: "
                    "only a webhook trigger has a secret"
                )
            automation.webhook_secret = secret_digest(secret)

        return self._update(project_id, automation_id, change), secret

    def set_cursor(self, automation_id: str, cursor: str | None) -> None:
        """Remember the last source commit seen (local code change)."""
        self._update(None, automation_id, lambda a: setattr(a, "cursor", cursor), touch=False)

    def set_last_slot(self, automation_id: str, slot: str) -> None:
        """Remember the last schedule slot run (ISO time), never going back to an earlier one (a slow process
        finishing an older slot late), and move the automation to its next slot in the due index."""

        def change(automation: Automation) -> None:
            if automation.last_slot is None or parse_iso(slot) > parse_iso(automation.last_slot):
                automation.last_slot = slot

        self._update(None, automation_id, change, touch=False)

    def due(self, now: float, *, limit: int = 100) -> list[str]:
        """The enabled automations with a cron whose next slot is due at the epoch second `now`, soonest first."""
        return [text(i) for i in cast(list, self._redis.zrangebyscore(DUE_KEY, "-inf", now, start=0, num=limit))]

    def reschedule(self, automation: Automation, now: datetime) -> None:
        """Put the automation in the due index at its first slot after `now` (it has nothing due before)."""
        if automation.trigger.cron is not None and automation.enabled:
            slot = schedule.next_slot(automation.trigger.cron, automation.trigger.time_zone, now)
            self._redis.zadd(DUE_KEY, {automation.id: slot.timestamp()}, xx=True)

    def unschedule(self, automation_id: str) -> None:
        """Take an automation out of the due index (it is gone or has no cron any more)."""
        self._redis.zrem(DUE_KEY, automation_id)

    def watching(self, host: str, repository: str) -> list[Automation]:
        """The code-change automations (enabled or not) watching `repository` on `host`, oldest first."""
        return self._load(cast(set, self._redis.smembers(watch_key(host, repository))))

    def code_change_of_host(self, host: str) -> list[Automation]:
        """Every code-change automation (enabled or not) of a code host, oldest first."""
        return self._load(cast(set, self._redis.smembers(_code_change_key(host))))

    def index_all(self, project_ids: Iterable[str]) -> int:
        """Put the automations of these projects in the trigger indexes (those made before the indexes existed);
        idempotent. How many."""
        count = 0
        for project_id in project_ids:
            for automation in self.of_project(project_id):
                pipe = self._redis.pipeline(transaction=True)
                _reindex(pipe, automation, automation)
                pipe.execute()
                count += 1
        self._redis.set(INDEXED_KEY, "1")
        return count

    def indexed(self) -> bool:
        """Whether index_all has run on this Redis."""
        return bool(self._redis.exists(INDEXED_KEY))

    def _load(self, members: set) -> list[Automation]:
        ids = sorted(text(i) for i in members)
        raws = cast(list, self._redis.mget([automation_key(i) for i in ids])) if ids else []
        return [a for a in (load(Automation, raw) for raw in raws if raw is not None) if a is not None]

    def delete(self, project_id: str, automation_id: str) -> None:
        """Delete the automation with its history and bookkeeping (the jobs it started stay)."""
        automation = self.get(project_id, automation_id)
        days = [text(k) for k in self._redis.scan_iter(match=_day_key(automation_id, "*"), count=100)]
        pipe = self._redis.pipeline(transaction=True)
        pipe.delete(automation_key(automation_id), *(_own(automation_id, s) for s in _SUFFIXES), *days)
        pipe.srem(_index_key(project_id), automation_id)
        _reindex(pipe, automation, None)
        pipe.execute()

    def delete_project(self, project_id: str) -> int:
        """Delete every automation of the project (the project is going); how many."""
        automations = self.of_project(project_id)
        for automation in automations:
            self.delete(project_id, automation.id)
        self._redis.delete(_index_key(project_id))
        return len(automations)

    def secret_matches(self, automation: Automation, given: str) -> bool:
        """Whether `given` is the automation's webhook secret (compared in constant time)."""
        if automation.webhook_secret is None or not given:
            return False
        return hmac.compare_digest(secret_digest(given), automation.webhook_secret)

    def _update(
        self, project_id: str | None, automation_id: str, change: Callable[[Automation], None], *, touch: bool = True
    ) -> Automation:
        """Read, change and write the automation in one WATCH/MULTI transaction (concurrent writers never undo
        each other); AutomationNotFound when it is gone or (given `project_id`) another project's."""
        key = automation_key(automation_id)

        def attempt(pipe) -> Automation:
            automation = load(Automation, pipe.get(key)) if automation_id.startswith("auto_") else None
            if automation is None or (project_id is not None and automation.project_id != project_id):
                raise AutomationNotFound(f"no automation {automation_id} in project {project_id}")
            before = replace(automation)
            change(automation)
            if touch:
                automation.updated_at = now_iso()
            pipe.multi()
            pipe.set(key, dump(automation))
            if _indexed(before) != _indexed(automation):
                _reindex(pipe, before, automation)
            return automation

        return transaction(self._redis, attempt, key)

    # -- runs --------------------------------------------------------------------------------

    def new_run_id(self) -> str:
        return new_id("arun", self._ids)

    def record_run(self, run: AutomationRun) -> None:
        """Add a run to the automation's history (newest first; the oldest beyond RUNS_KEPT go)."""
        order, records = _own(run.automation_id, "runs"), _own(run.automation_id, "run-records")
        pipe = self._redis.pipeline(transaction=True)
        pipe.hset(records, run.id, dump(run))
        pipe.hset(_own(run.automation_id, "event-runs"), _event_member(run.event_key), run.id)
        if run.message_id is not None:
            pipe.hset(_own(run.automation_id, "message-runs"), run.message_id, run.id)
        pipe.lpush(order, run.id)
        pipe.lrange(order, RUNS_KEPT, -1)
        pipe.ltrim(order, 0, RUNS_KEPT - 1)
        dropped = pipe.execute()[-2]  # the lrange's answer
        if dropped:
            gone = [load(AutomationRun, raw) for raw in cast(list, self._redis.hmget(records, dropped))]
            pipe = self._redis.pipeline(transaction=True)
            pipe.hdel(records, *dropped)
            keys = [_event_member(old.event_key) for old in gone if old is not None]
            if keys:
                pipe.hdel(_own(run.automation_id, "event-runs"), *keys)
            rounds = [old.message_id for old in gone if old is not None and old.message_id is not None]
            if rounds:
                pipe.hdel(_own(run.automation_id, "message-runs"), *rounds)
            pipe.execute()

    def run(self, automation_id: str, run_id: str) -> AutomationRun | None:
        return load(AutomationRun, self._redis.hget(_own(automation_id, "run-records"), run_id))

    def runs(
        self, automation_id: str, *, limit: int = 20, cursor: str | None = None
    ) -> tuple[list[AutomationRun], str | None]:
        """A page of the automation's runs, newest first, after the run `cursor` (the previous page's last id)."""
        order = _own(automation_id, "runs")
        start = 0
        if cursor is not None:
            position = self._redis.lpos(order, cursor) if cursor.startswith("arun_") else None
            if position is None:
                raise InvalidRequest("cursor is not one this API returned for this automation", field="cursor")
            start = int(cast(int, position)) + 1
        ids = [text(i) for i in cast(list, self._redis.lrange(order, start, start + limit))]
        page = ids[:limit]
        raws = cast(list, self._redis.hmget(_own(automation_id, "run-records"), page)) if page else []
        runs = [load(AutomationRun, raw) for raw in raws if raw is not None]
        return runs, (page[-1] if len(ids) > limit else None)

    def event_run(self, automation_id: str, key: str) -> AutomationRun | None:
        """The run the event `key` made, while it is kept."""
        run_id = self._redis.hget(_own(automation_id, "event-runs"), _event_member(key))
        return None if run_id is None else self.run(automation_id, text(run_id))

    def message_runs(self, automation_id: str, message_ids: list[str]) -> dict[str, AutomationRun]:
        """The runs that added these rounds (messages) to the automation's jobs, by message id, while kept."""
        if not message_ids:
            return {}
        run_ids = cast(list, self._redis.hmget(_own(automation_id, "message-runs"), message_ids))
        found = {m: text(r) for m, r in zip(message_ids, run_ids, strict=True) if r is not None}
        if not found:
            return {}
        raws = cast(list, self._redis.hmget(_own(automation_id, "run-records"), list(found.values())))
        runs = {m: load(AutomationRun, raw) for m, raw in zip(found, raws, strict=True) if raw is not None}
        return {m: run for m, run in runs.items() if run is not None}

    def latest_run(self, automation_id: str) -> AutomationRun | None:
        runs, _ = self.runs(automation_id, limit=1)
        return runs[0] if runs else None

    def all_runs(self, automation_id: str) -> list[AutomationRun]:
        """Every run kept, newest first (at most RUNS_KEPT)."""
        return self.runs(automation_id, limit=RUNS_KEPT)[0]

    # -- trigger bookkeeping -----------------------------------------------------------------

    def starting(self, automation_id: str) -> Lock:
        """A lock held while one run of the automation starts, so that two events at once see each other's job
        (grouping and the open pull-request cap); it expires by itself if its holder dies."""
        return self._redis.lock(
            _own(automation_id, "starting"), timeout=STARTING_SECONDS, blocking_timeout=STARTING_SECONDS
        )

    def claim_event(self, automation_id: str, key: str) -> bool:
        """True for the first claim of the event `key` by this automation; False for a repeat (a re-delivery)."""
        events = _own(automation_id, "events")
        member = _event_member(key)
        moment = time.time()
        pipe = self._redis.pipeline(transaction=True)
        pipe.zremrangebyscore(events, "-inf", moment - EVENT_MEMORY_SECONDS)
        pipe.zadd(events, {member: moment}, nx=True)
        return bool(pipe.execute()[1])

    def take_run_slot(self, automation_id: str, per_day: int) -> bool:
        """Count one more run today (UTC); False, counting nothing, when `per_day` were made already."""
        key = _day_key(automation_id, _today())
        pipe = self._redis.pipeline(transaction=True)
        pipe.incr(key)
        pipe.expire(key, DAY_TTL_SECONDS)
        if int(pipe.execute()[0]) <= per_day:
            return True
        self._redis.decr(key)
        return False

    def give_back_run_slot(self, automation_id: str) -> None:
        """Uncount a run taken today that did not start after all (the intake refused it)."""
        self._redis.decr(_day_key(automation_id, _today()))

    def runs_today(self, automation_id: str) -> int:
        return int(cast(bytes, self._redis.get(_day_key(automation_id, _today()))) or 0)

    def add_to_batch(self, automation_id: str, changes: list[dict]) -> int:
        """Keep source changes for the next batched run (the newest BATCH_MAX); how many wait now."""
        if not changes:
            return int(self._redis.llen(_own(automation_id, "batch")))
        key = _own(automation_id, "batch")
        pipe = self._redis.pipeline(transaction=True)
        pipe.rpush(key, *(json.dumps(c, sort_keys=True) for c in changes))
        pipe.ltrim(key, -BATCH_MAX, -1)
        pipe.llen(key)
        return int(pipe.execute()[2])

    def take_batch(self, automation_id: str) -> list[dict]:
        """The changes waiting for a batched run, oldest first, removed in the same step."""
        key = _own(automation_id, "batch")
        pipe = self._redis.pipeline(transaction=True)
        pipe.lrange(key, 0, -1)
        pipe.delete(key)
        return [json.loads(raw) for raw in pipe.execute()[0]]

    def batch(self, automation_id: str) -> list[dict]:
        """The changes waiting for a batched run, oldest first, left in place (see drop_from_batch)."""
        return [json.loads(raw) for raw in cast(list, self._redis.lrange(_own(automation_id, "batch"), 0, -1))]

    def drop_from_batch(self, automation_id: str, covered: Callable[[dict], bool]) -> int:
        """Remove the waiting changes a run covered (`covered` says which), keeping any added meanwhile; how many
        went."""
        key = _own(automation_id, "batch")

        def attempt(pipe) -> int:
            raws = cast(list, pipe.lrange(key, 0, -1))
            kept = [raw for raw in raws if not covered(json.loads(raw))]
            pipe.multi()
            pipe.delete(key)
            if kept:
                pipe.rpush(key, *kept)
            return len(raws) - len(kept)

        return transaction(self._redis, attempt, key)

    def note_job(self, automation_id: str, job_id: str) -> None:
        """Remember a job the automation started: its last (for grouping) and among those with pull requests."""
        jobs = _own(automation_id, "jobs")
        pipe = self._redis.pipeline(transaction=True)
        pipe.set(_own(automation_id, "last-job"), job_id)
        pipe.zadd(jobs, {job_id: time.time()})
        pipe.zremrangebyrank(jobs, 0, -JOBS_KEPT - 1)
        pipe.execute()

    def last_job(self, automation_id: str) -> str | None:
        raw = self._redis.get(_own(automation_id, "last-job"))
        return None if raw is None else text(raw)

    def jobs(self, automation_id: str) -> list[str]:
        """The jobs the automation started (the newest JOBS_KEPT), newest first."""
        return [text(i) for i in cast(list, self._redis.zrevrange(_own(automation_id, "jobs"), 0, -1))]

    def forget_jobs(self, automation_id: str, job_ids: list[str]) -> None:
        """Stop looking at jobs that can no longer have an open pull request (archived or deleted)."""
        if job_ids:
            self._redis.zrem(_own(automation_id, "jobs"), *job_ids)


def _indexed(automation: Automation) -> tuple:
    """What the trigger indexes depend on."""
    trigger = automation.trigger
    return (
        automation.host,
        automation.enabled,
        trigger.type,
        trigger.repository,
        trigger.cron,
        trigger.time_zone,
        automation.last_slot,
    )


def _reindex(pipe, old: Automation | None, new: Automation | None) -> None:
    """Queue on `pipe` the index changes from `old` to `new` (None: not there)."""
    if old is not None:
        pipe.zrem(DUE_KEY, old.id)
        if old.trigger.type is TriggerType.CODE_CHANGE and old.trigger.repository is not None:
            pipe.srem(_code_change_key(old.host), old.id)
            pipe.srem(watch_key(old.host, old.trigger.repository), old.id)
    if new is None:
        return
    trigger = new.trigger
    if trigger.cron is not None and new.enabled:
        since = parse_iso(new.last_slot or new.created_at)
        pipe.zadd(DUE_KEY, {new.id: schedule.next_slot(trigger.cron, trigger.time_zone, since).timestamp()})
    if trigger.type is TriggerType.CODE_CHANGE and trigger.repository is not None:
        pipe.sadd(_code_change_key(new.host), new.id)
        pipe.sadd(watch_key(new.host, trigger.repository), new.id)


def _event_member(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)
