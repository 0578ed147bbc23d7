"""What both vendor adapters share: the key check, one SDK client without its own retries, and failure mapping."""

from types import ModuleType

from service.agent.nesting import containers
from service.agent.providers.failures import missing_key, sdk_call
from service.agent.providers.retry import RetryPolicy

# A tool call's arguments are an object of plain values. Anything nested deeper is treated as invalid arguments
# before it reaches code that walks it recursively (an event's summary, the transcript sent back).
MAX_ARGUMENT_DEPTH = 32


class SdkModel:
    """Base of a `ModelClient` over a vendor SDK; subclasses set the class attributes and build `request`s."""

    PROVIDER: str  # the `provider:` part of model names
    VENDOR: str  # the vendor's name in messages
    KEY_VARIABLE: str  # where the key comes from, named in errors (never the key)
    SDK: ModuleType  # the SDK module, whose exceptions sdk_call translates

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None,
        retry: RetryPolicy,
        timeout: float = 120,
        max_tokens: int = 8192,
        http_client=None,
    ) -> None:
        self.name = f"{self.PROVIDER}:{model}"
        self.vendor = f"the {self.VENDOR}-compatible server at {base_url}" if base_url else self.VENDOR
        if not api_key:
            raise missing_key(self.vendor, self.KEY_VARIABLE)
        self.model = model
        self._api_key = api_key
        self._retry = retry
        self._timeout = timeout
        self._max_tokens = max_tokens
        # max_retries=0: only our RetryPolicy retries, so the wait stays within its bounds.
        options = {"http_client": http_client} if http_client is not None else {}
        self._client = self._new_client(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0, **options)

    def output_limit(self, cap: int | None) -> int:
        """The request's output token limit: the adapter's own, lowered to `cap` when one is given."""
        return self._max_tokens if cap is None else max(1, min(self._max_tokens, cap))

    def _new_client(self, **options):
        """The SDK's client, built with `options` (api_key, base_url, timeout, max_retries, maybe http_client)."""
        raise NotImplementedError

    def _call(self, send):
        """Run one SDK call under the retry policy, vendor failures translated to ModelError."""
        return self._retry.call(
            lambda: sdk_call(
                self.SDK,
                send,
                vendor=self.vendor,
                model=self.model,
                key_variable=self.KEY_VARIABLE,
                api_key=self._api_key,
                timeout=self._timeout,
            ),
            what=self.name,
        )


def nesting_depth(value) -> int:
    """How deeply `value`'s lists and dicts nest (0 for a plain value), counted without recursion."""
    return max((depth for depth, _ in containers(value)), default=0)
