"""Reading and validating request bodies and query strings of the API."""

import hashlib
import itertools
import json
import operator
import re
from dataclasses import dataclass

from flask import Request

from service import fastjson
from service.errors import InvalidJson, InvalidRequest, PayloadTooLarge, UnsupportedMediaType
from service.job_events import EventType
from service.models import JobStatus
from service.prompts import check_prompt, check_text
from service.settings import Settings
from service.store.job_events import check_event_id
from service.store.jobs import IdempotencyClaim

EVENTS_PAGE = 500  # events per `?after=` answer
MAX_TOKENS_CAP = 10**10
_MONTH = re.compile(r"^[0-9]{4}-(0[1-9]|1[0-2])$")

MAX_JSON_DEPTH = 64  # nesting of arrays and objects; Python's parser would hit its recursion limit near 1,000
# A JSON string in the unrolled form, so that no two ways of matching compete; an unterminated one runs to the
# end. Every match succeeds where it starts and nothing is tried twice: linear, where `"(?:[^"\\]|\\.)*"` spent
# quadratic time on `"` followed by many `\"` (each `"` started a scan to the end that then failed).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # an opening bracket counts 2, a closing one 0

# A conservative subset of git's check-ref-format: no control characters, spaces, "..", "~^:?*[\".
_REF = re.compile(r"^(?!/)(?!.*//)(?!.*\.\.)(?!.*@\{)(?!.*\.lock$)(?!.*/$)(?!.*\.$)[^\x00-\x20~^:?*\[\\\x7f]{1,255}$")


@dataclass(frozen=True)
class CreateRequest:
    prompt: str
    model: str
    ref: str | None
    as_draft: bool
    max_tokens: int | None = None


@dataclass(frozen=True)
class EventsQuery:
    after: str  # the stream id to start after; "0" for the beginning
    as_json: bool  # `?after=` given: one JSON page instead of a stream
    follow: bool
    resumed: bool  # an EventSource reconnecting with Last-Event-ID


@dataclass(frozen=True)
class WebhookRequest:
    url: str
    events: list[str]
    description: str


@dataclass(frozen=True)
class ListQuery:
    status: JobStatus | None
    limit: int
    cursor: str | None


@dataclass(frozen=True)
class PageQuery:
    limit: int
    cursor: str | None


MESSAGES_PAGE = 100  # a conversation page's default (and largest) size


def read_object(request: Request, max_bytes: int) -> dict:
    """The request's JSON object body, after checking media type and size."""
    # A body without any Content-Type is read as JSON (clients of the anchor service send such); only an explicit
    # other type is refused.
    if request.mimetype not in ("application/json", ""):
        raise UnsupportedMediaType("send the body as JSON with `Content-Type: application/json`")
    if request.content_length is not None and request.content_length > max_bytes:
        raise PayloadTooLarge(f"the body is larger than {max_bytes} bytes")
    raw = request.get_data(cache=True)
    if len(raw) > max_bytes:
        raise PayloadTooLarge(f"the body is larger than {max_bytes} bytes")
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise InvalidRequest("the body must be a JSON object")
    check_texts(body)
    return body


