"""The `anthropic` provider: the Messages API with tools."""

from typing import Any

import anthropic

from service import billing
from service.agent.model import ChatMessage, ModelReply, ToolCall, ToolSpec, Usage
from service.agent.providers import KEY_VARIABLES
from service.agent.providers.sdk_model import MAX_ARGUMENT_DEPTH, SdkModel, nesting_depth

# Stands in for a missing first user turn: the API wants the conversation to start with one.
OPENING_TURN = "(The conversation so far follows.)"
CACHE_BREAKPOINT = {"type": "ephemeral"}


class AnthropicModel(SdkModel):
    """A `ModelClient` over Anthropic's Messages API."""

    PROVIDER, VENDOR, KEY_VARIABLE, SDK = "anthropic", "Anthropic", KEY_VARIABLES["anthropic"], anthropic

    def _new_client(self, **options):
        return anthropic.Anthropic(**options)

    def complete(
        self, messages: list[ChatMessage], tools: list[ToolSpec], *, max_output_tokens: int | None = None
    ) -> ModelReply:
        """Send the conversation and tools as one Messages request; return the model's turn."""
        system, turns = to_anthropic_messages(messages)
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.output_limit(max_output_tokens),
            "messages": turns,
        }
        if system:
            request["system"] = [{"type": "text", "text": system}]
        if tools:
            request["tools"] = [to_anthropic_tool(spec) for spec in tools]
        mark_cache_breakpoints(request)
        return to_reply(self._call(lambda: self._client.messages.create(**request)))


def mark_cache_breakpoints(request: dict) -> None:
    """Put the prompt-cache breakpoints (at most four) where each request reuses the previous one's prefix.

    The prompt is cached in the order tools, system, messages. Breakpoints go on the last tool (the tools stay
    when the system prompt changes between a job's runs), the system prompt, the previous request's last turn
    (the user turn before the assistant's latest reply: what the previous request wrote to the cache), and the
    last turn (written for the next request). The API looks back only 20 blocks from a breakpoint for an earlier
    entry, so the breakpoint on the previous turn keeps the hit however many tool calls one reply made.
    """
    marked = [request.get("tools", [None])[-1], request.get("system", [None])[-1]]
    turns = request["messages"]
    marked += [turns[i]["content"][-1] for i in (len(turns) - 3, len(turns) - 1) if i >= 0 and turns[i]["content"]]
    for block in marked:
        if block is not None:
            block["cache_control"] = dict(CACHE_BREAKPOINT)


def preloaded_http_client():
    """An HTTP client for this process's runs, with the parts of the SDK it imports only on first use imported."""
    http = anthropic.DefaultHttpxClient()
    _ = anthropic.Anthropic(api_key="unused", http_client=http, max_retries=0).messages  # no request is sent
    # The SDK traces each request through OpenTelemetry, whose propagators (trace context, baggage) load on the
    # first request a process sends: 8 modules and ~2 ms found through package entry points, in every work horse.
    import opentelemetry.propagate  # noqa: F401

    return http


def to_anthropic_tool(spec: ToolSpec) -> dict:
    """A tool spec as a Messages API client tool."""
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


def to_anthropic_messages(messages: list[ChatMessage]) -> tuple[str, list[dict]]:
    """The neutral conversation as (system text, alternating user/assistant turns of content blocks).

    Tool results become `tool_result` blocks of a user turn; neighbouring turns of one role are merged.
    """
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    turns: list[dict] = []
    for message in messages:
        if message.role == "system":
            continue
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if turns and turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": OPENING_TURN}]})
    return system, turns


def _blocks(message: ChatMessage) -> tuple[str, list[dict]]:
    if message.role == "tool":
        return "user", [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
                "is_error": message.is_error,
            }
        ]
    # The API refuses empty or whitespace-only text blocks.
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content.strip() else []
    if message.role == "assistant":
        # Arguments refused as too deep are sent back as an empty object: the API wants one, and the paired
        # tool result already tells the model what was wrong.
        blocks += [
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": call.arguments if isinstance(call.arguments, dict) else {},
            }
            for call in message.tool_calls
        ]
    return message.role, blocks


def to_reply(response) -> ModelReply:
    """A Messages API response as a neutral reply: its text blocks joined, its tool_use blocks as calls."""
    text = "".join(block.text for block in response.content if block.type == "text")
    calls = [
        ToolCall(block.id, block.name, _arguments(block.input))
        for block in response.content
        if block.type == "tool_use"
    ]
    usage = response.usage
    # `input_tokens` is only the uncached part of the input here; the cached parts are billed at their own price.
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    written = getattr(usage, "cache_creation_input_tokens", None) or 0
    return ModelReply(
        text=text,
        tool_calls=calls,
        usage=Usage.billed(
            (usage.input_tokens or 0) + read + written,
            usage.output_tokens or 0,
            cache_read=read,
            cache_write=written,
            rates=billing.ANTHROPIC,
        ),
    )


def _arguments(given):
    # Too deep to be a tool's arguments: a text the executor refuses as "not a JSON object" (the model is told).
    if nesting_depth(given) > MAX_ARGUMENT_DEPTH:
        return f"(arguments nested more than {MAX_ARGUMENT_DEPTH} levels deep)"
    return given
