"""The vendor model providers (`openai`, `anthropic`), built from the settings for the model factory."""

from service.agent.model import ModelClient, ProviderBuilder
from service.agent.providers.retry import RetryPolicy


def build_providers(settings) -> dict[str, ProviderBuilder]:
    """Builders for `openai:MODEL` and `anthropic:MODEL` using the keys and base URLs in `settings`."""
    retry = RetryPolicy(budget=settings.model_retry_seconds)

    # The vendor SDKs take seconds to import, so each is imported on the first run that uses it: the web
    # process and the CLI never pay for them.
    def openai_builder(model: str, run_index: int, cache_key: str | None) -> ModelClient:
        from service.agent.providers.openai_chat import OpenAIChatModel

        return OpenAIChatModel(model, api_key=settings.openai_api_key, base_url=settings.openai_base_url,
                               retry=retry, cache_key=cache_key if settings.openai_prompt_cache_key else None)

    def anthropic_builder(model: str, run_index: int, cache_key: str | None) -> ModelClient:
        from service.agent.providers.anthropic_messages import AnthropicModel

        return AnthropicModel(model, api_key=settings.anthropic_api_key, base_url=settings.anthropic_base_url,
                              retry=retry)

    return {"openai": openai_builder, "anthropic": anthropic_builder}


# Each vendor provider's key variable, named in messages (never the key).
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def missing_keys(settings) -> dict[str, str]:
    """The vendor providers whose API key is not configured, each with the variable that sets it."""
    keys = {"openai": settings.openai_api_key, "anthropic": settings.anthropic_api_key}
    return {provider: variable for provider, variable in KEY_VARIABLES.items() if not keys[provider]}
