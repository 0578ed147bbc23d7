"""The vendor model providers (`openai`, `anthropic`), built from the settings for the model factory."""

import importlib
from typing import Any

from service.agent.model import ModelClient, ProviderBuilder
from service.agent.providers.retry import RetryPolicy

# Each vendor provider's adapter module; importing it imports the vendor's SDK.
ADAPTER_MODULES = {
    "openai": "service.agent.providers.openai_chat",
    "anthropic": "service.agent.providers.anthropic_messages",
}


# Provider name -> an HTTP client for its SDK that every run of the process (and of its forks) shares; see preload.
HttpClients = dict[str, Any]


def build_providers(settings, http_clients: HttpClients | None = None) -> dict[str, ProviderBuilder]:
    """Builders for `openai:MODEL` and `anthropic:MODEL` using the keys and base URLs in `settings`, and the
    preloaded `http_clients` where there is one (else each client builds its own)."""
    retry = RetryPolicy(budget=settings.model_retry_seconds)
    http = http_clients if http_clients is not None else {}

    # The vendor SDKs take seconds to import, so the web process and the CLI never import them: a worker imports
    # the configured ones before it forks (`preload`), any other on the first run that uses it.
    def openai_builder(model: str, run_index: int, cache_key: str | None) -> ModelClient:
        from service.agent.providers.openai_chat import OpenAIChatModel

        return OpenAIChatModel(
            model,
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            retry=retry,
            cache_key=cache_key if settings.openai_prompt_cache_key else None,
            http_client=http.get("openai"),
        )

    def anthropic_builder(model: str, run_index: int, cache_key: str | None) -> ModelClient:
        from service.agent.providers.anthropic_messages import AnthropicModel

        return AnthropicModel(
            model,
            api_key=settings.anthropic_api_key,
            base_url=settings.anthropic_base_url,
            retry=retry,
            http_client=http.get("anthropic"),
        )

    return {"openai": openai_builder, "anthropic": anthropic_builder}


def configured_providers(settings) -> list[str]:
    """The vendor providers this installation uses: those with an API key, and those of its allowed models."""
    named = {name.partition(":")[0] for name in settings.allowed_models}
    keyed = set(KEY_VARIABLES) - set(missing_keys(settings))
    return sorted((named | keyed) & set(ADAPTER_MODULES))


def preload(settings, http_clients: HttpClients) -> list[str]:
    """Import the configured providers' adapters and SDKs now, and build each one's HTTP client into
    `http_clients`; returns the providers' names.

    A worker calls this before it forks work horses: each horse then finds the SDK imported (seconds and tens of
    megabytes a run otherwise) and its HTTP client built (the CA bundle loaded). The worker itself never sends a
    request with those clients, so a horse never shares a connection with it.
    """
    providers = configured_providers(settings)
    for provider in providers:
        http_clients[provider] = importlib.import_module(ADAPTER_MODULES[provider]).preloaded_http_client()
    return providers


# Each vendor provider's key variable, named in messages (never the key).
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def missing_keys(settings) -> dict[str, str]:
    """The vendor providers whose API key is not configured, each with the variable that sets it."""
    keys = {"openai": settings.openai_api_key, "anthropic": settings.anthropic_api_key}
    return {provider: variable for provider, variable in KEY_VARIABLES.items() if not keys[provider]}
