"""Real-HTTP stand-ins for the model vendors: OpenAI Chat Completions and Anthropic Messages (non-streaming).

A test scripts the model's turns; the stand-in answers each POST to `/v1/chat/completions` or `/v1/messages`
with the next item, in that vendor's wire format. It checks requests the way the real API does, so an adapter
bug a vendor would reject (an orphan tool result, a missing `max_tokens`...) fails with a 400 here too.

    with ModelStandIn() as model:
        model.script(Reply(tool_calls=[ToolUse("read_file", {"path": "README.md"})]), Reply(text="Done."))
        client = openai.OpenAI(api_key="k", base_url=model.openai_base_url, max_retries=0)
        ...
        assert model.requests[1].body["messages"][-1]["role"] == "tool"

Input tokens are counted from the request and split into cached and uncached the way each vendor's prompt cache
does (see tests/prompt_cache.py), unless a Reply scripts them.
"""

from __future__ import annotations

import collections
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tests.prompt_cache import ANTHROPIC_MAX_BREAKPOINTS, AnthropicCache, CacheUsage, OpenAICache

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


@dataclass
class ToolUse:
    """One tool call. A `str` is sent as the raw (possibly invalid) JSON arguments text to OpenAI clients;
    Anthropic clients get it parsed, so it must then be a JSON object."""

    name: str
    arguments: dict | str


@dataclass
class Reply:
    """One successful model turn."""

    tool_calls: list[ToolUse] = field(default_factory=list)
    text: str = ""
    input_tokens: int | None = None  # None: counted from the request, cache hits included; else exactly this
    output_tokens: int = 5
    cached_tokens: int = 0  # with `input_tokens` given: how many of them were read from the vendor's prompt cache


@dataclass
class Failure:
    """An error response with the vendor's error body, e.g. `Failure(429, headers={"retry-after": "1"})`."""

    status: int
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if self.status < 400:
            raise ValueError(f"Failure status must be an error status, not {self.status}")


@dataclass
class Hang:
    """The request that meets this waits `seconds`, then is answered with the item after it. With `until`, it
    waits for the test to set that event instead (`seconds` only bounds a test that never does), so a test that
    needs the call still in flight does not depend on how fast the machine is."""

    seconds: float
    until: threading.Event | None = None

    def wait(self, closing: threading.Event) -> None:
        """Block until the hang is over or the stand-in closes."""
        if self.until is None:
            closing.wait(self.seconds)
            return
        ends = time.monotonic() + self.seconds
        while not (self.until.is_set() or closing.is_set()) and time.monotonic() < ends:
            self.until.wait(min(0.05, max(0.0, ends - time.monotonic())))


@dataclass
class Outage:
    """From the first request that meets it, every request fails with `status` for `seconds`; then the
    items after it answer again. `Outage(3, 503)` is a vendor down for three seconds."""

    seconds: float
    status: int = 503
    message: str = "the service is temporarily unavailable"
    headers: dict[str, str] = field(default_factory=dict)
    started: float | None = None  # monotonic time of the first request it failed

    def failure(self, now: float) -> Failure | None:
        """The failure to answer at `now`, or None once the outage is over."""
        if self.started is None:
            self.started = now
        return Failure(self.status, self.message, dict(self.headers)) if now - self.started < self.seconds else None


@dataclass
class Recorded:
    """One request the stand-in received. Header names are lower-case."""

    path: str
    headers: dict[str, str]
    body: dict
    usage: CacheUsage | None = None  # the input tokens reported in the answer, for answered requests


