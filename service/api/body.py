"""Reading and validating request bodies and query strings of the API."""

import hashlib
import json
import re
from dataclasses import dataclass

from flask import Request

from service.errors import InvalidJson, InvalidRequest, PayloadTooLarge, UnsupportedMediaType
from service.models import JobStatus
from service.settings import Settings

# A conservative subset of git's check-ref-format: no control characters, spaces, "..", "~^:?*[\".
_REF = re.compile(r"^(?!/)(?!.*//)(?!.*\.\.)(?!.*@\{)(?!.*\.lock$)(?!.*/$)(?!.*\.$)[^\x00-\x20~^:?*\[\\\x7f]{1,255}$")


@dataclass(frozen=True)
class CreateRequest:
    prompt: str
    model: str
    ref: str | None
    as_draft: bool


@dataclass(frozen=True)
class ListQuery:
    status: JobStatus | None
    limit: int
    cursor: str | None


def read_object(request: Request, max_bytes: int) -> dict:
    """The request's JSON object body, after checking media type and size."""
    if request.mimetype != "application/json":
        raise UnsupportedMediaType("send the body as JSON with `Content-Type: application/json`")
    if request.content_length is not None and request.content_length > max_bytes:
        raise PayloadTooLarge(f"the body is larger than {max_bytes} bytes")
    raw = request.get_data(cache=True)
    if len(raw) > max_bytes:
        raise PayloadTooLarge(f"the body is larger than {max_bytes} bytes")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidJson(f"the body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidRequest("the body must be a JSON object")
    return body


def body_hash(body: dict) -> str:
    """A hash of the body's meaning, so that retries differing only in whitespace or key order match."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def parse_prompt(body: dict, settings: Settings, allowed: tuple[str, ...] = ("prompt",)) -> str:
    """Check the body has only `allowed` fields and a valid `prompt`; return the prompt."""
    for name in body:
        if name not in allowed:
            raise InvalidRequest(f"unknown field `{name}`; allowed: {', '.join(allowed)}", field=name)
    if "prompt" not in body:
        raise InvalidRequest("`prompt` is required", field="prompt")
    prompt = body["prompt"]
    if not isinstance(prompt, str):
        raise InvalidRequest("`prompt` must be a string", field="prompt")
    if len(prompt) < 1:
        raise InvalidRequest("`prompt` must not be empty", field="prompt")
    if len(prompt) > settings.max_prompt_chars:
        raise InvalidRequest(f"`prompt` is longer than {settings.max_prompt_chars} characters", field="prompt")
    return prompt


def parse_create(body: dict, settings: Settings) -> CreateRequest:
    """Validate a create-job body."""
    prompt = parse_prompt(body, settings, allowed=("prompt", "model", "ref", "asDraft"))
    model = body.get("model", settings.model)
    if not isinstance(model, str) or model not in settings.allowed_models:
        raise InvalidRequest(f"`model` must be one of: {', '.join(settings.allowed_models)}", field="model")
    ref = body.get("ref")
    if ref is not None and (not isinstance(ref, str) or not _REF.match(ref)):
        raise InvalidRequest("`ref` must be a branch name", field="ref")
    as_draft = body.get("asDraft", False)
    if not isinstance(as_draft, bool):
        raise InvalidRequest("`asDraft` must be true or false", field="asDraft")
    return CreateRequest(prompt=prompt, model=model, ref=ref, as_draft=as_draft)


def parse_list_query(args) -> ListQuery:
    """Validate the list endpoint's query string: `status`, `limit` (1..100), `cursor`."""
    for name in args:
        if name not in ("status", "limit", "cursor"):
            raise InvalidRequest(f"unknown query parameter `{name}`; allowed: status, limit, cursor", field=name)
    status = args.get("status")
    if status is not None:
        try:
            status = JobStatus(status)
        except ValueError:
            raise InvalidRequest(f"`status` must be one of: {', '.join(s.value for s in JobStatus)}",
                                 field="status") from None
    raw_limit = args.get("limit", "20")
    if not (raw_limit.isascii() and raw_limit.isdecimal()) or not 1 <= int(raw_limit) <= 100:
        raise InvalidRequest("`limit` must be a whole number from 1 to 100", field="limit")
    return ListQuery(status=status, limit=int(raw_limit), cursor=args.get("cursor") or None)


def idempotency_key(raw: str | None) -> str | None:
    """The `Idempotency-Key` header, checked: 1 to 255 printable ASCII characters."""
    if raw is None:
        return None
    if not 1 <= len(raw) <= 255 or not all(33 <= ord(c) <= 126 for c in raw):
        raise InvalidRequest("`Idempotency-Key` must be 1 to 255 printable ASCII characters",
                             field="Idempotency-Key")
    return raw
