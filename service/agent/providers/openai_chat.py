"""The `openai` provider: Chat Completions with tools, for OpenAI and every OpenAI-compatible server."""

import json
from typing import Any

import openai

from service import billing
from service.agent.model import ChatMessage, ModelError, ModelReply, ToolCall, ToolSpec, Usage
from service.agent.providers import KEY_VARIABLES
from service.agent.providers.sdk_model import MAX_ARGUMENT_DEPTH, SdkModel, nesting_depth
from service.codes import RunFailure

ERROR_PREFIX = "ERROR: "


class OpenAIChatModel(SdkModel):
    """A `ModelClient` over the Chat Completions API; `base_url` points it at an OpenAI-compatible server."""

    PROVIDER, VENDOR, KEY_VARIABLE, SDK = "openai", "OpenAI", KEY_VARIABLES["openai"], openai

    def __init__(self, model: str, *, cache_key: str | None = None, **options) -> None:
        super().__init__(model, **options)
        self.cache_key = cache_key

    def _new_client(self, **options):
        return openai.OpenAI(**options)

    def complete(
        self, messages: list[ChatMessage], tools: list[ToolSpec], *, max_output_tokens: int | None = None
    ) -> ModelReply:
        """Send the conversation and tools as one chat completion request; return the model's turn."""
        request = {
            "model": self.model,
            "messages": to_openai_messages(messages),
            "max_completion_tokens": self.output_limit(max_output_tokens),
        }
        if tools:
            request["tools"] = [to_openai_tool(spec) for spec in tools]
            request["tool_choice"] = "auto"
        if self.cache_key:
            # Routes the job's requests to the servers that hold its cached prefix. The prefix itself stays
            # byte-stable because every request is rebuilt from the same transcript in the same way.
            request["prompt_cache_key"] = self.cache_key
        completion = self._call(lambda: self._client.chat.completions.create(**request))
        if not completion.choices:
            raise ModelError(f"{self.name} answered with no choices", code=RunFailure.MODEL_ERROR)
        return to_reply(completion)


def preloaded_http_client():
    """An HTTP client for this process's runs, with the parts of the SDK it imports only on first use imported."""
    http = openai.DefaultHttpxClient()
    _ = openai.OpenAI(api_key="unused", http_client=http, max_retries=0).chat.completions  # no request is sent
    return http


def to_openai_tool(spec: ToolSpec) -> dict:
    """A tool spec as a Chat Completions function tool."""
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    }


def to_openai_messages(messages: list[ChatMessage]) -> list[dict]:
    """The neutral conversation as Chat Completions messages; tool errors are marked in their text."""
    out = []
    for message in messages:
        if message.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": _arguments_text(call.arguments)},
                    }
                    for call in message.tool_calls
                ]
            elif item["content"] is None:
                item["content"] = ""
            out.append(item)
        elif message.role == "tool":
            # Chat Completions has no error flag on tool results, so the text carries it.
            content = ERROR_PREFIX + message.content if message.is_error else message.content
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": content})
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def to_reply(completion) -> ModelReply:
    """The first choice of a chat completion as a neutral reply; usage is zero when the server sent none."""
    message = completion.choices[0].message
    calls = []
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)
        if function is None:
            continue  # a custom (non-function) tool call; we offer none
        calls.append(ToolCall(call.id, function.name, _parse_arguments(function.arguments)))
    return ModelReply(text=message.content or message.refusal or "", tool_calls=calls, usage=_usage(completion.usage))


def _usage(usage) -> Usage:
    """A completion's usage; `cached_tokens` (part of `prompt_tokens`) is absent from many compatible servers."""
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    return Usage.billed(usage.prompt_tokens or 0, usage.completion_tokens or 0, cache_read=cached, rates=billing.OPENAI)


def _parse_arguments(raw: str | None):
    # Invalid JSON stays a string: the tool executor then tells the model its arguments were not an object.
    # So does JSON nested too deep to decode (RecursionError) or to carry around safely.
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        return raw
    return raw if nesting_depth(parsed) > MAX_ARGUMENT_DEPTH else parsed


def _arguments_text(arguments) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)
