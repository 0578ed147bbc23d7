"""The job flow through the API with each real model adapter, against the vendors' protocol stand-ins."""

import os
import subprocess
import threading
import time

import pytest

from tests.flow_scripts import show
from tests.harness import wait_until
from tests.model_fixtures import PROVIDERS, write_then_finish
from tests.model_standin import Failure, Hang, Outage, Reply, ToolUse

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_job_and_a_follow_up_with_a_real_adapter(provider, stack_factory, standin):
    stack = stack_factory(**PROVIDERS[provider](standin))
    standin.script(*write_then_finish())
    job = stack.create("Add an FAQ").json()
    assert job["model"] == stack.settings.model
    stack.drain()
    done = stack.job(job["id"])
    assert done["status"] == "completed" and done["prLink"]
    assert show(stack.repo, done["branch"], "docs/faq.md") == "# FAQ"

    standin.script(
        Reply(tool_calls=[ToolUse("edit_file", {"path": "docs/faq.md", "old": "# FAQ\n", "new": "# FAQ\n\nAsk.\n"})]),
        Reply(text="I added a line to the section I wrote."),  # text without a tool call ends the run
    )
    stack.message(job["id"], "Add a line to the section you added")
    stack.drain()
    again = stack.job(job["id"])
    assert again["status"] == "completed" and again["prLink"] == done["prLink"]
    assert show(stack.repo, done["branch"], "docs/faq.md") == "# FAQ\n\nAsk."
    # The follow-up run saw the earlier prompt and the agent's summary.
    sent = str(standin.requests[-2].body)
    assert "Add an FAQ" in sent and "Added the FAQ." in sent and "Add a line to the section you added" in sent
    # ...and the pull request's diff against the base, so "the section you added" has a referent.
    assert "<pull-request-diff>" in sent and "+# FAQ" in sent
    assert stack.conversation(job["id"])[-1]["content"] == "I added a line to the section I wrote."
    pull = stack.ctx.local.pulls(stack.project_id)[0]
    assert "## Follow-ups" in pull.body and "Add a line to the section you added" in pull.body
    assert "I added a line to the section I wrote." in pull.body
    assert pull.comments[-1]["body"].startswith("**Round 2** · ✅ done\n") and "Pushed " in pull.comments[-1]["body"]


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_model_failures_fail_the_job_with_their_code(provider, stack_factory, standin):
    stack = stack_factory(**PROVIDERS[provider](standin))
    standin.script(Failure(401, "bad key"))
    refused = stack.create().json()
    stack.drain()
    failed = stack.job(refused["id"])
    assert failed["status"] == "failed" and failed["error"]["code"] == "model_auth_failed"
    assert "sk-test" not in failed["error"]["message"] and "sk-ant-test" not in failed["error"]["message"]


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_model_outage_within_the_retry_budget_is_ridden_out(provider, stack_factory, standin):
    stack = stack_factory(**PROVIDERS[provider](standin), model_retry_seconds=4)
    standin.script(Outage(1.5, 529 if provider == "anthropic" else 503), *write_then_finish())
    job = stack.create("Add an FAQ").json()
    started = time.monotonic()
    stack.drain()
    done = stack.job(job["id"])
    assert done["status"] == "completed", done["error"]
    assert show(stack.repo, done["branch"], "docs/faq.md") == "# FAQ"
    assert len(standin.requests) >= 4  # two or more failed attempts, then the two turns
    assert standin.pending == 0 and time.monotonic() - started < 30


def test_a_model_outage_past_the_retry_budget_makes_the_model_unavailable(stack_factory, standin):
    stack = stack_factory(**PROVIDERS["openai"](standin), model_retry_seconds=2)
    standin.script(Outage(600, 503, "busy"))
    busy = stack.create().json()
    started = time.monotonic()
    stack.drain()
    waited = time.monotonic() - started
    unavailable = stack.job(busy["id"])
    assert unavailable["status"] == "failed" and unavailable["error"]["code"] == "model_unavailable"
    assert "the retry budget is 2 s" in unavailable["error"]["message"]
    assert unavailable["error"]["message"].endswith("last error: HTTP 503: busy")
    assert 2 <= waited < 30 and len(standin.requests) >= 3


def test_create_may_choose_among_the_configured_models(stack_factory, standin):
    stack = stack_factory(
        model="openai:gpt-test",
        models=("openai:gpt-test", "anthropic:claude-test"),
        openai_api_key="sk-test",
        openai_base_url=standin.openai_base_url,
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=standin.anthropic_base_url,
    )
    standin.script(*write_then_finish())
    job = stack.create(model="anthropic:claude-test").json()
    assert job["model"] == "anthropic:claude-test"
    stack.drain()
    assert stack.job(job["id"])["status"] == "completed"
    assert standin.requests[0].path == "/v1/messages"


