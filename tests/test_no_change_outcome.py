"""A round's outcome end to end: "no change needed" with its reason is recorded, shown and emitted, not taken for
an empty success; a change and an answer keep theirs."""

from service import describe
from service.models import Message, RoundOutcome
from service.store.jobs import RunOutcome, round_outcome
from service.workspace.git import Git
from tests.event_reading import page
from tests.flow_scripts import FAQ, branch_log, finish, no_change
from tests.harness import LiveServer, deliver_webhooks
from tests.webhook_receivers import Receiver, register

REASON = "docs/index.md already says how to install with pipx; nothing needs to change."


def finished_runs(stack, job_id: str) -> list[dict]:
    return [e["data"]["run"] for e in page(stack, job_id) if e["type"] == "run.finished"]


def test_a_run_that_needs_no_change_records_its_reason_and_opens_nothing(stack):
    stack.script([no_change(REASON)])
    job = stack.create("Document installing with pipx").json()
    stack.drain()

    done = stack.job(job["id"])
    assert done["status"] == "completed" and done["prLink"] is None and done["branch"] is None
    heads = Git().out("for-each-ref", "--format=%(refname)", "refs/heads", git_dir=stack.repo).splitlines()
    assert heads == ["refs/heads/main"] and stack.ctx.local.pulls(stack.project_id) == []
    asked, answer = stack.conversation(job["id"])  # checked against the OpenAPI document by the session
    assert (asked["status"], asked["outcome"], asked["reason"]) == ("processed", "no_change_needed", REASON)
    assert (answer["content"], answer["commit"], answer["changedFiles"]) == (REASON, None, [])
    events = page(stack, job["id"])
    assert not [e for e in events if e["type"] in ("run.pushed", "pr.opened")]
    [run] = finished_runs(stack, job["id"])
    assert (run["outcome"], run["result"], run["reason"]) == ("processed", "no_change_needed", REASON)
    assert events[-1]["type"] == "job.completed"
    page_text = (
        stack.operator().get(f"{stack.url}/dashboard/projects/{stack.project_id}/jobs/{job['id']}", timeout=10).text
    )
    assert '<span class="outcome no_change_needed">no change needed</span>' in page_text


def test_saying_no_change_after_writing_is_refused_and_the_run_proposes_its_change(stack):
    stack.script([FAQ, no_change("Nothing to do."), finish()])
    job = stack.create("Add an FAQ page").json()
    stack.drain()

    done = stack.job(job["id"])
    assert done["status"] == "completed" and done["prLink"] is not None
    asked, answer = stack.conversation(job["id"])
    assert (asked["outcome"], asked["reason"]) == ("changed", None)
    assert answer["content"] == "Added docs/faq.md." and answer["changedFiles"] == ["docs/faq.md"]
    steps = [e["data"]["run"] for e in page(stack, job["id"]) if e["type"] == "run.step"]
    assert [s["tool"] for s in steps] == ["write_file", "finish", "finish"]
    assert steps[1]["summary"] == "no_change_needed=True"
    [run] = finished_runs(stack, job["id"])
    assert (run["result"], run["reason"]) == ("changed", None)


def test_a_follow_up_that_needs_no_change_says_so_on_the_pull_request(stack):
    stack.script([FAQ, finish()], [no_change("The FAQ already answers that.")])
    job = stack.create("Add an FAQ page").json()
    stack.drain()
    stack.message(job["id"], "Say that questions are welcome")
    stack.drain()

    done = stack.job(job["id"])
    assert done["status"] == "completed"
    assert branch_log(stack.repo, done["branch"])[-1] == "Add an FAQ"  # no second commit
    users = [m for m in stack.conversation(job["id"]) if m["role"] == "user"]
    assert [(m["outcome"], m["reason"]) for m in users] == [
        ("changed", None),
        ("no_change_needed", "The FAQ already answers that."),
    ]
    [pull] = stack.ctx.local.pulls(stack.project_id)
    assert pull.title == "Add an FAQ"  # kept: the round that changed nothing does not rename the pull request
    assert (
        "**Round 2.** > Say that questions are welcome\n\n**No change was needed.** The FAQ already answers "
        "that." in pull.body
    )
    round_two = pull.comments[1]["body"]
    assert "✅ done" in round_two and "**No change was needed.** The FAQ already answers that." in round_two
    events = page(stack, job["id"])
    assert [e["type"] for e in events].count("pr.updated") == 0
    assert [r["result"] for r in finished_runs(stack, job["id"])] == ["changed", "no_change_needed"]


