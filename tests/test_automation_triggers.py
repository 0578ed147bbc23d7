"""The triggers that fire by themselves, in the workers' upkeep: schedule slots (once per slot with three real worker
processes ticking on a test clock, missed slots once, disabled ones skipped) and new commits in a local source
repository (a run per commit, or one per slot in batched mode; a worker killed between a run and its cursor does
not run a commit twice)."""

import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from service.automations import ticker
from service.automations.codechange import NOTHING_MERGED, scan_local, slot_key
from service.automations.model import parse_spec
from service.automations.schedule import next_slot
from service.clock import iso, parse_iso
from service.faults import AFTER_CHANGE_FIRED
from service.projectstate import DisabledReason
from service.workspace.git import Git
from tests.conftest import commit_files
from tests.harness import wait_until

EVERY_FIVE = "*/5 * * * *"
FIVE = timedelta(minutes=5)
SECOND = timedelta(seconds=1)


def _automation(stack, trigger: dict, **fields):
    services = stack.ctx.services
    project = services.projects.get(stack.project_id)
    body = {
        "name": "Tick",
        "prompt": "Check the docs.",
        "trigger": trigger,
        "options": {"grouping": False, "maxOpenPullRequests": 20, "maxRunsPerDay": 100},
        **fields,
    }
    spec = parse_spec(body, host=project.host)
    return services.automations.create(project.id, host=project.host, account=project.account, spec=spec)[0]


def _runs(stack, automation) -> list:
    """The automation's runs, oldest first."""
    return list(reversed(stack.ctx.services.automations.all_runs(automation.id)))


def _set_enabled(stack, automation, enabled: bool) -> None:
    services = stack.ctx.services
    spec = parse_spec({"enabled": enabled}, host="local", base=services.automations.find(automation.id))
    services.automations.update(stack.project_id, automation.id, spec)


@pytest.fixture
def source(git: Git, tmp_path: Path) -> Path:
    """A local bare source repository with one commit on its default branch."""
    bare = tmp_path / "source.git"
    git.run("init", "--bare", "-q", str(bare))
    git.run("symbolic-ref", "HEAD", "refs/heads/main", git_dir=bare)
    commit_files(git, bare, {"src/app.py": "def run(): ...\n"}, message="Start")
    return bare


# -- schedules ----------------------------------------------------------------------------------


def test_three_workers_run_each_slot_once_missed_slots_once_and_disabled_ones_not(stack, workers, tmp_path):
    clock = tmp_path / "clock"
    automation = _automation(stack, {"type": "schedule", "cron": EVERY_FIVE})
    first = next_slot(EVERY_FIVE, "UTC", parse_iso(automation.created_at))
    clock.write_text(iso(first + SECOND))
    env = {"COPYDESK_TEST_CLOCK_FILE": str(clock), "COPYDESK_AUTOMATION_TICK_SECONDS": "1"}
    started = [workers(stack, **env) for _ in range(3)]
    marks = [ticker.tick_mark_key(f"{socket.gethostname()}-{w.pid}") for w in started]
    redis = stack.ctx.services.redis

    def all_ticked_at(moment: datetime) -> bool:
        """Every worker finished a tick with its clock at `moment` (or later): it saw what was due then."""
        seen = redis.mget(marks)
        return all(raw is not None and raw.decode() >= iso(moment) for raw in seen)

    def settle(moment: datetime, runs: int) -> list:
        clock.write_text(iso(moment))
        wait_until(
            lambda: len(_runs(stack, automation)) >= runs and all_ticked_at(moment),
            60,
            f"{runs} run(s) and every worker's tick at {iso(moment)}; logs:\n{started[0].log()}",
        )
        return _runs(stack, automation)

    history = settle(first + SECOND, 1)
    assert [r.event_key for r in history] == [slot_key(automation, first)]
    assert history[0].trigger == "schedule" and history[0].job_id is not None
    assert stack.ctx.services.jobs.get(history[0].job_id).automation["id"] == automation.id

    missed = first + 3 * FIVE  # three slots pass while the clock jumps: one run, for the latest
    history = settle(missed + SECOND, 2)
    assert [r.event_key for r in history] == [slot_key(automation, first), slot_key(automation, missed)]

    stack.ctx.services.projects.disable(stack.project_id, DisabledReason.ADMIN)
    history = settle(missed + FIVE + SECOND, 3)
    assert len(history) == 3 and "is disabled" in history[2].skipped_reason and history[2].job_id is None

    stack.ctx.services.projects.enable(stack.project_id)
    _set_enabled(stack, automation, False)
    history = settle(missed + 2 * FIVE + SECOND, 3)  # every worker looked at that slot: a disabled one never runs
    assert len(history) == 3
    assert all(w.alive() for w in started)


def test_a_slot_runs_once_a_new_automation_waits_for_its_first_slot_and_a_deleted_one_leaves_the_index(stack):
    services = stack.ctx.services
    automation = _automation(stack, {"type": "schedule", "cron": EVERY_FIVE})
    created = parse_iso(automation.created_at)
    first = next_slot(EVERY_FIVE, "UTC", created)
    assert ticker.tick_schedules(services, first - SECOND) == []  # nothing from before it existed
    [run] = ticker.tick_schedules(services, first + SECOND)
    assert run.event_key == slot_key(automation, first) and run.job_id is not None
    assert ticker.tick_schedules(services, first + 2 * SECOND) == []  # the same slot again: nothing
    assert services.automations.find(automation.id).last_slot == iso(first)
    # A process that claimed the slot and died before it ran leaves it to another once the claim lapses.
    later = first + FIVE
    services.redis.set(f"cd:automation:{automation.id}:slot:{iso(later)}", "1", px=200)
    assert ticker.tick_schedules(services, later + SECOND) == []
    wait_until(lambda: ticker.tick_schedules(services, later + SECOND), 10, "the lapsed claim's slot")
    services.automations.delete(stack.project_id, automation.id)
    assert ticker.tick_schedules(services, later + 2 * FIVE) == []
    assert services.redis.zcard("cd:automations:due") == 0


