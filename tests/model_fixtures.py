"""A pytest plugin: the model vendors' stand-in (`standin`) and the settings that point at it."""

import pytest

from tests.model_standin import ModelStandIn, Reply, ToolUse

PROVIDERS = {
    "openai": lambda standin: dict(
        model="openai:gpt-test", openai_api_key="sk-test", openai_base_url=standin.openai_base_url
    ),
    "anthropic": lambda standin: dict(
        model="anthropic:claude-test", anthropic_api_key="sk-ant-test", anthropic_base_url=standin.anthropic_base_url
    ),
}


@pytest.fixture
def standin():
    with ModelStandIn() as running:
        yield running


def write_then_finish(path="docs/faq.md", content="# FAQ\n", title="Add an FAQ", summary="Added the FAQ."):
    return (
        Reply(tool_calls=[ToolUse("write_file", {"path": path, "content": content})]),
        Reply(tool_calls=[ToolUse("finish", {"title": title, "summary": summary})]),
    )


def finish_without_change(reason="The docs already cover it."):
    """A vendor reply that ends the run saying the request needs no change."""
    return Reply(tool_calls=[ToolUse("finish", {"title": "", "summary": reason, "no_change_needed": True})])
