"""Code-change triggers on the service side: which automations a change reaches (through the store's index, never a
scan), per_change runs, batched changes kept until a job covers them, and the trigger indexes kept on every write."""

from datetime import UTC, datetime, timedelta

from service.automations import codechange
from service.automations.codechange import on_source_change, run_batch
from service.automations.events import SourceChange, TriggerEvent
from service.automations.model import parse_spec
from service.automations.store import DUE_KEY
from service.automations.ticker import tick
from service.clock import parse_iso
from service.projectstate import DisabledReason


def _automation(stack, trigger: dict, *, host: str | None = None, account: str | None = None, **fields):
    services = stack.ctx.services
    project = services.projects.get(stack.project_id)
    body = {"name": "Docs from code", "prompt": "Update the docs.", "trigger": trigger, **fields}
    spec = parse_spec(body, host=host or project.host)
    return services.automations.create(
        project.id, host=host or project.host, account=account or project.account, spec=spec
    )[0]


def _change(number: int, repository: str = "/srv/git/api.git", diff: str = "") -> SourceChange:
    return SourceChange(
        kind="commit",
        id=f"{number:040x}",
        title=f"Change {number}",
        body="",
        author="Ada",
        url=None,
        merge_commit=f"{number:040x}",
        diff=diff or f"+flag_{number}\n",
        diff_truncated=False,
        repository=repository,
    )


def _event(number: int, repository: str = "/srv/git/api.git") -> TriggerEvent:
    change = _change(number, repository)
    return TriggerEvent(
        kind="code_change",
        key=f"commit:{repository}@{change.id}",
        changes=(change,),
        source_repository=repository,
        source_commit=change.merge_commit,
    )


def test_a_change_reaches_only_the_enabled_automations_watching_that_repository(stack):
    services = stack.ctx.services
    watching = _automation(stack, {"type": "code_change", "repository": "/srv/git/api.git"})
    _automation(stack, {"type": "code_change", "repository": "/srv/git/other.git"})
    _automation(stack, {"type": "schedule", "cron": "0 9 * * 1"})
    _automation(stack, {"type": "code_change", "repository": "/srv/git/api.git"}, enabled=False)
    runs = on_source_change(services, "local", "/srv/git/api.git", _event(1))
    assert [r.automation_id for r in runs] == [watching.id] and runs[0].job_id is not None
    assert on_source_change(services, "local", "/srv/git/api.git", _event(1)) == runs  # a repeat: the same run
    assert on_source_change(services, "local", "/srv/git/nothing.git", _event(2)) == []
    assert on_source_change(services, "github", "/srv/git/api.git", _event(3)) == []


def test_on_github_only_the_repositorys_own_account_gets_its_changes(stack):
    services = stack.ctx.services
    trigger = {"type": "code_change", "repository": "Acme/API"}
    own = _automation(stack, trigger, host="github", account="acme")
    _automation(stack, trigger, host="github", account="mallory")  # watches another account's repository
    runs = on_source_change(services, "github", "acme/api", _event(1, "acme/api"))
    assert [r.automation_id for r in runs] == [own.id]


def test_the_watch_index_follows_updates_and_deletes(stack):
    services = stack.ctx.services
    automation = _automation(stack, {"type": "code_change", "repository": "/srv/git/api.git"})
    project = services.projects.get(stack.project_id)
    moved = parse_spec(
        {"trigger": {"type": "code_change", "repository": "/srv/git/new.git"}}, host="local", base=automation
    )
    services.automations.update(project.id, automation.id, moved)
    assert services.automations.watching("local", "/srv/git/api.git") == []
    assert [a.id for a in services.automations.watching("local", "/srv/git/new.git")] == [automation.id]
    services.automations.delete(project.id, automation.id)
    assert services.automations.watching("local", "/srv/git/new.git") == []
    assert services.automations.code_change_of_host("local") == []


