"""Turns a vendor's HTTP failure into a retry (`Transient`) or a run-ending `ModelError` with a clear message."""

import email.utils
import time
from collections.abc import Mapping

from service.agent.model import ModelError
from service.agent.providers.retry import Transient
from service.codes import RunFailure

MESSAGE_MAX_CHARS = 500


def status_failure(
    status: int,
    body: object,
    headers: Mapping[str, str],
    *,
    vendor: str,
    model: str,
    key_variable: str,
    api_key: str | None,
) -> Exception:
    """The exception for an HTTP error answer: Transient for 408/409/429/5xx, else a ModelError to raise at once.

    The vendor's message is included with the API key blanked out of it.
    """
    message = _redact(vendor_message(body), api_key)
    detail = f"HTTP {status}" + (f": {message}" if message else "")
    if status == 429 and _error_field(body, "code") == "insufficient_quota":
        # OpenAI's "out of credit" is a 429 too, but waiting does not refill the account.
        return ModelError(
            f"{vendor} refused the request for {model!r}: {detail}; check the account's plan and billing",
            code=RunFailure.MODEL_ERROR,
        )
    if status in (408, 409, 429) or status >= 500:
        return Transient(retry_after(headers), detail)
    if status == 401:
        # The vendor's 401 text may echo a masked form of the key; the status says enough.
        return ModelError(
            f"{vendor} rejected the API key (HTTP 401); check {key_variable}", code=RunFailure.MODEL_AUTH_FAILED
        )
    if status == 403:
        return ModelError(
            f"{vendor} refused access with the API key ({detail}); check {key_variable} and what the key may use",
            code=RunFailure.MODEL_AUTH_FAILED,
        )
    hint = f"; the model name {model!r} may be wrong" if status == 404 else ""
    return ModelError(f"{vendor} refused the request for {model!r}: {detail}{hint}", code=RunFailure.MODEL_ERROR)


def sdk_call(sdk, send, *, vendor: str, model: str, key_variable: str, api_key: str, timeout: float):
    """Call `send()` and turn the vendor SDK's exceptions into Transient or ModelError.

    `sdk` is the `openai` or `anthropic` module: both SDKs name their exceptions alike.
    """
    try:
        return send()
    except sdk.APIStatusError as exc:
        raise status_failure(
            exc.status_code,
            exc.body,
            exc.response.headers,
            vendor=vendor,
            model=model,
            key_variable=key_variable,
            api_key=api_key,
        ) from exc
    except sdk.APITimeoutError as exc:
        raise Transient(None, f"no answer from {vendor} within {timeout:.0f} s") from exc
    except sdk.APIConnectionError as exc:
        raise Transient(None, f"could not connect to {vendor}: {connection_detail(exc)}") from exc
    except RecursionError:
        # The SDK decodes the whole reply (an Anthropic tool call's input included) recursively: a hostile or
        # broken server's deeply nested JSON must end the run as the model's fault, not an internal error.
        raise ModelError(
            f"{vendor} sent a reply for {model!r} nested too deeply to read", code=RunFailure.MODEL_ERROR
        ) from None


def missing_key(vendor: str, key_variable: str) -> ModelError:
    """The error for a provider used without its API key."""
    return ModelError(f"no API key is configured for {vendor}; set {key_variable}", code=RunFailure.MODEL_AUTH_FAILED)


def connection_detail(exc: Exception) -> str:
    """What went wrong underneath an SDK's connection error (refused, reset, DNS...)."""
    cause = exc.__cause__ or exc.__context__ or exc
    return str(cause) or type(cause).__name__


def vendor_message(body: object) -> str:
    """The human-readable message in an error body (`{"error": {"message": ...}}` and variants), shortened."""
    error = body.get("error", body) if isinstance(body, Mapping) else body
    if isinstance(error, Mapping):
        text = error.get("message")
        text = text if isinstance(text, str) else ""
    elif isinstance(error, str):
        text = error
    else:
        text = ""
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_MAX_CHARS else text[:MESSAGE_MAX_CHARS] + "…"


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, else `retry-after` (seconds or an HTTP date)."""
    try:
        return float(headers["retry-after-ms"]) / 1000
    except (KeyError, TypeError, ValueError):
        pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    when = email.utils.parsedate_tz(raw)
    return None if when is None else max(0.0, email.utils.mktime_tz(when) - time.time())


def _error_field(body: object, name: str) -> object:
    error = body.get("error", body) if isinstance(body, Mapping) else None
    return error.get(name) if isinstance(error, Mapping) else None


def _redact(text: str, api_key: str | None) -> str:
    return text.replace(api_key, "[API key]") if api_key else text
