"""Split brain: a worker frozen longer than its lease (during the model call, or between its lease check and its
push, its pull-request update or its comment) while another takes the run over writes nothing once thawed.
Exactly one commit per message, and the pull request keeps the newest run's title, body and comments."""

import threading

import pytest

from service import faults
from tests.flow_scripts import show, trailer_count
from tests.harness import wait_until
from tests.model_fixtures import PROVIDERS
from tests.model_standin import Hang, Reply, ToolUse

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running


def _write(text):
    return Reply(tool_calls=[ToolUse("write_file", {"path": "docs/faq.md", "content": f"# FAQ\n\n{text}\n"})])


def _finish(text):
    return Reply(tool_calls=[ToolUse("finish", {"title": f"FAQ by {text}", "summary": f"Written by {text}."})])


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize("frozen_during", ["model call", "push"])
def test_a_thawed_worker_writes_nothing_after_another_took_its_run_over(frozen_during, stack_factory, standin, workers):
    stack = stack_factory(**PROVIDERS["openai"](standin), lease_ttl_seconds=2, sweep_interval_seconds=1)
    answer_a = threading.Event()
    if frozen_during == "model call":
        # A's answer arrives while it is frozen (the test releases it then); B's run takes the next items; A's
        # second call gets the last.
        standin.script(Hang(120, until=answer_a), _write("A"), _write("B"), _finish("B"), _finish("A"))
        first = workers(stack)
    else:
        standin.script(_write("A"), _finish("A"), _write("B"), _finish("B"))
        first = workers(stack, COPYDESK_TEST_FAULTS="freeze_before_push")
    job_id = stack.create().json()["id"]
    horse = first.wait_for_horse()
    if frozen_during == "model call":
        wait_until(lambda: standin.requests, 30, "A's model call")
        frozen = first.freeze()
        answer_a.set()
    else:
        wait_until(lambda: _state(horse) == "T", 30, "A to freeze between its lease check and its push")
        frozen = first.freeze()  # its worker process too, which would otherwise keep renewing the lease

    second = workers(stack)
    done = wait_until(
        lambda: stack.job(job_id)["status"] == "completed" and stack.job(job_id),
        60,
        "B to complete the run",
        interval=0.25,
    )
    assert done["prLink"] and show(stack.repo, done["branch"], "docs/faq.md") == "# FAQ\n\nB"

    first.thaw(frozen)
    wait_until(lambda: first.horse_pid() is None, 30, "A's horse to end after the thaw")
    assert first.alive(), first.log()
    assert first.stop() == 0, first.log()  # A has exited: whatever it would still write, it has written

    message = stack.ctx.services.jobs.conversation(job_id)[0]
    assert trailer_count(stack.repo, done["branch"], message.id) == 1
    assert show(stack.repo, done["branch"], "docs/faq.md") == "# FAQ\n\nB"
    after = stack.job(job_id)
    assert after["status"] == "completed" and after["prLink"] == done["prLink"]
    pulls = stack.ctx.local.pulls(stack.project_id)
    assert len(pulls) == 1 and pulls[0].title == "FAQ by B"
    assert [m["content"] for m in stack.conversation(job_id) if m["role"] == "agent"] == ["Written by B."]
    assert message.status.value == "processed" and message.attempts == 2
    assert second.alive(), second.log()


@pytest.mark.parametrize("point", [faults.FREEZE_BEFORE_PULL, faults.FREEZE_BEFORE_COMMENT])
def test_a_worker_thawed_at_its_pull_request_write_overwrites_and_comments_nothing(
    point, stack_factory, standin, workers
):
    stack = stack_factory(**PROVIDERS["openai"](standin), lease_ttl_seconds=2, sweep_interval_seconds=1)
    # Round 1's agent runs once (A's); B publishes A's pushed commit, then runs round 2 itself.
    standin.script(_write("round 1"), _finish("round 1"), _write("A"), _finish("A"), _write("B"), _finish("B"))
    job_id = stack.create().json()["id"]
    stack.drain()  # round 1 here, without faults: the job has its pull request
    assert stack.job(job_id)["status"] == "completed"

    first = workers(stack, COPYDESK_TEST_FAULTS=point)
    stack.message(job_id, "Write it again")
    horse = first.wait_for_horse()
    wait_until(lambda: _state(horse) == "T", 30, f"A to freeze at {point}")
    frozen = first.freeze()  # its worker process too, which would otherwise keep renewing the lease
    stack.message(job_id, "And once more")  # waits its turn: B runs it after taking round 2 over

    second = workers(stack)
    wait_until(
        lambda: [m["status"] for m in stack.conversation(job_id) if m["role"] == "user"] == ["processed"] * 3,
        120,  # generous: B first waits out A's lease, and three runs of the whole stack share a busy machine
        "B to finish rounds 2 and 3",
        interval=0.25,
    )
    [pull] = stack.ctx.local.pulls(stack.project_id)
    assert pull.title == "FAQ by B"
    assert [c["body"].split("**")[1] for c in pull.comments] == ["Round 1", "Round 2", "Round 3"]

    first.thaw(frozen)
    wait_until(lambda: first.horse_pid() is None, 30, "A's horse to end after the thaw")
    assert first.alive(), first.log()
    assert first.stop() == 0, first.log()  # A has exited: whatever it would still write, it has written

    [after] = stack.ctx.local.pulls(stack.project_id)
    assert (after.title, after.body) == ("FAQ by B", pull.body)
    assert [c["body"] for c in after.comments] == [c["body"] for c in pull.comments]  # A edited nothing
    branch = stack.job(job_id)["branch"]
    messages = [m for m in stack.ctx.services.jobs.conversation(job_id) if m.role.value == "user"]
    assert [trailer_count(stack.repo, branch, m.id) for m in messages] == [1, 1, 1]
    assert [m.attempts for m in messages] == [1, 2, 1]
    assert show(stack.repo, branch, "docs/faq.md") == "# FAQ\n\nB"
    assert stack.job(job_id)["status"] == "completed"
    assert second.alive(), second.log()
