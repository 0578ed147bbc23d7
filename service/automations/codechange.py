"""Code-change triggers: a change merged in a source repository reaches the automations watching it, which run at
once (per_change) or keep it for the next slot of their cron (batched); and the local host's scan for new commits.

A batch keeps whole source changes (title, description, author, link and a diff cut to BATCH_DIFF_CHARS), so the
run at the slot is built from the batch alone, without reading GitHub or the repository again; the prompt cuts
them further to its own limit, and the agent reads the whole source at the newest change's commit.
"""

import logging
from collections.abc import Callable, Iterable
from dataclasses import asdict, fields
from datetime import datetime
from pathlib import Path

from service.automations.events import SourceChange, TriggerEvent
from service.automations.localchanges import new_commits
from service.automations.model import Automation, AutomationRun, ChangeMode, TriggerType
from service.automations.runs import fire
from service.clock import iso, now_iso
from service.faults import AFTER_CHANGE_FIRED, Faults
from service.services import Services
from service.workspace.git import Git, GitError

log = logging.getLogger(__name__)

LOCAL_HOST = "local"
CODE_CHANGE = TriggerType.CODE_CHANGE.value
# What a batch keeps of each change: the prompt never shows more than COPYDESK_MAX_PROMPT_CHARS of all of them.
BATCH_DIFF_CHARS = 20_000
BATCH_BODY_CHARS = 8_000
NOTHING_MERGED = "nothing merged since the last run"
_CHANGE_FIELDS = {f.name for f in fields(SourceChange)}


def on_source_change(services: Services, host: str, repository: str, event: TriggerEvent) -> list[AutomationRun]:
    """Hand a code change in `repository` on `host` ("owner/name" on GitHub, a bare repository's path on the local
    host) to the enabled automations watching it (found in the store's index): a run each for per_change ones
    (the runs returned), the change kept in the batch of batched ones (no run until their slot)."""
    runs = []
    for automation in watchers(services, host, repository):
        run = take_change(services, automation, event)
        if run is not None:
            runs.append(run)
    return runs


def watchers(services: Services, host: str, repository: str) -> list[Automation]:
    """The enabled automations watching `repository` on `host` that a change there goes to (see `_watches`); the
    GitHub handler asks before it reads a merged pull request's diff."""
    return [a for a in services.automations.watching(host, repository) if _watches(a, host, repository)]


def take_change(services: Services, automation: Automation, event: TriggerEvent) -> AutomationRun | None:
    """One automation's part of a code change: a run now (per_change), or the change kept for the batch of its next
    slot (batched; None). A repeated event is harmless either way: `fire` gives the first run again, and a change
    kept twice is one change when the batch runs."""
    if automation.trigger.mode is ChangeMode.BATCHED:
        services.automations.add_to_batch(automation.id, [batch_entry(c) for c in event.changes])
        return None
    return fire(services, automation, event)


def run_batch(services: Services, automation: Automation, slot: datetime) -> AutomationRun:
    """At a slot of a batched automation's cron: one run over every change waiting, or a skipped run saying nothing
    was merged since the last run. The changes leave the batch only once a job covers them, so a run that fails,
    is skipped (a cap, a disabled project) or never happens (the process died) leaves them for the next slot."""
    store = services.automations
    changes = distinct(change_of(entry) for entry in store.batch(automation.id))
    key = slot_key(automation, slot)
    if not changes:
        return record_skip(services, automation, CODE_CHANGE, key, NOTHING_MERGED)
    event = TriggerEvent(
        kind=CODE_CHANGE,
        key=key,
        changes=tuple(changes),
        source_repository=automation.trigger.repository,
        source_commit=changes[-1].merge_commit or None,
    )
    run = fire(services, automation, event)
    if run.job_id is not None:
        covered = {_identity(ref) for ref in run.changes}
        store.drop_from_batch(automation.id, lambda entry: _identity(entry) in covered)
    return run


