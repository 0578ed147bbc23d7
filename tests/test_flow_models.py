"""The job flow through the API with each real model adapter, against the vendors' protocol stand-ins."""

import os
import subprocess

import pytest

from tests.model_standin import Failure, ModelStandIn, Reply, ToolUse
from tests.test_flow import show

PROVIDERS = {
    "openai": lambda standin: dict(model="openai:gpt-test", openai_api_key="sk-test",
                                   openai_base_url=standin.openai_base_url),
    "anthropic": lambda standin: dict(model="anthropic:claude-test", anthropic_api_key="sk-ant-test",
                                      anthropic_base_url=standin.anthropic_base_url),
}


@pytest.fixture
def standin():
    with ModelStandIn() as running:
        yield running


def write_then_finish(path="docs/faq.md", content="# FAQ\n", title="Add an FAQ", summary="Added the FAQ."):
    return (Reply(tool_calls=[ToolUse("write_file", {"path": path, "content": content})]),
            Reply(tool_calls=[ToolUse("finish", {"title": title, "summary": summary})]))


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
    assert stack.conversation(job["id"])[-1]["content"] == "I added a line to the section I wrote."


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_model_failures_fail_the_job_with_their_code(provider, stack_factory, standin):
    stack = stack_factory(**PROVIDERS[provider](standin))
    standin.script(Failure(401, "bad key"))
    refused = stack.create().json()
    stack.drain()
    failed = stack.job(refused["id"])
    assert failed["status"] == "failed" and failed["error"]["code"] == "model_auth_failed"
    assert "sk-test" not in failed["error"]["message"] and "sk-ant-test" not in failed["error"]["message"]

    standin.script(*[Failure(503, "busy", headers={"retry-after": "0"})] * 5)
    busy = stack.create().json()
    stack.drain()
    unavailable = stack.job(busy["id"])
    assert unavailable["status"] == "failed" and unavailable["error"]["code"] == "model_unavailable"
    assert standin.pending == 0


def test_create_may_choose_among_the_configured_models(stack_factory, standin):
    stack = stack_factory(model="openai:gpt-test", models=("openai:gpt-test", "anthropic:claude-test"),
                          openai_api_key="sk-test", openai_base_url=standin.openai_base_url,
                          anthropic_api_key="sk-ant-test", anthropic_base_url=standin.anthropic_base_url)
    standin.script(*write_then_finish())
    job = stack.create(model="anthropic:claude-test").json()
    assert job["model"] == "anthropic:claude-test"
    stack.drain()
    assert stack.job(job["id"])["status"] == "completed"
    assert standin.requests[0].path == "/v1/messages"


def test_the_demo_uses_the_model_whose_key_is_set(redis_url, tmp_path, standin):
    from tests.test_cli import COPYDESK

    # The demo's prompt; the stand-in plays the model that answers it.
    standin.script(*write_then_finish("docs/troubleshooting.md", "# Troubleshooting\n", "Add troubleshooting",
                                      "Added a troubleshooting page."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COPYDESK_", "OPENAI_", "ANTHROPIC_"))}
    env.update(COPYDESK_REDIS_URL=redis_url, COPYDESK_DATA_DIR=str(tmp_path / "data"),
               OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=standin.openai_base_url)
    proc = subprocess.run([COPYDESK, "demo"], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Using openai:gpt-5.6-terra, because its API key is set" in proc.stdout
    assert "+# Troubleshooting" in proc.stdout
    assert standin.requests[0].body["model"] == "gpt-5.6-terra"
