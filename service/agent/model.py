"""The neutral chat format every model adapter speaks, and the factory that picks an adapter by name."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from service.billing import NO_CACHE, CacheRates, billable
from service.codes import RunFailure
from service.errors import RunFailed

ChatRole = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model; `parameters` is a JSON Schema object describing its arguments."""

    name: str
    description: str
    parameters: dict


@dataclass(frozen=True)
class ToolCall:
    """One tool invocation the model asked for; `id` pairs it with its result message."""

    id: str
    name: str
    arguments: dict


@dataclass
class ChatMessage:
    """One turn of the conversation: assistant turns may carry tool calls, tool turns answer one call."""

    role: ChatRole
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    is_error: bool = False  # tool turns only: the tool refused or failed (Anthropic's `is_error`)


@dataclass(frozen=True)
class Usage:
    """Model tokens of one or more calls. `input_tokens` counts all input, of which `cache_read_tokens` were served
    from the vendor's prompt cache and `cache_write_tokens` written to it; `billable_tokens` is what budgets and
    caps count (service.billing), all input and output unless given."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    billable_tokens: int = -1

    def __post_init__(self) -> None:
        if self.billable_tokens < 0:
            object.__setattr__(self, "billable_tokens", self.input_tokens + self.output_tokens)

    @classmethod
    def billed(
        cls,
        input_tokens: int,
        output_tokens: int,
        *,
        cache_read: int = 0,
        cache_write: int = 0,
        rates: CacheRates = NO_CACHE,
    ) -> "Usage":
        """One call's usage, its billable tokens weighted by the vendor's cache `rates`."""
        return cls(
            input_tokens,
            output_tokens,
            cache_read,
            cache_write,
            billable(input_tokens, output_tokens, cache_read, cache_write, rates),
        )

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.billable_tokens + other.billable_tokens,
        )

    def to_api(self) -> dict:
        """The usage record stored on a message and shown by the API (service.billing.USAGE_FIELDS)."""
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "billableTokens": self.billable_tokens,
        }


@dataclass(frozen=True)
class ModelReply:
    """What one model call returned: free text, the tool calls to run in order, and the tokens it cost."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


class ModelClient(Protocol):
    """A chat model with tool calling; `name` is the `provider:model` name recorded on the job."""

    name: str

    def complete(
        self, messages: list[ChatMessage], tools: list[ToolSpec], *, max_output_tokens: int | None = None
    ) -> ModelReply:
        """Send the conversation and the tool specs; return the model's next turn. `max_output_tokens` lowers
        the adapter's own output limit for this request (what is left of a job's token budget)."""


class ModelError(RunFailed):
    """A model call or model configuration that ends the run."""

    def __init__(self, message: str, code: RunFailure = RunFailure.MODEL_ERROR) -> None:
        super().__init__(code, message)


class UnknownModel(ModelError):
    """A model name whose provider Copydesk does not have, or that is not `provider:model`."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=RunFailure.UNKNOWN_MODEL)


# Builds a client from the part of the name after `provider:`, the run's index within its job, and a key that
# stays the same over the job's runs (its id) for vendors that route requests to their prompt caches by one.
ProviderBuilder = Callable[[str, int, str | None], ModelClient]


class ModelFactory:
    """Turns a model name `provider:model` into a client for one run.

    `scripts` maps aliases to bundled script files (`scripted:demo`); `providers` adds adapters by provider name.
    """

    def __init__(
        self, scripts: Mapping[str, Path] | None = None, providers: Mapping[str, ProviderBuilder] | None = None
    ) -> None:
        self._scripts = dict(scripts or {})
        self._providers: dict[str, ProviderBuilder] = {"scripted": self._scripted, **(providers or {})}

    @property
    def providers(self) -> list[str]:
        return sorted(self._providers)

    def client(self, name: str, *, run_index: int, cache_key: str | None = None) -> ModelClient:
        """A client for model `name`; `run_index` counts the job's runs from 0 (the create is run 0); `cache_key`
        names the job to the vendor's prompt cache."""
        provider, model = self.split(name)
        return self._providers[provider](model, run_index, cache_key)

    def split(self, name: str) -> tuple[str, str]:
        """(provider, model) of `name`; raise UnknownModel when it is malformed or its provider is not available."""
        provider, sep, model = name.partition(":")
        if not sep or not provider or not model:
            raise UnknownModel(f"model name {name!r} is not of the form provider:model")
        if provider not in self._providers:
            raise UnknownModel(f"model provider {provider!r} is not available (known: {', '.join(self.providers)})")
        return provider, model

    def check(self, name: str) -> str:
        """Raise ModelError when model `name` cannot be used (name, provider, a scripted model's file); return its
        provider. Builds no vendor client, so no vendor SDK is imported."""
        provider, model = self.split(name)
        if provider == "scripted":
            self._scripted(model, 0)
        return provider

    def _scripted(self, model: str, run_index: int, cache_key: str | None = None) -> ModelClient:
        # Imported here because the scripted provider itself depends on this module's types.
        from service.agent.scripted import ScriptedModel, load_script

        path = self._scripts.get(model, Path(model))
        return ScriptedModel(f"scripted:{model}", load_script(path), run_index=run_index)
