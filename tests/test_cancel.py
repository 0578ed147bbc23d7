"""Cancel: waiting work is cancelled, a running run stops (an in-flight model call abandoned) and pushes nothing,
and the job returns to the state its last finished round left."""

import threading
import time

from service import faults
from service.lease import LeaseInfo
from service.store.jobs import RunOutcome
from service.workspace.git import Git
from tests.event_reading import page
from tests.flow_scripts import FAQ, branch_exists, finish
from tests.harness import wait_until
from tests.model_fixtures import PROVIDERS, write_then_finish
from tests.model_standin import Hang, Reply, ToolUse

SETTLE_BOUND_SECONDS = 20  # generous: the machine is loaded; bench/events.py measures the real figure


def cancel(stack, job_id: str):
    return stack.api.post(f"/v2/agent/{stack.project_id}/job/{job_id}/cancel")


def cancel_once(stack, job_id: str, ready, what: str, timing: dict, interval: float) -> threading.Thread:
    """A thread that cancels the job once `ready()` holds, recording when it asked (`timing["asked"]`) and the
    answer (`timing["answer"]`). After 30 s it cancels all the same, so the run under test still ends, and records
    the timeout in `timing["late"]`."""

    def run() -> None:
        try:
            wait_until(ready, 30, what, interval=interval)
        except AssertionError as late:
            timing["late"] = str(late)
        timing["asked"] = time.monotonic()
        timing["answer"] = cancel(stack, job_id)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_cancelling_a_job_whose_first_message_waits_leaves_it_completed_without_a_pull_request(stack):
    stack.script([FAQ, finish()], [FAQ, finish()])
    job = stack.create().json()
    answer = cancel(stack, job["id"])
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "completed" and answer.json()["prLink"] is None
    assert [m["status"] for m in stack.conversation(job["id"])] == ["cancelled"]
    assert [e["type"] for e in page(stack, job["id"])] == ["job.created", "job.cancelled"]
    refused = cancel(stack, job["id"])
    assert refused.status_code == 409 and refused.json()["code"] == "job_not_active"
    stack.drain()  # the queued run finds nothing to do
    assert not branch_exists(stack, f"copydesk/{job['id']}")

    # A follow-up after a cancel works normally.
    assert stack.message(job["id"], "Add the FAQ after all").json()["status"] == "active"
    stack.drain()
    done = stack.job(job["id"])
    assert done["status"] == "completed" and done["prLink"]


def test_cancel_is_404_for_unknown_jobs(stack):
    missing = cancel(stack, "job_01JD0000000000000000000000")
    assert missing.status_code == 404 and missing.json()["code"] == "job_not_found"


def test_a_mid_run_cancel_abandons_the_model_call_pushes_nothing_and_settles(stack_factory, standin):
    stack = stack_factory(**PROVIDERS["openai"](standin))
    standin.script(*write_then_finish())
    first = stack.create("Add an FAQ").json()
    stack.drain()
    before = stack.job(first["id"])
    head = Git().out("rev-parse", f"refs/heads/{before['branch']}", git_dir=stack.repo)

    # The second round writes a file, then its next model call hangs far longer than the bound.
    standin.script(
        Reply(tool_calls=[ToolUse("write_file", {"path": "docs/more.md", "content": "# More\n"})]),
        Hang(60),
        *write_then_finish("docs/late.md"),
    )
    stack.message(first["id"], "Write more")
    stack.message(first["id"], "And even more")  # waits its turn; the cancel cancels it too
    timing: dict = {}
    canceller = cancel_once(
        stack,
        first["id"],
        lambda: len(standin.requests) >= 4,  # 2 of round 1, 2 of round 2
        "the second round's model call to hang",
        timing,
        interval=0.05,
    )
    stack.drain()
    settled = time.monotonic()
    canceller.join(timeout=30)

    # Had the cancel come late, the run would not have been stopped mid-call: nothing below would show it.
    assert "late" not in timing, timing["late"]
    assert timing["answer"].status_code == 200, timing["answer"].text
    assert settled - timing["asked"] < SETTLE_BOUND_SECONDS
    after = stack.job(first["id"])
    assert after["status"] == "completed" and after["prLink"] == before["prLink"]  # its last round's state
    assert Git().out("rev-parse", f"refs/heads/{before['branch']}", git_dir=stack.repo) == head  # nothing pushed
    statuses = [m["status"] for m in stack.conversation(first["id"]) if m["role"] == "user"]
    assert statuses == ["processed", "cancelled", "cancelled"]
    types = [e["type"] for e in page(stack, first["id"])]
    assert types[-2:] == ["run.finished", "job.cancelled"] and "run.pushed" not in types[types.index("job.completed") :]
    assert page(stack, first["id"])[-2]["data"]["run"]["outcome"] == "cancelled"


def test_a_cancelled_round_after_a_failed_one_leaves_the_job_failed_with_that_error(stack):
    jobs = stack.ctx.services.jobs
    job = stack.create().json()
    _job, message = jobs.start_next(job["id"])  # the first round fails, as a run would record it
    jobs.finish_message(
        job["id"],
        message.id,
        RunOutcome(error={"code": "ref_not_found", "message": "the repository has no branch 'main'"}),
    )
    stack.message(job["id"], "try again")
    settled = cancel(stack, job["id"]).json()
    assert settled["status"] == "failed" and settled["error"]["code"] == "ref_not_found"


def _publishing(stack, job_id: str) -> bool:
    """Whether the job's run has begun to publish: past its last stop check, its lease's kill-at moved far ahead."""
    info = LeaseInfo.read(stack.ctx.services.redis, job_id)
    return info is not None and info.kill_at > time.time() + 5 * stack.settings.run_timeout_seconds


def test_a_cancel_that_lands_after_the_last_stop_check_still_pushes_nothing(stack_factory):
    # The run pauses between its last stop check and its push; the cancel lands in that pause.
    stack = stack_factory(test_faults=frozenset({faults.PAUSE_BEFORE_PUSH}), run_timeout_seconds=60)
    stack.script([FAQ, finish()])
    job = stack.create().json()
    timing: dict = {}
    canceller = cancel_once(
        stack, job["id"], lambda: _publishing(stack, job["id"]), "the run to begin publishing", timing, interval=0.02
    )
    started = time.monotonic()
    stack.drain()
    canceller.join(timeout=30)

    # A late cancel finds the job completed (409): this assertion catches it; the message says why.
    assert timing["answer"].status_code == 200, (timing.get("late"), timing["answer"].text)
    assert time.monotonic() - started < SETTLE_BOUND_SECONDS + faults.PAUSE_SECONDS
    assert not branch_exists(stack, f"copydesk/{job['id']}")  # nothing pushed
    after = stack.job(job["id"])
    assert after["status"] == "completed" and after["prLink"] is None
    assert [m["status"] for m in stack.conversation(job["id"])] == ["cancelled"]
    types = [e["type"] for e in page(stack, job["id"])]
    assert "run.pushed" not in types and types[-1] == "job.cancelled"