def test_the_demo_uses_the_model_whose_key_is_set(redis_url, tmp_path, standin):
    from tests.web_process import COPYDESK

    # The demo's prompt; the stand-in plays the model that answers it.
    standin.script(
        *write_then_finish(
            "docs/troubleshooting.md", "# Troubleshooting\n", "Add troubleshooting", "Added a troubleshooting page."
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COPYDESK_", "OPENAI_", "ANTHROPIC_"))}
    env.update(
        COPYDESK_REDIS_URL=redis_url,
        COPYDESK_DATA_DIR=str(tmp_path / "data"),
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=standin.openai_base_url,
    )
    proc = subprocess.run([COPYDESK, "demo"], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Using openai:gpt-5.6-terra, because its API key is set" in proc.stdout
    assert "+# Troubleshooting" in proc.stdout
    assert standin.requests[0].body["model"] == "gpt-5.6-terra"


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_tokens_are_counted_per_run_and_per_job(provider, stack_factory, standin):
    stack = stack_factory(**PROVIDERS[provider](standin))
    write, finish = write_then_finish()
    write.input_tokens, write.output_tokens = 1200, 80
    finish.input_tokens, finish.output_tokens = 1500, 40
    standin.script(write, finish)
    job = stack.create("Add an FAQ").json()
    stack.drain()
    standin.script(Reply(text="The FAQ has one question.", input_tokens=900, output_tokens=12))
    stack.message(job["id"], "How many questions does the FAQ have?")
    stack.drain()

    response = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}/messages").json()
    prompts = [m for m in response["messages"] if m["role"] == "user"]
    uncached = {"cacheReadTokens": 0, "cacheWriteTokens": 0}
    assert [p["usage"] for p in prompts] == [
        {"inputTokens": 2700, "outputTokens": 120, **uncached, "billableTokens": 2820},
        {"inputTokens": 900, "outputTokens": 12, **uncached, "billableTokens": 912},
    ]
    assert response["usage"] == {
        "inputTokens": 3600,
        "outputTokens": 132,
        **uncached,
        "billableTokens": 3732,
        "maxTokens": None,
        "remainingTokens": None,
    }


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_cached_input_is_recorded_and_budgets_count_it_at_its_price(provider, stack_factory, standin):
    stack = stack_factory(**PROVIDERS[provider](standin))
    standin.script(*write_then_finish())
    job = stack.create("Add an FAQ").json()
    stack.drain()
    reported = [sent.usage for sent in standin.requests]
    used = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}/messages").json()["usage"]
    assert used["inputTokens"] == sum(u.total for u in reported)
    assert used["cacheReadTokens"] == sum(u.read for u in reported) > 0  # the second call reads the first's prefix
    assert used["cacheWriteTokens"] == sum(u.written for u in reported)
    assert used["billableTokens"] < used["inputTokens"] + used["outputTokens"]
    assert stack.conversation(job["id"])[0]["usage"] == {
        k: v for k, v in used.items() if k.endswith("Tokens") and k not in ("maxTokens", "remainingTokens")
    }
    if provider == "openai":
        assert {sent.body["prompt_cache_key"] for sent in standin.requests} == {job["id"]}
    else:
        assert all(sent.body["system"][-1]["cache_control"] for sent in standin.requests)

    # The same run under a budget of what the first one billed: counting cached input in full would overrun it.
    standin.script(*write_then_finish())
    budgeted = stack.create("Add an FAQ", maxTokens=used["billableTokens"]).json()
    stack.drain()
    done = stack.job(budgeted["id"])
    assert done["status"] == "completed", done
    spent = stack.api.get(f"/v2/agent/{stack.project_id}/job/{budgeted['id']}/messages").json()["usage"]
    assert spent["inputTokens"] + spent["outputTokens"] > used["billableTokens"] >= spent["billableTokens"]
    month = stack.api.get("/v2/agent/usage").json()["account"]
    assert month["billableTokens"] == used["billableTokens"] + spent["billableTokens"]
    assert month["cacheReadTokens"] == used["cacheReadTokens"] + spent["cacheReadTokens"]


def _fails_with(stack, standin, code, *items):
    standin.script(*items)
    job = stack.create("Rewrite the docs").json()
    stack.drain()
    failed = stack.job(job["id"])
    assert failed["status"] == "failed", failed
    assert failed["error"]["code"] == code, failed["error"]
    return failed, stack.conversation(job["id"])


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_each_run_limit_fails_the_job_with_its_own_code(provider, stack_factory, standin):
    # A time limit no run here comes near, even on a loaded machine: the time limit has its own test below.
    look = Reply(tool_calls=[ToolUse("list_files", {"pattern": "**/*.md"})], input_tokens=10)
    stack = stack_factory(
        **PROVIDERS[provider](standin), max_steps=3, max_tokens=5_000, max_bytes_written=64, run_timeout_seconds=600
    )

    failed, conversation = _fails_with(stack, standin, "step_limit_exceeded", look, look, look)
    assert "3 model calls" in failed["error"]["message"]
    assert conversation[0]["usage"]["inputTokens"] == 30  # the failed run's cost is kept
    assert conversation[0]["usage"]["billableTokens"] == 45

    greedy = Reply(tool_calls=[ToolUse("list_files", {})], input_tokens=4_000, output_tokens=1_500)
    failed, _ = _fails_with(stack, standin, "token_limit_exceeded", greedy)
    assert "5,500 model tokens" in failed["error"]["message"] and "5,000" in failed["error"]["message"]

    big = Reply(tool_calls=[ToolUse("write_file", {"path": "docs/big.md", "content": "x" * 100})])
    failed, _ = _fails_with(stack, standin, "write_limit_exceeded", big)
    assert "64 bytes" in failed["error"]["message"]
    assert standin.pending == 0
    _assert_nothing_pushed(stack)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_the_time_limit_fails_the_job_with_its_own_code(provider, stack_factory, standin):
    look = Reply(tool_calls=[ToolUse("list_files", {"pattern": "**/*.md"})], input_tokens=10)
    stack = stack_factory(**PROVIDERS[provider](standin), run_timeout_seconds=1)
    # The model call hangs past the limit (until the stand-in closes). Where the run is when its second is up
    # is not asserted: on a busy machine it may still be starting (clone, context), and the code is the same.
    failed, _ = _fails_with(stack, standin, "time_limit_exceeded", Hang(120), look)
    assert "time limit" in failed["error"]["message"]
    _assert_nothing_pushed(stack)


def _assert_nothing_pushed(stack) -> None:
    assert (
        subprocess.run(
            ["git", "--git-dir", str(stack.repo), "branch", "--list", "copydesk/*"], capture_output=True, text=True
        ).stdout
        == ""
    )


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_failed_follow_up_is_explained_on_the_pull_request(provider, stack_factory, standin):
    stack = stack_factory(**PROVIDERS[provider](standin))
    standin.script(*write_then_finish())
    job = stack.create("Add an FAQ").json()
    stack.drain()
    standin.script(Failure(401, "bad key"))
    stack.message(job["id"], "Now add a second question")
    stack.drain()
    failed = stack.job(job["id"])
    assert failed["error"]["code"] == "model_auth_failed" and failed["prLink"]
    pull = stack.ctx.local.pulls(stack.project_id)[0]
    assert pull.comments[-1]["body"].startswith("**Round 2** · ❌ failed")
    assert "This round failed and changed nothing" in pull.comments[-1]["body"]
    assert "`model_auth_failed`" in pull.comments[-1]["body"]


def test_a_job_archived_during_its_run_pushes_nothing_and_opens_no_second_pull_request(stack_factory, standin):
    stack = stack_factory(**PROVIDERS["openai"](standin))
    standin.script(*write_then_finish())
    job = stack.create("Add an FAQ").json()
    stack.drain()
    head = stack.ctx.git.out("rev-parse", f"refs/heads/{stack.job(job['id'])['branch']}", git_dir=stack.repo)

    # The pull request is merged (here: the job archived) while the follow-up's model is thinking.
    answer = threading.Event()  # the model thinks until the job is archived, however long that takes
    standin.script(Hang(120, until=answer), *write_then_finish("docs/more.md", "# More\n", "More", "Added more."))
    stack.message(job["id"], "Add another page")
    archived = []

    def archive_while_the_model_thinks():
        try:
            wait_until(lambda: len(standin.requests) >= 3, 60, "the follow-up's model call", interval=0.02)
            archived.append(stack.api.post(f"/v2/agent/{stack.project_id}/job/{job['id']}/archive").status_code)
        finally:
            answer.set()

    archiver = threading.Thread(target=archive_while_the_model_thinks)
    archiver.start()
    stack.drain()
    archiver.join()

    assert archived == [200]
    assert stack.job(job["id"])["status"] == "archived"
    assert stack.ctx.git.out("rev-parse", f"refs/heads/{stack.job(job['id'])['branch']}", git_dir=stack.repo) == head
    assert len(stack.ctx.local.pulls(stack.project_id)) == 1
    follow_up = stack.conversation(job["id"])[2]
    assert follow_up["status"] == "failed" and follow_up["error"]["code"] == "job_archived"
