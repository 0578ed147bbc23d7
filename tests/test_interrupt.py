"""An interrupting follow-up: the running round is cancelled as cancel does, and the new one runs from the state the
last finished round left."""

import threading

from service.workspace.git import Git
from tests.harness import wait_until
from tests.model_fixtures import PROVIDERS, write_then_finish
from tests.model_standin import Hang, Reply, ToolUse


def test_an_interrupting_follow_up_cancels_the_running_round(stack_factory, standin):  # noqa: F811
    stack = stack_factory(**PROVIDERS["openai"](standin))
    standin.script(*write_then_finish())
    job = stack.create("Add an FAQ").json()
    stack.drain()
    first_head = Git().out("rev-parse", f"refs/heads/{stack.job(job['id'])['branch']}", git_dir=stack.repo)

    # Round 2 writes a file, then its model call hangs; round 3 interrupts it.
    standin.script(
        Reply(tool_calls=[ToolUse("write_file", {"path": "docs/more.md", "content": "# More\n"})]),
        Hang(60),
        Reply(text="(the abandoned call's answer)"),
        *write_then_finish("docs/pricing.md", "# Pricing\n", "Pricing", "Added pricing."),
    )
    stack.message(job["id"], "Write more")
    stack.message(job["id"], "And even more")  # waits; the interrupt cancels it too
    answers: dict = {}

    def interrupt() -> None:
        wait_until(lambda: len(standin.requests) >= 4, 30, "round 2's model call to hang", interval=0.05)
        answers["late"] = stack.api.post(
            f"/v2/agent/{stack.project_id}/job/{job['id']}/message",
            json={"prompt": "Stop that; add a pricing page", "interrupt": True},
        )

    thread = threading.Thread(target=interrupt)
    thread.start()
    stack.drain()
    thread.join(timeout=30)

    assert answers["late"].status_code == 200, answers["late"].text
    statuses = [m["status"] for m in stack.conversation(job["id"]) if m["role"] == "user"]
    assert statuses == ["processed", "cancelled", "cancelled", "processed"]
    done = stack.job(job["id"])
    assert done["status"] == "completed"
    head = Git().out("rev-parse", f"refs/heads/{done['branch']}", git_dir=stack.repo)
    # Round 3 started from round 1's commit: round 2's unpushed file is nowhere.
    assert Git().out("rev-parse", f"{head}^", git_dir=stack.repo) == first_head
    files = Git().out("ls-tree", "-r", "--name-only", head, git_dir=stack.repo).split()
    assert "docs/pricing.md" in files and "docs/more.md" not in files


def test_interrupt_must_be_a_boolean(stack):
    stack.script([{"tool": "finish", "args": {"title": "t", "summary": "s"}}])
    job = stack.create().json()
    refused = stack.api.post(
        f"/v2/agent/{stack.project_id}/job/{job['id']}/message", json={"prompt": "x", "interrupt": "yes"}
    )
    assert refused.status_code == 400 and "interrupt" in refused.json()["detail"]
    # Nothing was added by the refused call.
    assert len([m for m in stack.conversation(job["id"]) if m["role"] == "user"]) == 1
    # With nothing running, an interrupting message is an ordinary one.
    stack.drain()
    accepted = stack.api.post(
        f"/v2/agent/{stack.project_id}/job/{job['id']}/message", json={"prompt": "again", "interrupt": True}
    )
    assert accepted.status_code == 200 and accepted.json()["status"] == "active"