def test_a_finish_without_changes_or_the_flag_stays_an_answer(stack):
    stack.script([finish("Nothing", "Yes: docs/install.md mentions pip.")])
    job = stack.create("Do the docs mention pip?").json()
    stack.drain()

    asked, answer = stack.conversation(job["id"])
    assert (asked["outcome"], asked["reason"]) == ("answered", None)
    assert answer["content"] == "Yes: docs/install.md mentions pip."
    [run] = finished_runs(stack, job["id"])
    assert (run["result"], run["reason"]) == ("answered", None)


def test_a_recorded_run_that_says_nothing_of_its_outcome_gets_it_from_its_commit():
    assert round_outcome(RunOutcome(reply="Done.", commit="a" * 40)) == (RoundOutcome.CHANGED, None)
    assert round_outcome(RunOutcome(reply="Yes.")) == (RoundOutcome.ANSWERED, None)
    said = RunOutcome(reply="Covered.", outcome=RoundOutcome.NO_CHANGE_NEEDED, reason="Covered already.")
    assert round_outcome(said) == (RoundOutcome.NO_CHANGE_NEEDED, "Covered already.")
    assert round_outcome(RunOutcome(reply="Covered.", outcome=RoundOutcome.NO_CHANGE_NEEDED)) == (
        RoundOutcome.NO_CHANGE_NEEDED,
        "Covered.",
    )


def test_messages_stored_before_outcomes_existed_load_without_one_and_new_ones_round_trip():
    old = {
        "id": "msg_1",
        "job_id": "job_1",
        "seq": 0,
        "role": "user",
        "content": "x",
        "created_at": "t",
        "status": "processed",
    }
    assert Message.from_dict(old).outcome is None and Message.from_dict(old).to_api()["outcome"] is None
    stored = Message.from_dict({**old, "outcome": "no_change_needed", "reason": "Covered."})
    assert stored.outcome is RoundOutcome.NO_CHANGE_NEEDED
    assert Message.from_dict(stored.to_dict()) == stored
    assert (stored.to_api()["outcome"], stored.to_api()["reason"]) == ("no_change_needed", "Covered.")


def test_the_replies_on_the_pull_request_say_no_change_was_needed_and_why():
    assert (
        describe.round_reply(
            mention="ana",
            round_number=2,
            state=describe.RoundState.DONE,
            summary="Covered already.\nMore.",
            no_change_needed=True,
        )
        == "@ana round 2 needed no change: Covered already."
    )
    assert (
        describe.thread_reply(mention="ana", commit=None, summary="Covered already.", no_change_needed=True)
        == "@ana No change was needed: Covered already."
    )
    assert describe.thread_reply(mention=None, commit=None, summary="Yes.") == "Yes."  # an answer stays one
    report = describe.RoundReport(2, describe.RoundState.DONE, summary="Covered already.", no_change_needed=True)
    assert describe.tracking_comment(report).endswith("**No change was needed.** Covered already.")


def test_webhooks_to_callers_carry_the_outcome_and_its_reason(stack_factory):
    stack = stack_factory(webhook_allow_private=True)
    hook = Receiver()
    with LiveServer(hook) as server:
        endpoint = register(stack, f"{server.url}/hooks", events=["run.finished"])
        hook.secrets.append(endpoint["secret"])
        stack.script([no_change(REASON)])
        job = stack.create("Document installing with pipx").json()
        stack.drain()
        deliver_webhooks(stack.ctx)
    [delivered] = hook.received
    assert delivered["verified"] and delivered["body"]["type"] == "run.finished"
    run = delivered["body"]["data"]["run"]
    assert (run["result"], run["reason"]) == ("no_change_needed", REASON)
    assert delivered["body"]["data"]["id"] == job["id"]
