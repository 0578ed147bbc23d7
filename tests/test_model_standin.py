"""The model stand-ins are honest: the official SDKs, validating strictly, parse every reply they send."""

import json
import threading
import time
import urllib.error
import urllib.request

import anthropic
import openai
import pytest
from anthropic.types import Message, TextBlock, ToolUseBlock
from anthropic.types.shared import ErrorResponse
from openai.types.chat import ChatCompletion
from openai.types.shared import ErrorObject

from tests.model_standin import Failure, Hang, Outage, Reply, ToolUse

KEY = "sk-test-key"
TOOLS_OPENAI = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
TOOLS_ANTHROPIC = [{"name": "read_file", "input_schema": {"type": "object"}}]
CLAUDE = "claude-haiku-4-5"
# Each SDK's own default HTTP client, built once: building one loads the CA bundle (~30 ms a client).
OPENAI_HTTP = openai.DefaultHttpxClient()
ANTHROPIC_HTTP = anthropic.DefaultHttpxClient()


def openai_client(standin, **options):
    # _strict_response_validation: the SDK validates every reply against its pydantic types instead of
    # constructing them leniently, so a missing or mistyped field fails the test.
    return openai.OpenAI(
        api_key=KEY,
        base_url=standin.openai_base_url,
        max_retries=0,
        http_client=OPENAI_HTTP,
        _strict_response_validation=True,
        **options,
    )


def anthropic_client(standin, **options):
    return anthropic.Anthropic(
        api_key=KEY,
        base_url=standin.anthropic_base_url,
        max_retries=0,
        http_client=OPENAI_HTTP,
        _strict_response_validation=True,
        **options,
    )


def chat(client, messages, **kwargs):
    return client.chat.completions.create(model="gpt-4.1", messages=messages, tools=TOOLS_OPENAI, **kwargs)


def message(client, messages, **kwargs):
    return client.messages.create(model=CLAUDE, max_tokens=1024, messages=messages, tools=TOOLS_ANTHROPIC, **kwargs)


# ---------------------------------------------------------------- OpenAI: replies


def test_openai_parses_a_tool_call_reply(standin):
    standin.script(
        Reply(
            tool_calls=[ToolUse("read_file", {"path": "README.md"}), ToolUse("read_file", "{oops")],
            input_tokens=12,
            output_tokens=7,
        )
    )
    completion = chat(openai_client(standin), [{"role": "user", "content": "Fix the docs."}])

    assert isinstance(completion, ChatCompletion)
    assert completion.object == "chat.completion" and completion.id.startswith("chatcmpl-")
    assert completion.model == "gpt-4.1"
    assert completion._request_id.startswith("req_")
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.role == "assistant" and choice.message.content is None
    first, second = choice.message.tool_calls
    assert first.type == "function" and first.id.startswith("call_") and first.id != second.id
    assert first.function.name == "read_file"
    assert json.loads(first.function.arguments) == {"path": "README.md"}
    assert second.function.arguments == "{oops"  # raw text is passed through, invalid JSON and all
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (
        12,
        7,
        19,
    )


def test_openai_parses_a_text_reply_and_records_the_tool_round_trip(standin):
    standin.script(Reply(tool_calls=[ToolUse("read_file", {"path": "a.md"})]), Reply(text="All done."))
    client = openai_client(standin)
    history = [{"role": "user", "content": "Fix the docs."}]
    first = chat(client, history).choices[0].message
    call = first.tool_calls[0]
    history += [first.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "# A"}]
    second = chat(client, history)

    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "All done."
    assert second.choices[0].message.tool_calls is None
    assert standin.pending == 0
    sent = standin.requests[1]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["messages"][1]["tool_calls"][0]["id"] == call.id
    assert sent.body["messages"][2] == {"role": "tool", "tool_call_id": call.id, "content": "# A"}


# ---------------------------------------------------------------- Anthropic: replies


def test_anthropic_parses_text_and_tool_use_blocks(standin):
    standin.script(
        Reply(
            text="Reading it.",
            tool_calls=[ToolUse("read_file", {"path": "README.md"})],
            input_tokens=30,
            output_tokens=4,
        )
    )
    reply = message(anthropic_client(standin), [{"role": "user", "content": "Fix the docs."}])

    assert isinstance(reply, Message)
    assert reply.id.startswith("msg_") and reply.type == "message" and reply.role == "assistant"
    assert reply.model == CLAUDE
    assert reply._request_id.startswith("req_")
    assert reply.stop_reason == "tool_use" and reply.stop_sequence is None
    text, tool = reply.content
    assert isinstance(text, TextBlock) and text.text == "Reading it."
    assert isinstance(tool, ToolUseBlock) and tool.id.startswith("toolu_")
    assert (tool.name, tool.input) == ("read_file", {"path": "README.md"})
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (30, 4)


