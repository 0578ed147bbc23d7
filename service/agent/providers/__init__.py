"""The vendor model providers (`openai`, `anthropic`), built from the settings for the model factory."""

from service.agent.model import ModelClient, ProviderBuilder
from service.agent.providers.anthropic_messages import AnthropicModel
from service.agent.providers.openai_chat import OpenAIChatModel
from service.agent.providers.retry import RetryPolicy, Transient

__all__ = ["AnthropicModel", "OpenAIChatModel", "RetryPolicy", "Transient", "build_providers"]


def build_providers(settings) -> dict[str, ProviderBuilder]:
    """Builders for `openai:MODEL` and `anthropic:MODEL` using the keys and base URLs in `settings`."""

    def openai_builder(model: str, run_index: int) -> ModelClient:
        return OpenAIChatModel(model, api_key=settings.openai_api_key, base_url=settings.openai_base_url,
                               retry=RetryPolicy())

    def anthropic_builder(model: str, run_index: int) -> ModelClient:
        return AnthropicModel(model, api_key=settings.anthropic_api_key, base_url=settings.anthropic_base_url,
                              retry=RetryPolicy())

    return {"openai": openai_builder, "anthropic": anthropic_builder}