def test_a_batched_automation_keeps_changes_and_runs_once_over_them_at_its_slot(stack):
    services = stack.ctx.services
    automation = _automation(
        stack, {"type": "code_change", "repository": "/srv/git/api.git", "mode": "batched", "cron": "0 16 * * 5"}
    )
    assert on_source_change(services, "local", "/srv/git/api.git", _event(1)) == []
    on_source_change(services, "local", "/srv/git/api.git", _event(2))
    on_source_change(services, "local", "/srv/git/api.git", _event(2))  # a repeat is one change in the run
    slot = datetime(2030, 1, 4, 16, tzinfo=UTC)
    run = run_batch(services, automation, slot)
    assert run.job_id is not None and [c["id"] for c in run.changes] == [f"{1:040x}", f"{2:040x}"]
    assert run.event_key == f"slot:{automation.id}@2030-01-04T16:00:00.000Z" and run.trigger == "code_change"
    prompt = services.jobs.conversation(run.job_id)[0].content
    assert "+flag_1" in prompt and "+flag_2" in prompt
    message = services.jobs.conversation(run.job_id)[0]
    assert (message.source_repository, message.source_commit) == ("/srv/git/api.git", f"{2:040x}")
    assert services.automations.batch(automation.id) == []
    empty = run_batch(services, automation, slot + timedelta(days=7))
    assert empty.job_id is None and empty.skipped_reason == codechange.NOTHING_MERGED


def test_a_batch_whose_run_is_skipped_waits_for_the_next_slot(stack):
    services = stack.ctx.services
    automation = _automation(
        stack, {"type": "code_change", "repository": "/srv/git/api.git", "mode": "batched", "cron": "0 16 * * 5"}
    )
    on_source_change(services, "local", "/srv/git/api.git", _event(1))
    services.projects.disable(stack.project_id, DisabledReason.INSTALLATION_REMOVED)
    skipped = run_batch(services, automation, datetime(2030, 1, 4, 16, tzinfo=UTC))
    assert skipped.job_id is None and "is disabled" in skipped.skipped_reason
    assert [e["id"] for e in services.automations.batch(automation.id)] == [f"{1:040x}"]


def test_a_batch_keeps_a_bounded_diff_and_says_it_was_cut(stack):
    services = stack.ctx.services
    automation = _automation(
        stack, {"type": "code_change", "repository": "/srv/git/api.git", "mode": "batched", "cron": "0 16 * * 5"}
    )
    change = _change(1, diff="+" + "x" * (codechange.BATCH_DIFF_CHARS * 2))
    codechange.take_change(services, automation, TriggerEvent(kind="code_change", key="k", changes=(change,)))
    [entry] = services.automations.batch(automation.id)
    assert len(entry["diff"]) == codechange.BATCH_DIFF_CHARS and entry["diff_truncated"] is True
    assert codechange.change_of({"id": "x"}) is None  # an entry that is no change is left out, not a crash


def test_the_due_index_holds_enabled_cron_automations_from_their_creation(stack):
    services = stack.ctx.services
    project = services.projects.get(stack.project_id)
    automation = _automation(stack, {"type": "schedule", "cron": "*/5 * * * *"})
    _automation(stack, {"type": "webhook"})
    assert automation.last_slot == automation.created_at  # the first slot after creation runs
    score = services.redis.zscore(DUE_KEY, automation.id)
    created = parse_iso(automation.created_at)
    assert created.timestamp() < score <= created.timestamp() + 300
    assert services.redis.zcard(DUE_KEY) == 1
    off = parse_spec({"enabled": False}, host="local", base=automation)
    services.automations.update(project.id, automation.id, off)
    assert services.redis.zcard(DUE_KEY) == 0
    on = parse_spec({"enabled": True}, host="local", base=automation)
    again = services.automations.update(project.id, automation.id, on)[0]
    assert again.last_slot is not None and again.last_slot >= automation.last_slot  # from now, not from before
    assert services.redis.zscore(DUE_KEY, automation.id) is not None
    services.automations.delete(project.id, automation.id)
    assert services.redis.zcard(DUE_KEY) == 0


def test_automations_made_before_the_indexes_are_indexed_once(stack):
    services = stack.ctx.services
    automation = _automation(
        stack, {"type": "code_change", "repository": "/srv/git/api.git", "mode": "batched", "cron": "0 16 * * 5"}
    )
    services.redis.delete(DUE_KEY, "cd:automations:code-change:local")  # as an older version left them
    assert not services.automations.indexed()
    tick(services, datetime.now(UTC), max_diff_chars=1000)
    assert services.automations.indexed() and services.redis.zscore(DUE_KEY, automation.id) is not None
    assert [a.id for a in services.automations.code_change_of_host("local")] == [automation.id]