def test_anthropic_text_reply_and_tool_result_round_trip(standin):
    standin.script(Reply(tool_calls=[ToolUse("read_file", '{"path": "a.md"}')]), Reply(text="All done."))
    client = anthropic_client(standin)
    history = [{"role": "user", "content": "Fix the docs."}]
    first = message(client, history)
    tool = first.content[0]
    history += [
        first.to_param(),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "# A"}]},
    ]
    second = message(client, history)

    assert tool.input == {"path": "a.md"}
    assert second.stop_reason == "end_turn"
    assert [(b.type, b.text) for b in second.content] == [("text", "All done.")]
    sent = standin.requests[1]
    assert sent.path == "/v1/messages"
    assert KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "").removeprefix("Bearer "))
    assert "anthropic-version" in sent.headers
    assert sent.body["messages"][2]["content"][0]["tool_use_id"] == tool.id


# ---------------------------------------------------------------- failures


@pytest.mark.parametrize(
    "status, error, kind, code",
    [
        (400, openai.BadRequestError, "invalid_request_error", None),
        (401, openai.AuthenticationError, "invalid_request_error", "invalid_api_key"),
        (429, openai.RateLimitError, "requests", "rate_limit_exceeded"),
        (500, openai.InternalServerError, "server_error", None),
        (503, openai.InternalServerError, "server_error", None),
    ],
)
def test_openai_raises_its_typed_error_for_each_failure(standin, status, error, kind, code):
    standin.script(Failure(status, "nope", headers={"retry-after": "1"}))
    with pytest.raises(error) as caught:
        chat(openai_client(standin), [{"role": "user", "content": "hi"}])
    assert caught.value.status_code == status
    ErrorObject.model_validate(caught.value.body, strict=True)  # the SDK hands over the body's "error" object
    assert (caught.value.type, caught.value.code, caught.value.body["message"]) == (kind, code, "nope")
    assert caught.value.request_id.startswith("req_")
    assert caught.value.response.headers["retry-after"] == "1"


@pytest.mark.parametrize(
    "status, error, kind",
    [
        (400, anthropic.BadRequestError, "invalid_request_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (503, anthropic.ServiceUnavailableError, "api_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
    ],
)
def test_anthropic_raises_its_typed_error_for_each_failure(standin, status, error, kind):
    standin.script(Failure(status, "nope", headers={"retry-after": "1"}))
    with pytest.raises(error) as caught:
        message(anthropic_client(standin), [{"role": "user", "content": "hi"}])
    assert caught.value.status_code == status
    assert (caught.value.type, caught.value.api_message) == (kind, "nope")
    ErrorResponse.model_validate(caught.value.body, strict=True)
    assert caught.value.request_id.startswith("req_") and caught.value.request_id == caught.value.body["request_id"]
    assert caught.value.response.headers["retry-after"] == "1"
    if status >= 500:
        assert isinstance(caught.value, anthropic.InternalServerError)


def test_expect_key_rejects_a_wrong_key_in_each_vendors_format(standin):
    standin.expect_key("sk-right").script(Reply(text="openai ok"), Reply(text="anthropic ok"))
    with pytest.raises(openai.AuthenticationError) as oa:
        chat(openai_client(standin), [{"role": "user", "content": "hi"}])
    with pytest.raises(anthropic.AuthenticationError) as an:
        message(anthropic_client(standin), [{"role": "user", "content": "hi"}])
    assert oa.value.code == "invalid_api_key" and an.value.type == "authentication_error"
    assert standin.pending == 2  # rejected requests do not use up the script

    right_openai = openai_client(standin).with_options(api_key="sk-right")
    right_anthropic = anthropic_client(standin).with_options(api_key="sk-right")
    assert chat(right_openai, [{"role": "user", "content": "hi"}]).choices[0].message.content == "openai ok"
    assert message(right_anthropic, [{"role": "user", "content": "hi"}]).content[0].text == "anthropic ok"


def test_a_script_that_runs_out_fails_loudly(standin):
    standin.script(Reply(text="only one"))
    chat(openai_client(standin), [{"role": "user", "content": "hi"}])
    with pytest.raises(openai.InternalServerError, match="script ran out"):
        chat(openai_client(standin), [{"role": "user", "content": "again"}])
    with pytest.raises(anthropic.InternalServerError, match="script ran out"):
        message(anthropic_client(standin), [{"role": "user", "content": "again"}])
    assert len(standin.requests) == 3


def test_hang_makes_the_client_time_out_then_the_script_goes_on(standin):
    answer = threading.Event()  # the hung answer comes only after the client gave up on it
    standin.script(Hang(120, until=answer), Reply(text="too late"), Reply(text="next"))
    client = openai_client(standin, timeout=0.2)
    with pytest.raises(openai.APITimeoutError):
        chat(client, [{"role": "user", "content": "hi"}])
    answer.set()
    assert chat(client, [{"role": "user", "content": "hi"}]).choices[0].message.content == "next"


def test_an_outage_fails_every_request_for_its_time_then_the_script_goes_on(standin):
    # Long enough for two requests on a busy machine; the test then waits for its end, a moment in time.
    outage = Outage(2, 529, headers={"retry-after-ms": "50"})
    standin.script(outage, Reply(text="back"))
    client = anthropic_client(standin)
    with pytest.raises(anthropic.OverloadedError) as first:
        message(client, [{"role": "user", "content": "hi"}])
    assert first.value.response.headers["retry-after-ms"] == "50"
    ErrorResponse.model_validate(first.value.body, strict=True)
    with pytest.raises(openai.InternalServerError):
        chat(openai_client(standin), [{"role": "user", "content": "hi"}])
    assert standin.pending == 2  # failures during an outage do not use up the script
    assert outage.started is not None
    time.sleep(max(0.0, outage.started + outage.seconds - time.monotonic()) + 0.05)
    assert message(client, [{"role": "user", "content": "hi"}]).content[0].text == "back"
    assert standin.pending == 0


# ---------------------------------------------------------------- malformed requests


def _assistant_call(call_id="call_1", arguments="{}"):
    call = {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, "model"),
        ({"model": "gpt-4.1"}, "messages"),
        (
            {
                "model": "gpt-4.1",
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "tool", "tool_call_id": "call_x", "content": "r"},
                ],
            },
            "must be a response to a preceeding message",
        ),
        (
            {
                "model": "gpt-4.1",
                "messages": [
                    {"role": "user", "content": "hi"},
                    _assistant_call(),
                    {"role": "tool", "tool_call_id": "call_other", "content": "r"},
                ],
            },
            "must be a response to a preceeding message",
        ),
        (
            {
                "model": "gpt-4.1",
                "messages": [{"role": "user", "content": "hi"}, _assistant_call(), {"role": "user", "content": "and?"}],
            },
            "did not have response messages: call_1",
        ),
        (
            {
                "model": "gpt-4.1",
                "messages": [
                    {"role": "user", "content": "hi"},
                    _assistant_call(arguments={"a": 1}),
                    {"role": "tool", "tool_call_id": "call_1", "content": "r"},
                ],
            },
            "expected a string",
        ),
    ],
)
def test_openai_rejects_a_malformed_request_with_400(standin, body, fragment):
    standin.script(Reply(text="unused"))
    with pytest.raises(openai.BadRequestError, match=fragment) as caught:
        openai_client(standin).post("/chat/completions", cast_to=ChatCompletion, body=body)
    assert caught.value.type == "invalid_request_error"
    assert standin.pending == 1