class BadRequest(Exception):
    """The request is one the real API would reject with a 400."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param


class ModelStandIn:
    """An HTTP server on 127.0.0.1 speaking both vendors' protocols from one FIFO script."""

    def __init__(self):
        self._items: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._key: str | None = None
        self._responder = None
        self._caches = {"openai": OpenAICache(), "anthropic": AnthropicCache()}
        self.requests: list[Recorded] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.standin = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.openai_base_url = self.url + "/v1"
        self.anthropic_base_url = self.url
        # A short poll interval keeps shutdown (which waits for the next poll) from costing each test 0.5 s.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name="model-standin", daemon=True
        )

    def __enter__(self) -> ModelStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._closing.set()  # wakes any Hang
        self._server.shutdown()
        self._server.server_close()

    def script(self, *items: Reply | Failure | Hang | Outage) -> ModelStandIn:
        """Append items to the queue both protocols answer from."""
        with self._lock:
            self._items.extend(items)
        return self

    def respond(self, responder) -> ModelStandIn:
        """Answer every request with `responder(body)` -> (delay in seconds, Reply or Failure) instead of the
        script: a model whose turns follow the conversation it is sent, for runs in parallel and retried runs."""
        self._responder = responder
        return self

    def expect_key(self, key: str) -> ModelStandIn:
        """Answer 401 (vendor format) to requests that do not carry this API key."""
        self._key = key
        return self

    @property
    def pending(self) -> int:
        """How many scripted items have not been used yet."""
        with self._lock:
            return len(self._items)

    # -- request handling (called from server threads) --

    def _record(self, path: str, headers: dict[str, str], body: dict) -> int:
        with self._lock:
            self.requests.append(Recorded(path, headers, body))
            return len(self.requests)

    def _next_item(self) -> tuple[list[Hang], Reply | Failure | None]:
        """Pop the next item; a Hang also takes the one after it; an Outage stays until it is over. None means
        the script ran out."""
        with self._lock:
            hangs: list[Hang] = []
            while self._items and isinstance(self._items[0], (Hang, Outage)):
                head = self._items[0]
                if isinstance(head, Outage):
                    failure = head.failure(time.monotonic())
                    if failure is not None:
                        return hangs, failure
                    self._items.popleft()
                else:
                    hangs.append(self._items.popleft())
            return hangs, (self._items.popleft() if self._items else None)

    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict, dict[str, str]]:
        """(status, JSON body, extra headers) for one request."""
        route = urlsplit(path).path
        vendor = _OPENAI if route == OPENAI_PATH else _ANTHROPIC if route == ANTHROPIC_PATH else None
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        recorded = body if isinstance(body, dict) else {"_unparsed": raw.decode(errors="replace")}
        number = self._record(path, headers, recorded)
        if vendor is None:
            vendor = _ANTHROPIC if "anthropic-version" in headers else _OPENAI
            return vendor.error(404, f"model stand-in: no route for {path}")
        if self._key is not None and vendor.key(headers) != self._key:
            return vendor.error(401, vendor.bad_key_message)
        try:
            vendor.check(headers, body)
        except BadRequest as err:
            return vendor.error(400, err.message, param=err.param)
        except (AttributeError, TypeError, KeyError) as err:  # e.g. a message that is not an object
            return vendor.error(400, f"model stand-in: malformed request ({type(err).__name__}: {err})")
        if self._responder is not None:
            delay, item = self._responder(body)
            hangs = [Hang(delay)] if delay else []
        else:
            hangs, item = self._next_item()
        for hang in hangs:
            hang.wait(self._closing)
        if item is None:
            return vendor.error(500, f"model stand-in: the script ran out (request #{number} to {path})")
        if isinstance(item, Failure):
            status, payload, extra = vendor.error(item.status, item.message)
            return status, payload, {**extra, **item.headers}
        usage = (
            self._caches[vendor.name].use(body)
            if item.input_tokens is None
            else CacheUsage(item.input_tokens, read=item.cached_tokens)
        )
        self.requests[number - 1].usage = usage
        try:
            return vendor.reply(item, body["model"], usage)
        except ValueError as err:
            return vendor.error(500, f"model stand-in: bad script item {item!r}: {err}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    disable_nagle_algorithm = True  # else headers and body, written apart, wait out a 40 ms delayed ACK

    def do_POST(self):
        self._handle()

    def do_GET(self):
        self._handle()

    def _handle(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        status, payload, extra = self.server.standin._answer(self.path, headers, raw)
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout fired during a Hang)

    def log_message(self, format, *args):
        pass


def _new_id(prefix: str, length: int = 24) -> str:
    return prefix + secrets.token_hex(length)[:length]


# ---------------------------------------------------------------- OpenAI Chat Completions

UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: "
)


