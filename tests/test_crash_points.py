"""A run killed at each point between its push and its recorded outcome is repaired by the retry: one commit per
message, one pull request per job, the message processed, and follow-ups still work."""

import os
import subprocess
import sys

import pytest
import rq

from bot.worker import sweep_once
from service import faults
from service.lease import is_leased
from tests.flow_scripts import FAQ, branch_log, edit, finish, trailer_count
from tests.harness import wait_until

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running


def run_in_a_process_that_crashes_at(stack, job_id: str, point: str) -> None:
    """Take the run off the queue, as a worker would, and run it in a process that dies at `point`."""
    services = stack.ctx.services
    rq.Queue(stack.settings.queue_name, connection=services.redis).empty()
    services.redis.delete(f"cd:job:{job_id}:rq")
    env = {**os.environ, **stack.env(), "COPYDESK_TEST_FAULTS": point}
    crashed = subprocess.run(
        [sys.executable, "-c", f"from bot.tasks import process_job; process_job({job_id!r})"],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert crashed.returncode == 137, crashed.stderr.decode()[-2000:]


def resume_after_the_lease_lapses(stack, job_id: str) -> None:
    # The dead run's lease lapses by itself...
    wait_until(
        lambda: not is_leased(stack.ctx.services.redis, job_id), 20, "the dead run's lease to lapse", interval=0.1
    )
    assert sweep_once(stack.ctx) == [job_id]  # ...and the sweep queues the message again
    stack.drain()


@pytest.mark.parametrize("point", faults.CRASHES)
def test_a_first_round_killed_at_each_crash_point_ends_with_one_commit_and_one_pull_request(stack_factory, point):
    stack = stack_factory(lease_ttl_seconds=1)
    stack.script(
        [FAQ, finish()], [edit("docs/faq.md", "Ask away.", "Ask away, politely."), finish("Polite", "Politer.")]
    )
    job_id = stack.create().json()["id"]
    run_in_a_process_that_crashes_at(stack, job_id, point)
    branch = f"copydesk/{job_id}"
    first = stack.ctx.services.jobs.conversation(job_id)[0]
    assert first.status.value == "running"
    assert trailer_count(stack.repo, branch, first.id) == 1  # every crash point comes after the push

    resume_after_the_lease_lapses(stack, job_id)

    done = stack.job(job_id)
    assert done["status"] == "completed", done
    assert done["prLink"] == f"{stack.url}/local/{stack.project_id}/pulls/1"
    assert branch_log(stack.repo, branch) == ["Initial docs", "Add an FAQ"]
    assert trailer_count(stack.repo, branch, first.id) == 1
    pulls = stack.ctx.local.pulls(stack.project_id)
    assert [(p.number, p.title, p.state) for p in pulls] == [(1, "Add an FAQ", "open")]
    first = stack.ctx.services.jobs.conversation(job_id)[0]
    assert first.status.value == "processed" and first.attempts == 2

    assert stack.message(job_id, "Be polite").status_code == 200
    stack.drain()
    after = stack.job(job_id)
    assert after["status"] == "completed" and after["prLink"] == done["prLink"]
    assert branch_log(stack.repo, branch) == ["Initial docs", "Add an FAQ", "Polite"]
    assert len(stack.ctx.local.pulls(stack.project_id)) == 1
    assert "Round 2" in stack.ctx.local.pulls(stack.project_id)[0].comments[-1]["body"]


@pytest.mark.parametrize("point", [faults.AFTER_PUSH, faults.AFTER_PULL])
def test_a_follow_up_killed_after_its_push_is_committed_and_commented_once(stack_factory, point):
    stack = stack_factory(lease_ttl_seconds=1)
    stack.script(
        [FAQ, finish()], [edit("docs/faq.md", "Ask away.", "Ask away, politely."), finish("Polite", "Politer.")]
    )
    job_id = stack.create().json()["id"]
    stack.drain()
    stack.message(job_id, "Be polite")
    run_in_a_process_that_crashes_at(stack, job_id, point)

    resume_after_the_lease_lapses(stack, job_id)

    done = stack.job(job_id)
    assert done["status"] == "completed", done
    branch = f"copydesk/{job_id}"
    assert branch_log(stack.repo, branch) == ["Initial docs", "Add an FAQ", "Polite"]
    follow_up = [m for m in stack.ctx.services.jobs.conversation(job_id) if m.role.value == "user"][1]
    assert follow_up.status.value == "processed" and trailer_count(stack.repo, branch, follow_up.id) == 1
    pulls = stack.ctx.local.pulls(stack.project_id)
    assert len(pulls) == 1 and pulls[0].title == "Polite"
    assert [c["body"].count("Round 2") for c in pulls[0].comments] == [0, 1]  # round 1's comment, then round 2's


def test_crash_points_are_off_unless_a_test_arms_them(stack):
    assert stack.settings.test_faults == frozenset()
    faults.Faults().reach(faults.AFTER_PUSH)  # unarmed: returns
    from service.settings import Settings, SettingsError

    with pytest.raises(SettingsError, match="unknown fault points"):
        Settings.from_env({"COPYDESK_TEST_FAULTS": "after_lunch"})