def check_texts(value, path: str = "") -> None:
    """check_text on every string in a parsed body, field names included; `path` names where `value` sits."""
    if isinstance(value, str):
        check_text(value, path or "body")
    elif isinstance(value, dict):
        for name, item in value.items():
            where = f"{path}.{name}" if path else name
            check_text(name, where.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace"))
            check_texts(item, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_texts(item, f"{path}[{index}]")


def parse_json(raw: bytes, max_depth: int = MAX_JSON_DEPTH):
    """The JSON value in `raw`; InvalidJson when it does not parse or nests deeper than `max_depth`."""
    check_json_depth(raw, max_depth)
    try:
        return fastjson.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidJson(f"the body is not valid JSON: {exc}") from None


def check_json_depth(raw: bytes, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise InvalidJson when the arrays and objects in `raw` nest deeper than `max_depth`, before any parsing.

    Strings are set aside first, so brackets inside them do not count; every step is linear in the body.
    """
    steps = _JSON_STRING.sub(b"", raw).translate(_STEPS, _NOT_BRACKETS)
    if steps.count(2) <= max_depth:
        return
    # After i + 1 brackets the depth is their sum minus i + 1; all in C, no Python code per bracket.
    depth = max(map(operator.sub, itertools.accumulate(steps), itertools.count(1)))
    if depth > max_depth:
        raise InvalidJson(f"the body nests arrays and objects {depth} levels deep; at most {max_depth} are allowed")


def body_hash(body: dict) -> str:
    """A hash of the body's meaning, so that retries differing only in whitespace or key order match."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def parse_prompt(body: dict, settings: Settings, allowed: tuple[str, ...] = ("prompt",)) -> str:
    """Check the body has only `allowed` fields and a valid `prompt`; return the prompt."""
    _only(body, allowed, "field")
    if "prompt" not in body:
        raise InvalidRequest("`prompt` is required", field="prompt")
    prompt = body["prompt"]
    if not isinstance(prompt, str):
        raise InvalidRequest("`prompt` must be a string", field="prompt")
    # The prompt rules are the intake's (service.prompts); checked here too so that a body's errors keep their order.
    return check_prompt(prompt, settings.max_prompt_chars)


def parse_message(body: dict, settings: Settings) -> tuple[str, bool]:
    """Validate a follow-up message body: its prompt, and whether it interrupts the running round."""
    prompt = parse_prompt(body, settings, allowed=("prompt", "interrupt"))
    interrupt = body.get("interrupt", False)
    if not isinstance(interrupt, bool):
        raise InvalidRequest("`interrupt` must be true or false", field="interrupt")
    return prompt, interrupt


def parse_create(body: dict, settings: Settings) -> CreateRequest:
    """Validate a create-job body."""
    prompt = parse_prompt(body, settings, allowed=("prompt", "model", "ref", "asDraft", "maxTokens"))
    model = body.get("model", settings.model)
    if not isinstance(model, str) or model not in settings.allowed_models:
        raise InvalidRequest(f"`model` must be one of: {', '.join(settings.allowed_models)}", field="model")
    ref = body.get("ref")
    if ref is not None and (not isinstance(ref, str) or not _REF.match(ref)):
        raise InvalidRequest("`ref` must be a branch name", field="ref")
    as_draft = body.get("asDraft", False)
    if not isinstance(as_draft, bool):
        raise InvalidRequest("`asDraft` must be true or false", field="asDraft")
    max_tokens = body.get("maxTokens")
    if max_tokens is not None and (type(max_tokens) is not int or not 1 <= max_tokens <= MAX_TOKENS_CAP):
        raise InvalidRequest(f"`maxTokens` must be a whole number from 1 to {MAX_TOKENS_CAP}", field="maxTokens")
    return CreateRequest(prompt=prompt, model=model, ref=ref, as_draft=as_draft, max_tokens=max_tokens)


def parse_list_query(args) -> ListQuery:
    """Validate the list endpoint's query string: `status`, `limit` (1..100), `cursor`."""
    _only(args, ("status", "limit", "cursor"), "query parameter")
    status = args.get("status")
    if status is not None:
        try:
            status = JobStatus(status)
        except ValueError:
            raise InvalidRequest(
                f"`status` must be one of: {', '.join(s.value for s in JobStatus)}", field="status"
            ) from None
    return ListQuery(status=status, limit=_limit(args, default=20), cursor=args.get("cursor") or None)


def parse_messages_query(args) -> PageQuery:
    """Validate the conversation endpoint's query string: `limit` (1..100, default 100), `cursor`."""
    _only(args, ("limit", "cursor"), "query parameter")
    return PageQuery(limit=_limit(args, default=MESSAGES_PAGE), cursor=args.get("cursor") or None)


def _limit(args, *, default: int) -> int:
    raw_limit = args.get("limit", str(default))
    if not (raw_limit.isascii() and raw_limit.isdecimal()) or not 1 <= int(raw_limit) <= 100:
        raise InvalidRequest("`limit` must be a whole number from 1 to 100", field="limit")
    return int(raw_limit)


def idempotency_key(raw: str | None) -> str | None:
    """The `Idempotency-Key` header, checked: 1 to 255 printable ASCII characters."""
    if raw is None:
        return None
    if not 1 <= len(raw) <= 255 or not all(33 <= ord(c) <= 126 for c in raw):
        raise InvalidRequest("`Idempotency-Key` must be 1 to 255 printable ASCII characters", field="Idempotency-Key")
    return raw


def idempotency_claim(raw: str | None, body: dict, *scope: str) -> IdempotencyClaim | None:
    """The create call's idempotency claim from its `Idempotency-Key` header (None without one), scoped to
    `scope` (the caller's account, the project and, for another door than create, the door's name)."""
    key = idempotency_key(raw)
    if key is None:
        return None
    return IdempotencyClaim(
        scope=hashlib.sha256("\0".join([*scope, key]).encode()).hexdigest(), body_hash=body_hash(body)
    )


def _only(names, allowed: tuple[str, ...], noun: str) -> None:
    """Refuse the first of `names` (a body's fields, a query string's parameters) not in `allowed`."""
    for name in names:
        if name not in allowed:
            raise InvalidRequest(f"unknown {noun} `{name}`; allowed: {', '.join(allowed)}", field=name)


def parse_events_query(args, last_event_id: str | None) -> EventsQuery:
    """The events endpoint's `after`, `follow` and `Last-Event-ID`: `after` asks for JSON, else a stream."""
    _only(args, ("after", "follow"), "query parameter")
    follow = args.get("follow", "false")
    if follow not in ("true", "false"):
        raise InvalidRequest("`follow` must be true or false", field="follow")
    if "after" in args:
        return EventsQuery(check_event_id(args["after"], "after"), as_json=True, follow=follow == "true", resumed=False)
    if last_event_id:
        return EventsQuery(
            check_event_id(last_event_id.strip(), "Last-Event-ID"), as_json=False, follow=follow == "true", resumed=True
        )
    return EventsQuery("0", as_json=False, follow=follow == "true", resumed=False)


def parse_month(args) -> str | None:
    """The usage endpoint's optional `month` (YYYY-MM)."""
    _only(args, ("month",), "query parameter")
    month = args.get("month")
    if month is not None and not _MONTH.match(month):
        raise InvalidRequest("`month` must be YYYY-MM", field="month")
    return month


def parse_webhook(body: dict) -> WebhookRequest:
    """Validate a new webhook endpoint: `url` (required), `events` (types; absent or empty: all), `description`."""
    _only(body, ("url", "events", "description"), "field")
    url = body.get("url")
    if not isinstance(url, str) or not url:
        raise InvalidRequest("`url` is required: the http(s) URL to deliver events to", field="url")
    events = body.get("events", [])
    known = [t.value for t in EventType]
    if not isinstance(events, list) or any(e not in known for e in events):
        raise InvalidRequest(f"`events` must be a list of event types: {', '.join(known)}", field="events")
    description = body.get("description", "")
    if not isinstance(description, str) or len(description) > 500:
        raise InvalidRequest("`description` must be a string of at most 500 characters", field="description")
    check_text(url, "url")
    check_text(description, "description")
    return WebhookRequest(url=url, events=sorted(set(events), key=known.index), description=description)