class _OpenAI:
    name = "openai"
    bad_key_message = (
        "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
    )
    # status -> (type, code) as the real API sends them
    kinds = {
        401: ("invalid_request_error", "invalid_api_key"),
        404: ("invalid_request_error", "unknown_url"),
        429: ("requests", "rate_limit_exceeded"),
    }

    @staticmethod
    def key(headers: dict[str, str]) -> str | None:
        auth = headers.get("authorization", "")
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None

    def error(self, status: int, message: str, param: str | None = None):
        kind, code = self.kinds.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
        body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
        return status, body, {"x-request-id": _new_id("req_", 32)}

    @staticmethod
    def check(headers: dict[str, str], body) -> None:
        if not isinstance(body, dict):
            raise BadRequest(
                "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
                "using your HTTP library correctly. The OpenAI API expects a JSON payload...)"
            )
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise BadRequest("you must provide a model parameter")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("Missing required parameter: 'messages'.", "messages")
        for i, tool in enumerate(body.get("tools") or []):
            if tool.get("type") != "function" or not (tool.get("function") or {}).get("name"):
                raise BadRequest(f"Missing required parameter: 'tools[{i}].function.name'.", f"tools[{i}]")
        unanswered: list[str] = []  # tool_call ids of the last assistant message still waiting for a tool message
        for i, message in enumerate(messages):
            role = message.get("role")
            if role not in ("system", "developer", "user", "assistant", "tool"):
                raise BadRequest(
                    f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
                    f"'tool', 'function', and 'developer'.",
                    f"messages[{i}].role",
                )
            if role != "tool" and unanswered:
                raise BadRequest(UNANSWERED + ", ".join(unanswered), "messages")
            content = message.get("content")
            if role == "tool":
                if not isinstance(content, (str, list)):
                    raise BadRequest(f"Invalid type for 'messages[{i}].content'.", f"messages[{i}].content")
                if message.get("tool_call_id") not in unanswered:
                    raise BadRequest(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                        "message with 'tool_calls'.",
                        f"messages[{i}].role",
                    )
                unanswered.remove(message["tool_call_id"])
            if role == "assistant":
                for j, call in enumerate(message.get("tool_calls") or []):
                    where = f"messages[{i}].tool_calls[{j}]"
                    function = call.get("function") or {}
                    if not call.get("id") or call.get("type") != "function" or not function.get("name"):
                        raise BadRequest(
                            f"Missing required parameter: '{where}.id', '.type' or '.function.name'.", where
                        )
                    if not isinstance(function.get("arguments"), str):
                        raise BadRequest(
                            f"Invalid type for '{where}.function.arguments': expected a string.",
                            f"{where}.function.arguments",
                        )
                    unanswered.append(call["id"])
        if unanswered:
            raise BadRequest(UNANSWERED + ", ".join(unanswered), "messages")

    @staticmethod
    def reply(item: Reply, model: str, usage: CacheUsage):
        calls = [
            {
                "id": _new_id("call_"),
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
                },
            }
            for call in item.tool_calls
        ]
        message = {
            "role": "assistant",
            "content": item.text or (None if calls else ""),
            "refusal": None,
            "annotations": [],
        }
        if calls:
            message["tool_calls"] = calls
        return (
            200,
            {
                "id": _new_id("chatcmpl-", 29),
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "logprobs": None,
                        "finish_reason": "tool_calls" if calls else "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": usage.total,
                    "completion_tokens": item.output_tokens,
                    "total_tokens": usage.total + item.output_tokens,
                    "prompt_tokens_details": {"cached_tokens": usage.read, "audio_tokens": 0},
                    "completion_tokens_details": {
                        "reasoning_tokens": 0,
                        "audio_tokens": 0,
                        "accepted_prediction_tokens": 0,
                        "rejected_prediction_tokens": 0,
                    },
                },
                "service_tier": "default",
                "system_fingerprint": None,
            },
            {"x-request-id": _new_id("req_", 32)},
        )


# ---------------------------------------------------------------- Anthropic Messages