def _tool_use(tool_id="toolu_1", input=None):
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": tool_id, "name": "read_file", "input": {} if input is None else input}],
    }


def _tool_result(tool_id="toolu_1"):
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "r"}]}


HI = {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"max_tokens": 10, "messages": [HI]}, "model: Field required"),
        ({"model": CLAUDE, "messages": [HI]}, "max_tokens: Field required"),
        ({"model": CLAUDE, "max_tokens": 10}, "messages: Field required"),
        ({"model": CLAUDE, "max_tokens": 10, "messages": [{"role": "assistant", "content": "hi"}]}, "alternate"),
        ({"model": CLAUDE, "max_tokens": 10, "messages": [HI, HI]}, "alternate"),
        ({"model": CLAUDE, "max_tokens": 10, "messages": [{"role": "system", "content": "x"}, HI]}, "Unexpected role"),
        (
            {"model": CLAUDE, "max_tokens": 10, "messages": [HI, _tool_use(), _tool_result("toolu_2")]},
            "unexpected `tool_use_id`",
        ),
        (
            {
                "model": CLAUDE,
                "max_tokens": 10,
                "messages": [HI, _tool_use(), _tool_result(), {"role": "assistant", "content": "ok"}, _tool_result()],
            },
            "unexpected `tool_use_id`",
        ),  # the tool_use is two messages back, not in the immediately preceding one
        ({"model": CLAUDE, "max_tokens": 10, "messages": [HI, _tool_use(), HI]}, "without `tool_result` blocks"),
        (
            {"model": CLAUDE, "max_tokens": 10, "messages": [HI, _tool_use(input='{"a": 1}'), _tool_result()]},
            "valid dictionary",
        ),
        ({"model": CLAUDE, "max_tokens": 10, "messages": [{"role": "user", "content": ""}]}, "non-empty"),
    ],
)
def test_anthropic_rejects_a_malformed_request_with_400(standin, body, fragment):
    standin.script(Reply(text="unused"))
    with pytest.raises(anthropic.BadRequestError, match=fragment) as caught:
        anthropic_client(standin).post("/v1/messages", cast_to=Message, body=body)
    assert caught.value.type == "invalid_request_error"
    assert standin.pending == 1