def test_slots_follow_the_automations_time_zone(stack):
    services = stack.ctx.services
    automation = _automation(stack, {"type": "schedule", "cron": "0 9 * * *", "timeZone": "Europe/Berlin"})
    created = parse_iso(automation.created_at)
    slot = next_slot("0 9 * * *", "Europe/Berlin", created)
    assert slot.astimezone(UTC).hour in (7, 8)  # 09:00 in Berlin
    [run] = ticker.tick_schedules(services, slot + SECOND)
    assert run.event_key == slot_key(automation, slot)


# -- local code change --------------------------------------------------------------------------


def test_local_commits_run_once_each_even_when_the_worker_dies_between_a_run_and_its_cursor(
    stack, workers, source, git
):
    services = stack.ctx.services
    automation = _automation(stack, {"type": "code_change", "repository": str(source)})
    start = git.out("rev-parse", "main", git_dir=source).strip()
    env = {"COPYDESK_AUTOMATION_TICK_SECONDS": "1"}
    dying = workers(stack, COPYDESK_TEST_FAULTS=AFTER_CHANGE_FIRED, **env)
    wait_until(
        lambda: services.automations.find(automation.id).cursor == start,
        60,
        f"the first sight of the source's head; log:\n{dying.log()}",
    )
    assert _runs(stack, automation) == []  # what was there before counts for nothing

    one = commit_files(git, source, {"src/app.py": "def run(fast=False): ...\n"}, message="Add fast")
    two = commit_files(git, source, {"src/cli.py": "def main(): ...\n"}, message="Add the CLI")
    wait_until(lambda: not dying.alive(), 60, f"the worker's death after the first run; log:\n{dying.log()}")
    assert dying.proc.returncode == 137  # killed at the fault point, not ended by an error
    assert [r.event_key for r in _runs(stack, automation)] == [f"commit:{source}@{one}"]
    assert services.automations.find(automation.id).cursor == start

    survivor = workers(stack, **env)
    wait_until(
        lambda: services.automations.find(automation.id).cursor == two,
        60,
        f"the scan after the restart; log:\n{survivor.log()}",
    )
    history = _runs(stack, automation)
    assert [r.event_key for r in history] == [f"commit:{source}@{one}", f"commit:{source}@{two}"]
    assert len({r.job_id for r in history}) == 2
    for run, sha in zip(history, (one, two), strict=True):
        job = services.jobs.get(run.job_id)
        assert job.automation == {"id": automation.id, "runId": run.id, "trigger": "code_change"}
        message = services.jobs.conversation(run.job_id)[0]
        assert (message.source_repository, message.source_commit) == (str(source), sha)
        assert run.changes[0]["id"] == sha


def test_batched_local_commits_make_one_run_at_the_slot(stack, source, git):
    services = stack.ctx.services
    automation = _automation(
        stack, {"type": "code_change", "repository": str(source), "mode": "batched", "cron": EVERY_FIVE}
    )
    assert scan_local(services, max_diff_chars=10_000) == []  # first sight: the head only
    one = commit_files(git, source, {"src/app.py": "def run(fast=False): ...\n"}, message="Add fast")
    two = commit_files(git, source, {"src/cli.py": "def main(): ...\n"}, message="Add the CLI")
    assert scan_local(services, max_diff_chars=10_000) == []  # kept for the slot
    assert [e["id"] for e in services.automations.batch(automation.id)] == [one, two]
    first = next_slot(EVERY_FIVE, "UTC", parse_iso(automation.created_at))
    [run] = ticker.tick_schedules(services, first + SECOND)
    assert [c["id"] for c in run.changes] == [one, two] and run.trigger == "code_change"
    message = services.jobs.conversation(run.job_id)[0]
    assert (message.source_repository, message.source_commit) == (str(source), two)
    assert "Add fast" in message.content and "+def main(): ..." in message.content
    [empty] = ticker.tick_schedules(services, first + FIVE + SECOND)
    assert empty.skipped_reason == NOTHING_MERGED and empty.job_id is None


def test_an_unreadable_source_is_logged_and_the_others_are_still_scanned(stack, source, git, tmp_path, caplog):
    services = stack.ctx.services
    _automation(stack, {"type": "code_change", "repository": str(tmp_path / "missing.git")})
    good = _automation(stack, {"type": "code_change", "repository": str(source)})
    scan_local(services, max_diff_chars=10_000)
    assert services.automations.find(good.id).cursor == git.out("rev-parse", "main", git_dir=source).strip()
    assert "not readable" in caplog.text


def test_one_process_scans_at_a_time(stack, source):
    services = stack.ctx.services
    _automation(stack, {"type": "code_change", "repository": str(source)})
    services.redis.set(ticker.LOCAL_SCAN_TURN, "another process", ex=60)
    assert ticker.scan_local_turn(services, max_diff_chars=1000) == []
    assert services.redis.get(ticker.LOCAL_SCAN_TURN) == b"another process"  # its turn is left alone