class _Anthropic:
    name = "anthropic"
    bad_key_message = "invalid x-api-key"
    kinds = {
        400: "invalid_request_error",
        401: "authentication_error",
        402: "billing_error",
        403: "permission_error",
        404: "not_found_error",
        429: "rate_limit_error",
        500: "api_error",
        504: "timeout_error",
        529: "overloaded_error",
    }

    @staticmethod
    def key(headers: dict[str, str]) -> str | None:
        # The API takes `x-api-key`; anthropic 2.x sends the api_key as `Authorization: Bearer` instead.
        auth = headers.get("authorization", "")
        return headers.get("x-api-key") or (auth[len("Bearer ") :] if auth.startswith("Bearer ") else None)

    def error(self, status: int, message: str, param: str | None = None):
        kind = self.kinds.get(status, "api_error" if status >= 500 else "invalid_request_error")
        request_id = _new_id("req_011", 24)
        body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
        return status, body, {"request-id": request_id}

    @staticmethod
    def check(headers: dict[str, str], body) -> None:
        if "anthropic-version" not in headers:
            raise BadRequest("anthropic-version: header is required")
        if not isinstance(body, dict):
            raise BadRequest("There was an error parsing the body of your request.")
        for name, kind in (("model", str), ("max_tokens", int), ("messages", list)):
            if not isinstance(body.get(name), kind):
                raise BadRequest(f"{name}: Field required")
        messages = body["messages"]
        if not messages:
            raise BadRequest("messages: at least one message is required")
        expected_uses: set[str] = set()  # tool_use ids of the previous (assistant) message
        for i, message in enumerate(messages):
            role = message.get("role")
            if role not in ("user", "assistant"):
                raise BadRequest(
                    f'messages.{i}.role: Unexpected role "{role}". Use the top-level `system` '
                    f"parameter for a system prompt."
                )
            if role != ("user" if i % 2 == 0 else "assistant"):
                raise BadRequest(
                    f'messages.{i}: roles must alternate between "user" and "assistant", starting with "user"'
                )
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            last = i == len(messages) - 1
            if not isinstance(blocks, list) or (not blocks and not (last and role == "assistant")):
                raise BadRequest(
                    f"messages.{i}: all messages must have non-empty content except for the optional "
                    f"final assistant message"
                )
            results = set()
            for j, block in enumerate(blocks):
                kind = block.get("type") if isinstance(block, dict) else None
                where = f"messages.{i}.content.{j}"
                if kind == "text" and not block.get("text") and not (last and role == "assistant"):
                    raise BadRequest(f"{where}: text content blocks must be non-empty")
                if kind == "tool_use":
                    if role != "assistant" or not block.get("id") or not block.get("name"):
                        raise BadRequest(
                            f"{where}: tool_use blocks need an id and a name and belong to assistant messages"
                        )
                    if not isinstance(block.get("input"), dict):
                        raise BadRequest(f"{where}.tool_use.input: Input should be a valid dictionary")
                if kind == "tool_result":
                    if block.get("tool_use_id") not in expected_uses:
                        raise BadRequest(
                            f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{block.get('tool_use_id')}. Each `tool_result` block must have a "
                            f"corresponding `tool_use` block in the previous message."
                        )
                    results.add(block["tool_use_id"])
                if kind is None:
                    raise BadRequest(f"{where}.type: Field required")
            if expected_uses - results:
                raise BadRequest(
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(sorted(expected_uses - results))}. Each `tool_use` block must "
                    f"have a corresponding `tool_result` block in the next message."
                )
            expected_uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        _Anthropic._check_cache_control(body)

    @staticmethod
    def _check_cache_control(body: dict) -> None:
        system = body.get("system")
        marked = [
            (where, block)
            for where, blocks in (
                ("tools", body.get("tools") or []),
                ("system", system if isinstance(system, list) else []),
                *(
                    (f"messages.{i}.content", m["content"])
                    for i, m in enumerate(body["messages"])
                    if isinstance(m["content"], list)
                ),
            )
            for block in blocks
            if isinstance(block, dict) and "cache_control" in block
        ]
        for where, block in marked:
            control = block["cache_control"]
            if (
                not isinstance(control, dict)
                or control.get("type") != "ephemeral"
                or control.get("ttl", "5m") not in ("5m", "1h")
            ):
                raise BadRequest(f"{where}.cache_control: Input tag does not match the expected tag 'ephemeral'")
            if block.get("type") == "text" and not block.get("text"):
                raise BadRequest(f"{where}: cache_control cannot be set for empty text blocks")
        count = AnthropicCache.breakpoints(body)
        if count > ANTHROPIC_MAX_BREAKPOINTS:
            raise BadRequest(
                f"A maximum of {ANTHROPIC_MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {count}."
            )

    @staticmethod
    def reply(item: Reply, model: str, usage: CacheUsage):
        content = [{"type": "text", "text": item.text}] if item.text else []
        for call in item.tool_calls:
            arguments = json.loads(call.arguments) if isinstance(call.arguments, str) else call.arguments
            if not isinstance(arguments, dict):
                raise ValueError("Anthropic tool_use input must be a JSON object")
            content.append({"type": "tool_use", "id": _new_id("toolu_01"), "name": call.name, "input": arguments})
        return (
            200,
            {
                "id": _new_id("msg_01"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": "tool_use" if item.tool_calls else "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": usage.uncached,
                    "output_tokens": item.output_tokens,
                    "cache_creation_input_tokens": usage.written,
                    "cache_read_input_tokens": usage.read,
                    "service_tier": "standard",
                },
            },
            {"request-id": _new_id("req_011", 24)},
        )


_OPENAI = _OpenAI()
_ANTHROPIC = _Anthropic()