def test_unparsable_bodies_and_unknown_paths_get_vendor_shaped_errors(standin):
    def post(path, data, headers=None):
        request = urllib.request.Request(standin.url + path, data=data, headers=headers or {}, method="POST")
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=5)
        return caught.value.code, json.loads(caught.value.read())

    status, body = post("/v1/chat/completions", b"{not json")
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    status, body = post("/v1/messages", b"{not json", {"anthropic-version": "2023-06-01"})
    assert status == 400 and body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    status, body = post("/v1/embeddings", b"{}")
    assert status == 404 and "no route" in body["error"]["message"]
    assert [r.body for r in standin.requests] == [{"_unparsed": "{not json"}, {"_unparsed": "{not json"}, {}]


def test_a_responder_answers_from_the_conversation_it_is_sent(standin):
    def turn(body):
        last = body["messages"][-1]
        if last["role"] == "tool":
            return 0.0, Reply(text="done")
        return 0.0, Reply(tool_calls=[ToolUse("read_file", {"path": last["content"]})])

    standin.respond(turn)
    client = openai_client(standin)
    first = chat(client, [{"role": "user", "content": "docs/a.md"}])
    call = first.choices[0].message.tool_calls[0]
    assert json.loads(call.function.arguments) == {"path": "docs/a.md"}
    second = chat(
        client,
        [
            {"role": "user", "content": "docs/a.md"},
            first.choices[0].message.model_dump(),
            {"role": "tool", "tool_call_id": call.id, "content": "# A"},
        ],
    )
    assert second.choices[0].message.content == "done"


# ---------------------------------------------------------------- prompt caching

LONG = "Copydesk keeps documentation in step with the code. " * 120  # about 1,600 tokens


def test_anthropic_reports_cache_writes_and_reads_at_breakpoints(standin):
    standin.script(*[Reply(text="ok") for _ in range(4)])
    client = anthropic_client(standin)
    system = [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]
    first = message(client, [{"role": "user", "content": "Fix the docs."}], system=system).usage
    assert first.cache_read_input_tokens == 0 and first.cache_creation_input_tokens > 1024
    assert first.input_tokens < 20  # what follows the breakpoint: the one short message

    # The same prefix, a longer conversation, a breakpoint moved to its end: the system prompt is read back.
    turns = [
        {"role": "user", "content": "Fix the docs."},
        {"role": "assistant", "content": "Which page?"},
        {"role": "user", "content": [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]},
    ]
    second = message(client, turns, system=system).usage
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens > 1024 and second.input_tokens == 0

    # No breakpoint: nothing is read or written, however long the prompt.
    plain = message(client, turns[:2] + [{"role": "user", "content": LONG}], system=LONG).usage
    assert plain.cache_read_input_tokens == plain.cache_creation_input_tokens == 0 and plain.input_tokens > 3000

    # A changed system prompt misses, though the conversation after it is the same.
    changed = [{"type": "text", "text": "Be brief. " + LONG, "cache_control": {"type": "ephemeral"}}]
    third = message(client, turns, system=changed).usage
    assert third.cache_read_input_tokens == 0 and third.cache_creation_input_tokens > 3000


def test_anthropic_refuses_more_than_four_breakpoints_and_bad_markers(standin):
    client = anthropic_client(standin)
    marked = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    turn = {"role": "user", "content": [marked] * 5}
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4 blocks with cache_control"):
        message(client, [turn])
    with pytest.raises(anthropic.BadRequestError, match="ephemeral"):
        message(client, [{"role": "user", "content": [{**marked, "cache_control": {"type": "forever"}}]}])
    assert standin.pending == 0


def test_openai_reports_cached_tokens_of_a_shared_prefix_in_steps(standin):
    standin.script(*[Reply(text="ok") for _ in range(3)])
    client = openai_client(standin)
    turns = [{"role": "system", "content": LONG}, {"role": "user", "content": "Fix the docs."}]
    first = chat(client, turns).usage
    assert first.prompt_tokens > 1024 and first.prompt_tokens_details.cached_tokens == 0

    longer = turns + [{"role": "assistant", "content": "Which page?"}, {"role": "user", "content": LONG}]
    second = chat(client, longer, prompt_cache_key="job_1").usage
    cached = second.prompt_tokens_details.cached_tokens
    assert 1024 <= cached <= first.prompt_tokens and (cached - 1024) % 128 == 0
    assert first.prompt_tokens - cached < 128  # all of the earlier prompt but its last, partial step
    assert standin.requests[1].body["prompt_cache_key"] == "job_1"

    changed = [{"role": "system", "content": "Be brief. " + LONG}] + longer[1:]
    assert chat(client, changed).usage.prompt_tokens_details.cached_tokens == 0
