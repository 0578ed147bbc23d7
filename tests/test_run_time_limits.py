"""The run's wall-clock limit holds whatever the run is doing (a model call, a tool), and a tool call past its
own budget is a tool error the model sees, not the end of the run."""

import subprocess
import time

from tests.model_fixtures import PROVIDERS, write_then_finish
from tests.model_standin import Hang, Reply, ToolUse

SEARCH = Reply(tool_calls=[ToolUse("search", {"pattern": "Widgets"})])


def _run(stack, standin, *items) -> tuple[dict, float]:
    standin.script(*items)
    job = stack.create("Rewrite the docs").json()
    started = time.monotonic()
    stack.drain()
    return stack.job(job["id"]), time.monotonic() - started


def _nothing_pushed(stack) -> bool:
    return (
        subprocess.run(
            ["git", "--git-dir", str(stack.repo), "branch", "--list", "copydesk/*"], capture_output=True, text=True
        ).stdout
        == ""
    )


def test_a_tool_call_past_its_budget_is_a_tool_error_and_the_run_goes_on(stack_factory, standin):
    stack = stack_factory(
        **PROVIDERS["openai"](standin), tool_timeout_seconds=1, test_faults=frozenset({"stall_in_tool"})
    )
    done, elapsed = _run(stack, standin, SEARCH, *write_then_finish())
    assert done["status"] == "completed" and done["prLink"], done
    tool_result = standin.requests[1].body["messages"][-1]
    assert tool_result["role"] == "tool" and "search was stopped" in tool_result["content"]
    assert "time budget of 1 s" in tool_result["content"]
    assert elapsed < 30


def test_the_run_time_limit_holds_inside_a_stalled_tool(stack_factory, standin):
    stack = stack_factory(
        **PROVIDERS["openai"](standin),
        run_timeout_seconds=2,
        tool_timeout_seconds=600,
        test_faults=frozenset({"stall_in_tool"}),
    )
    failed, elapsed = _run(stack, standin, SEARCH, *write_then_finish())
    assert failed["status"] == "failed" and failed["error"]["code"] == "time_limit_exceeded", failed
    assert elapsed < 15
    assert _nothing_pushed(stack)


def test_the_run_time_limit_cuts_a_model_call_short(stack_factory, standin):
    stack = stack_factory(**PROVIDERS["anthropic"](standin), run_timeout_seconds=2)
    failed, elapsed = _run(stack, standin, Hang(120), *write_then_finish())
    assert failed["status"] == "failed" and failed["error"]["code"] == "time_limit_exceeded", failed
    assert elapsed < 15  # the call was abandoned, not waited out
    assert _nothing_pushed(stack)


def test_a_stalled_docs_check_at_the_end_of_a_run_is_reported_as_not_completed(stack_factory, standin):
    stack = stack_factory(
        **PROVIDERS["openai"](standin),
        tool_timeout_seconds=1,
        run_timeout_seconds=60,
        test_faults=frozenset({"stall_in_docs_check"}),
    )
    done, elapsed = _run(stack, standin, *write_then_finish())
    assert done["status"] == "completed" and done["prLink"], done
    assert elapsed < 30  # the tool budget ended the check, not the run's 60 s limit
    [pull] = stack.ctx.local.pulls(stack.project_id)
    assert "docs check not completed: took too long (stopped after 1 s" in pull.body