def scan_local(
    services: Services,
    *,
    max_diff_chars: int,
    faults: Faults = Faults(),
    git: Git | None = None,
    renew: Callable[[], bool] | None = None,
) -> list[AutomationRun]:
    """Look for new commits on the default branch of each local source repository an enabled code-change
    automation watches, and hand each to it. Run by one process at a time (the cursors are read, then written):
    `renew`, called before each automation, keeps that turn and says False when it was lost (the scan stops)."""
    runs: list[AutomationRun] = []
    for automation in services.automations.code_change_of_host(LOCAL_HOST):
        if not automation.enabled or automation.trigger.repository is None:
            continue
        if renew is not None and not renew():
            log.warning("local source scan stopped: its turn lapsed and another process scans now")
            break
        try:
            runs += _scan_one(services, automation, max_diff_chars=max_diff_chars, faults=faults, git=git)
        except GitError as exc:
            log.warning(
                "automation %s: source repository %s not readable: %s",
                automation.id,
                automation.trigger.repository,
                exc,
            )
    return runs


def _scan_one(
    services: Services, automation: Automation, *, max_diff_chars: int, faults: Faults, git: Git | None
) -> list[AutomationRun]:
    path = automation.trigger.repository
    assert path is not None
    head, changes = new_commits(Path(path), automation.cursor, max_diff_chars=max_diff_chars, git=git)
    if head is None or head == automation.cursor:
        return []
    runs = []
    for change in changes:  # none at first sight (no cursor): only the head is recorded
        event = TriggerEvent(
            kind=CODE_CHANGE,
            key=f"commit:{path}@{change.id}",
            changes=(change,),
            source_repository=path,
            source_commit=change.merge_commit,
        )
        run = take_change(services, automation, event)
        if run is not None:
            runs.append(run)
        faults.reach(AFTER_CHANGE_FIRED)
    # After the runs: a process that dies before this line finds the same commits again, and `fire` gives their
    # first runs back instead of starting new ones.
    services.automations.set_cursor(automation.id, head)
    return runs


def slot_key(automation: Automation, slot: datetime) -> str:
    """The event key of one slot of an automation's cron."""
    return f"slot:{automation.id}@{iso(slot)}"


def record_skip(services: Services, automation: Automation, kind: str, key: str, reason: str) -> AutomationRun:
    """A run that did not start, with why, in the automation's history (once per event key)."""
    store = services.automations
    if not store.claim_event(automation.id, key):
        earlier = store.event_run(automation.id, key)
        if earlier is not None:
            return earlier
    run = AutomationRun(
        id=store.new_run_id(),
        automation_id=automation.id,
        trigger=kind,
        event_key=key,
        created_at=now_iso(),
        skipped_reason=reason,
    )
    store.record_run(run)
    return run


def batch_entry(change: SourceChange) -> dict:
    """What a batch keeps of a change: all of it, the description and diff cut (and the cut noted)."""
    entry = asdict(change)
    entry["body"] = change.body[:BATCH_BODY_CHARS]
    if len(change.diff) > BATCH_DIFF_CHARS:
        entry["diff"], entry["diff_truncated"] = change.diff[:BATCH_DIFF_CHARS], True
    return entry


def change_of(entry: dict) -> SourceChange | None:
    """A batch entry as a source change again; None for one that is not (written by an older version)."""
    try:
        return SourceChange(**{name: entry[name] for name in _CHANGE_FIELDS})
    except (KeyError, TypeError):
        log.warning("a batch entry that is not a source change was left out: %s", sorted(entry)[:10])
        return None


def distinct(changes: Iterable[SourceChange | None]) -> list[SourceChange]:
    """The changes in order, each once (a change kept twice: a redelivery, or a scan repeated after a crash)."""
    seen: set[tuple] = set()
    kept = []
    for change in changes:
        if change is None or (identity := _identity(asdict(change))) in seen:
            continue
        seen.add(identity)
        kept.append(change)
    return kept


def _identity(change: dict) -> tuple:
    """Which change a batch entry or a run's change ref is: its repository, kind and id."""
    return str(change.get("repository", "")).lower(), change.get("kind"), change.get("id")


def _watches(automation: Automation, host: str, repository: str) -> bool:
    """Whether the enabled automation watches this very repository. On GitHub only automations of the repository's
    own account do: the change was read with that installation's token, and another account must never get it."""
    watched = automation.trigger.repository
    if not automation.enabled or automation.host != host or watched is None:
        return False
    if host == LOCAL_HOST:
        return watched == repository
    owner = repository.split("/", 1)[0]
    return watched.lower() == repository.lower() and automation.account.lower() == owner.lower()
