"""The OpenAI and Anthropic adapters against the HTTP model stand-in, and the retry policy they share."""

import pytest
from openai.types.chat import ChatCompletion

from service.agent.loop import AgentTask, RunLimits, run_agent
from service.agent.model import ChatMessage, ModelError, ModelFactory, ToolCall, Usage
from service.agent.providers import build_providers, openai_chat
from service.agent.providers.anthropic_messages import AnthropicModel
from service.agent.providers.failures import retry_after, status_failure
from service.agent.providers.openai_chat import OpenAIChatModel
from service.agent.providers.retry import RetryPolicy, Transient
from service.agent.tools import TOOL_SPECS
from service.settings import Settings
from tests.harness import LiveServer
from tests.model_standin import Failure, Hang, ModelStandIn, Reply, ToolUse

KEY = "sk-test-0123456789"
VENDORS = {  # provider -> (adapter, stand-in base URL attribute, key variable)
    "openai": (OpenAIChatModel, "openai_base_url", "OPENAI_API_KEY"),
    "anthropic": (AnthropicModel, "anthropic_base_url", "ANTHROPIC_API_KEY"),
}
START = [ChatMessage("system", "You edit docs."), ChatMessage("user", "Fix the typo in docs/a.md.")]


class Sleeps(list):
    """A `sleep` that records the delays instead of waiting, and a `clock` that those delays advance."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 1000.0

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def policy(sleeps: Sleeps, **options) -> RetryPolicy:
    """A retry policy that waits on `sleeps`' clock instead of the real one."""
    return RetryPolicy(sleep=sleeps, clock=sleeps.clock, **options)


def failing(*outcomes):
    """A callable that raises or returns `outcomes` in turn, counting its calls."""
    queue = list(outcomes)

    def fn():
        fn.calls += 1
        outcome = queue.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    fn.calls = 0
    return fn


def down_until(sleeps: Sleeps, recovery: float, *, call_takes: float = 0.0):
    """A callable that fails with HTTP 503 until `sleeps`' clock reaches `recovery`; each call takes `call_takes`."""

    def fn():
        fn.calls += 1
        sleeps.now += call_takes
        if sleeps.now < recovery:
            raise Transient(None, "HTTP 503: down")
        return "ok"

    fn.calls = 0
    return fn


# --- retry policy -------------------------------------------------------------------------------------------


def test_retry_returns_the_first_success_after_transient_failures():
    sleeps = Sleeps()
    fn = failing(Transient(None, "HTTP 503"), Transient(None, "HTTP 503"), "ok")
    assert policy(sleeps, jitter=lambda: 1.0).call(fn) == "ok"
    assert fn.calls == 3
    assert sleeps == [1.0, 2.0]  # exponential: base, then twice base


def test_retry_backoff_is_jittered_between_half_and_all_of_the_exponential_step():
    policy_ = RetryPolicy(base_delay=1.0, max_delay=30.0, jitter=lambda: 0.0)
    assert [policy_.delay(n, None) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0]
    real = RetryPolicy()
    assert all(2.0 <= real.delay(3, None) <= 4.0 for _ in range(100))
    assert all(7.5 <= real.delay(9, None) <= 15.0 for _ in range(100))


def test_retry_rides_out_a_two_minute_outage_by_default_however_many_attempts_it_takes():
    sleeps = Sleeps()
    fn = down_until(sleeps, sleeps.now + 115)
    assert policy(sleeps).call(fn, what="openai:gpt-x") == "ok"
    assert fn.calls > 5  # the old cap of five attempts would have failed the run inside the outage
    assert max(sleeps) <= 15.0
    assert 115 <= sum(sleeps) <= 115 + 15  # noticed the recovery within one (largest) backoff step


def test_retry_gives_up_when_the_outage_outlasts_the_budget_with_a_readable_error():
    sleeps = Sleeps()
    start = sleeps.now
    fn = down_until(sleeps, start + 3600, call_takes=2.0)
    with pytest.raises(ModelError) as caught:
        policy(sleeps, budget=60, jitter=lambda: 0.5).call(fn, what="openai:gpt-x")
    assert caught.value.code == "model_unavailable"
    # The budget runs from the first failure; the last wait is cut so that the last attempt falls on it.
    assert sleeps.now - start == pytest.approx(2.0 + 60 + 2.0)
    message = caught.value.message
    assert message.startswith(f"openai:gpt-x kept failing for 62 s ({fn.calls} attempts; the retry budget is 60 s)")
    assert message.endswith("last error: HTTP 503: down")


def test_retry_honours_retry_after_in_full_when_it_fits_the_budget():
    sleeps = Sleeps()
    fn = failing(Transient(0.0, "HTTP 429"), Transient(7.5, "HTTP 429"), Transient(40.0, "HTTP 429"), "ok")
    assert policy(sleeps, max_delay=15.0).call(fn) == "ok"
    assert sleeps == [0.0, 7.5, 40.0]  # the server's ask wins over the backoff's ceiling


def test_retry_gives_up_at_once_when_retry_after_is_past_the_budget():
    sleeps = Sleeps()
    fn = failing(Transient(None, "HTTP 503"), Transient(600.0, "HTTP 429: slow down"), "never")
    with pytest.raises(ModelError) as caught:
        policy(sleeps, budget=120, jitter=lambda: 1.0).call(fn)
    assert caught.value.code == "model_unavailable"
    assert sleeps == [1.0] and fn.calls == 2  # no wait that could only end in failure
    assert "it asked to wait 600 s more" in caught.value.message
    assert caught.value.message.endswith("last error: HTTP 429: slow down")


def test_retry_lets_other_errors_through_at_once():
    sleeps = Sleeps()
    fn = failing(ModelError("bad request"), "ok")
    with pytest.raises(ModelError, match="bad request"):
        RetryPolicy(sleep=sleeps).call(fn)
    assert fn.calls == 1 and sleeps == []


# --- HTTP failures ------------------------------------------------------------------------------------------


def test_retry_after_headers():
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a date in the past
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 529])
def test_transient_statuses(status):
    failure = status_failure(
        status,
        {"error": {"message": "try later"}},
        {"retry-after": "3"},
        vendor="V",
        model="m",
        key_variable="V_KEY",
        api_key="sk-secret",
    )
    assert isinstance(failure, Transient)
    assert failure.retry_after == 3.0 and failure.detail == f"HTTP {status}: try later"


@pytest.mark.parametrize("status", [401, 403])
def test_auth_statuses_name_the_variable_and_never_the_key(status):
    failure = status_failure(
        status,
        {"error": {"message": "bad key sk-secret"}},
        {},
        vendor="V",
        model="m",
        key_variable="V_KEY",
        api_key="sk-secret",
    )
    assert isinstance(failure, ModelError) and failure.code == "model_auth_failed"
    assert "V_KEY" in failure.message and "sk-secret" not in failure.message


def test_other_client_errors_carry_the_vendor_message():
    failure = status_failure(
        404,
        {"type": "error", "error": {"type": "not_found_error", "message": "model: nope"}},
        {},
        vendor="V",
        model="nope",
        key_variable="V_KEY",
        api_key="k",
    )
    assert failure.code == "model_error"
    assert failure.message == (
        "V refused the request for 'nope': HTTP 404: model: nope; the model name 'nope' may be wrong"
    )
    quota = status_failure(
        429,
        {"message": "You exceeded your quota", "code": "insufficient_quota"},
        {},
        vendor="V",
        model="m",
        key_variable="V_KEY",
        api_key="k",
    )
    assert isinstance(quota, ModelError) and "quota" in quota.message


# --- the adapters against the stand-in ----------------------------------------------------------------------


@pytest.fixture
def sleeps():
    return Sleeps()


@pytest.fixture(params=sorted(VENDORS))
def vendor(request):
    return request.param


def make_model(vendor: str, standin: ModelStandIn, sleeps: Sleeps, *, key: str | None = KEY, **options):
    adapter, base_url, _ = VENDORS[vendor]
    retry = options.pop("retry", None) or policy(sleeps)
    return adapter("test-model", api_key=key, base_url=getattr(standin, base_url), retry=retry, **options)


def test_openai_conversation_with_tool_calls(standin, sleeps):
    standin.script(
        Reply(
            text="Reading first.",
            tool_calls=[ToolUse("read_file", {"path": "docs/a.md"}), ToolUse("search", {"pattern": "teh"})],
            input_tokens=120,
            output_tokens=30,
        ),
        Reply(text="Fixed.", input_tokens=200, output_tokens=9),
    )
    model = make_model("openai", standin, sleeps)
    assert model.name == "openai:test-model"

    first = model.complete(list(START), TOOL_SPECS)
    assert first.text == "Reading first."
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("read_file", {"path": "docs/a.md"}),
        ("search", {"pattern": "teh"}),
    ]
    assert first.usage == Usage(120, 30)
    read, search = first.tool_calls
    conversation = START + [
        ChatMessage("assistant", first.text, first.tool_calls),
        ChatMessage("tool", "1| # A", tool_call_id=read.id),
        ChatMessage("tool", "search failed: bad regex", tool_call_id=search.id, is_error=True),
    ]
    second = model.complete(conversation, TOOL_SPECS)
    assert (second.text, second.tool_calls, second.usage) == ("Fixed.", [], Usage(200, 9))

    assert [r.path for r in standin.requests] == ["/v1/chat/completions"] * 2
    request = standin.requests[0]
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["model"] == "test-model" and request.body["tool_choice"] == "auto"
    assert request.body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": TOOL_SPECS[0].description,
            "parameters": TOOL_SPECS[0].parameters,
        },
    }
    assert request.body["messages"] == [
        {"role": "system", "content": "You edit docs."},
        {"role": "user", "content": "Fix the typo in docs/a.md."},
    ]
    assert standin.requests[1].body["messages"][2:] == [
        {
            "role": "assistant",
            "content": "Reading first.",
            "tool_calls": [
                {
                    "id": read.id,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "docs/a.md"}'},
                },
                {
                    "id": search.id,
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"pattern": "teh"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": read.id, "content": "1| # A"},
        {"role": "tool", "tool_call_id": search.id, "content": "ERROR: search failed: bad regex"},
    ]


def test_anthropic_conversation_with_tool_calls(standin, sleeps):
    standin.script(
        Reply(
            text="Reading first.",
            tool_calls=[ToolUse("read_file", {"path": "docs/a.md"}), ToolUse("search", {"pattern": "teh"})],
            input_tokens=120,
            output_tokens=30,
        ),
        Reply(tool_calls=[ToolUse("check_docs", {})]),
        Reply(text="Fixed.", input_tokens=200, output_tokens=9),
    )
    model = make_model("anthropic", standin, sleeps)
    assert model.name == "anthropic:test-model"
    history = [
        ChatMessage("system", "You edit docs."),
        ChatMessage("system", "Docs live in docs/."),
        ChatMessage("user", "Earlier question?"),
        ChatMessage("assistant", "Earlier answer."),
        ChatMessage("user", "Fix the typo in docs/a.md."),
        ChatMessage("user", "And keep it short."),
    ]

    first = model.complete(history, TOOL_SPECS)
    assert first.text == "Reading first."
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("read_file", {"path": "docs/a.md"}),
        ("search", {"pattern": "teh"}),
    ]
    assert first.usage == Usage(120, 30)
    read, search = first.tool_calls
    conversation = history + [
        ChatMessage("assistant", first.text, first.tool_calls),
        ChatMessage("tool", "1| # A", tool_call_id=read.id),
        ChatMessage("tool", "search failed: bad regex", tool_call_id=search.id, is_error=True),
    ]
    second = model.complete(conversation, TOOL_SPECS)
    (check,) = second.tool_calls
    assert second.text == "" and (check.name, check.arguments) == ("check_docs", {})
    conversation += [
        ChatMessage("assistant", "", second.tool_calls),
        ChatMessage("tool", "No problems found.", tool_call_id=check.id),
    ]
    third = model.complete(conversation, TOOL_SPECS)
    assert (third.text, third.tool_calls, third.usage) == ("Fixed.", [], Usage(200, 9))

    assert [r.path for r in standin.requests] == ["/v1/messages"] * 3
    request = standin.requests[0].body
    assert request["model"] == "test-model" and request["max_tokens"] == 8192
    assert request["system"] == [{"type": "text", "text": "You edit docs.\n\nDocs live in docs/.", **CACHED}]
    # Breakpoints: the last tool, the system prompt, the turn before the previous reply and the last turn.
    assert request["tools"][-1]["cache_control"] == CACHED["cache_control"]
    assert [marked(turn) for turn in standin.requests[2].body["messages"]] == [[], [], [], [], [1], [], [0]]
    for sent in standin.requests:
        unmark(sent.body)
    assert request["tools"][0] == {
        "name": "list_files",
        "description": TOOL_SPECS[0].description,
        "input_schema": TOOL_SPECS[0].parameters,
    }
    assert request["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Earlier question?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Earlier answer."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Fix the typo in docs/a.md."},
                {"type": "text", "text": "And keep it short."},
            ],
        },
    ]
    assert standin.requests[2].body["messages"][3:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading first."},
                {"type": "tool_use", "id": read.id, "name": "read_file", "input": {"path": "docs/a.md"}},
                {"type": "tool_use", "id": search.id, "name": "search", "input": {"pattern": "teh"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": read.id, "content": "1| # A", "is_error": False},
                {
                    "type": "tool_result",
                    "tool_use_id": search.id,
                    "content": "search failed: bad regex",
                    "is_error": True,
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "tool_use", "id": check.id, "name": "check_docs", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": check.id, "content": "No problems found.", "is_error": False}
            ],
        },
    ]


def test_anthropic_conversation_starting_with_the_assistant_gets_an_opening_user_turn(standin, sleeps):
    standin.script(Reply(text="Ok."))
    model = make_model("anthropic", standin, sleeps)
    model.complete([ChatMessage("assistant", "Hello, what should I edit?"), ChatMessage("user", "Nothing.")], [])
    body = standin.requests[0].body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert "system" not in body and "tools" not in body


def test_openai_invalid_json_arguments_are_passed_on_raw(standin, sleeps):
    standin.script(Reply(tool_calls=[ToolUse("write_file", '{"path": "docs/a.md", "content": ')]), Reply(text="ok"))
    model = make_model("openai", standin, sleeps)
    reply = model.complete(list(START), TOOL_SPECS)
    (call,) = reply.tool_calls
    assert call.arguments == '{"path": "docs/a.md", "content": '
    # The raw text goes back as it came, with the executor's error as the result.
    model.complete(
        START
        + [
            ChatMessage("assistant", "", [call]),
            ChatMessage(
                "tool", "write_file failed: arguments must be a JSON object", tool_call_id=call.id, is_error=True
            ),
        ],
        TOOL_SPECS,
    )
    sent = standin.requests[1].body["messages"][2]
    assert sent["content"] is None
    assert sent["tool_calls"][0]["function"]["arguments"] == '{"path": "docs/a.md", "content": '


def test_openai_reply_without_usage_counts_nothing():
    # Some OpenAI-compatible servers leave `usage` out.
    completion = ChatCompletion.model_validate(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "t1", "type": "function", "function": {"name": "check_docs", "arguments": ""}}
                        ],
                    },
                }
            ],
        }
    )
    reply = openai_chat.to_reply(completion)
    assert reply.usage == Usage() and reply.text == ""
    assert reply.tool_calls == [ToolCall("t1", "check_docs", {})]


def test_rate_limit_retry_after_is_honoured(vendor, standin, sleeps):
    standin.script(Failure(429, "slow down", headers={"retry-after": "0"}), Reply(text="Done."))
    reply = make_model(vendor, standin, sleeps).complete(list(START), TOOL_SPECS)
    assert reply.text == "Done."
    assert len(standin.requests) == 2 and sleeps == [0.0]


def test_retry_after_ms_is_preferred(vendor, standin, sleeps):
    standin.script(Failure(503, headers={"retry-after-ms": "250", "retry-after": "9"}), Reply(text="Done."))
    assert make_model(vendor, standin, sleeps).complete(list(START), []).text == "Done."
    assert sleeps == [0.25]


@pytest.mark.parametrize("status", [500, 529])
def test_server_errors_past_the_bound_make_the_model_unavailable(vendor, standin, sleeps, status):
    standin.script(*[Failure(status, f"overloaded {n}") for n in range(3)])
    model = make_model(vendor, standin, sleeps, retry=policy(sleeps, budget=1, jitter=lambda: 0.0))
    with pytest.raises(ModelError) as caught:
        model.complete(list(START), TOOL_SPECS)
    assert caught.value.code == "model_unavailable"
    assert caught.value.message.startswith(
        f"{vendor}:test-model kept failing for 1 s (3 attempts; the retry budget is 1 s)"
    )
    assert caught.value.message.endswith(f"last error: HTTP {status}: overloaded 2")
    assert len(standin.requests) == 3 and sleeps == [0.5, 0.5] and standin.pending == 0


def test_a_timeout_is_retried(vendor, standin, sleeps):
    standin.script(Hang(5), Reply(text="too late"), Reply(text="Done."))
    model = make_model(vendor, standin, sleeps, timeout=0.5)
    assert model.complete(list(START), []).text == "Done."
    assert len(standin.requests) == 2 and len(sleeps) == 1


def test_connection_refused_makes_the_model_unavailable(vendor, sleeps):
    with ModelStandIn() as gone:
        pass
    model = make_model(vendor, gone, sleeps, retry=policy(sleeps, budget=1))
    with pytest.raises(ModelError) as caught:
        model.complete(list(START), [])
    assert caught.value.code == "model_unavailable" and "could not connect" in caught.value.message


def test_a_rejected_key_fails_at_once(vendor, standin, sleeps):
    standin.expect_key("sk-the-right-one")
    with pytest.raises(ModelError) as caught:
        make_model(vendor, standin, sleeps).complete(list(START), TOOL_SPECS)
    assert caught.value.code == "model_auth_failed"
    assert VENDORS[vendor][2] in caught.value.message and KEY not in caught.value.message
    assert len(standin.requests) == 1 and sleeps == []


def test_permission_denied_fails_at_once(vendor, standin, sleeps):
    standin.script(Failure(403, "this key may not use test-model"))
    with pytest.raises(ModelError) as caught:
        make_model(vendor, standin, sleeps).complete(list(START), [])
    assert caught.value.code == "model_auth_failed" and "this key may not use test-model" in caught.value.message
    assert len(standin.requests) == 1


def test_an_unknown_model_is_a_model_error_with_a_hint(vendor, standin, sleeps):
    standin.script(Failure(404, "model: test-model does not exist"))
    with pytest.raises(ModelError) as caught:
        make_model(vendor, standin, sleeps).complete(list(START), TOOL_SPECS)
    assert caught.value.code == "model_error"
    assert "model: test-model does not exist" in caught.value.message
    assert "the model name 'test-model' may be wrong" in caught.value.message
    assert len(standin.requests) == 1 and sleeps == []


@pytest.mark.parametrize("status", [400, 413, 422])
def test_other_client_errors_are_model_errors(vendor, standin, sleeps, status):
    standin.script(Failure(status, "prompt is too long"))
    with pytest.raises(ModelError) as caught:
        make_model(vendor, standin, sleeps).complete(list(START), [])
    assert caught.value.code == "model_error" and f"HTTP {status}: prompt is too long" in caught.value.message
    assert len(standin.requests) == 1


def test_a_missing_key_fails_before_any_request(vendor, standin, sleeps):
    with pytest.raises(ModelError) as caught:
        make_model(vendor, standin, sleeps, key=None)
    assert caught.value.code == "model_auth_failed"
    assert f"set {VENDORS[vendor][2]}" in caught.value.message
    assert standin.requests == []


# --- the providers in the factory and the agent loop --------------------------------------------------------


def test_build_providers_reads_the_settings(vendor, standin):
    _, base_url, _ = VENDORS[vendor]
    settings = Settings(**{f"{vendor}_api_key": KEY, f"{vendor}_base_url": getattr(standin, base_url)})
    factory = ModelFactory(providers=build_providers(settings))
    assert {"openai", "anthropic"} <= set(factory.providers)
    standin.script(Reply(text="Hello."))
    model = factory.client(f"{vendor}:test-model", run_index=0)
    assert model.name == f"{vendor}:test-model"
    assert model.complete(list(START), TOOL_SPECS).text == "Hello."
    other = "anthropic" if vendor == "openai" else "openai"
    with pytest.raises(ModelError) as caught:
        factory.client(f"{other}:test-model", run_index=0)
    assert caught.value.code == "model_auth_failed"


def test_openai_requests_carry_the_jobs_prompt_cache_key_unless_turned_off(standin):
    standin.script(Reply(text="One."), Reply(text="Two."))
    for enabled in (True, False):
        settings = Settings.from_env(
            {
                "OPENAI_API_KEY": KEY,
                "OPENAI_BASE_URL": standin.openai_base_url,
                "COPYDESK_OPENAI_PROMPT_CACHE_KEY": str(enabled).lower(),
            }
        )
        model = ModelFactory(providers=build_providers(settings)).client("openai:m", run_index=0, cache_key="job_1")
        model.complete(list(START), TOOL_SPECS)
    assert standin.requests[0].body["prompt_cache_key"] == "job_1"
    assert "prompt_cache_key" not in standin.requests[1].body


def test_the_agent_loop_edits_a_workspace_through_each_adapter(vendor, standin, sleeps, open_workspace):
    workspace = open_workspace({"docs/a.md": "# A\n"})
    standin.script(
        Reply(tool_calls=[ToolUse("read_file", {"path": "docs/a.md"})]),
        Reply(
            text="Adding the page.",
            tool_calls=[
                ToolUse("write_file", {"path": "docs/b.md", "content": "# B\n\nSee [A](a.md).\n"}),
                ToolUse("write_file", {"path": ".git/config", "content": "[core]\n"}),
            ],
        ),
        Reply(tool_calls=[ToolUse("finish", {"title": "Add page B", "summary": "Added docs/b.md."})]),
    )
    model = make_model(vendor, standin, sleeps)
    result = run_agent(
        workspace, model, AgentTask("Add a page B that links to A."), RunLimits(max_steps=10, max_bytes_written=10_000)
    )
    assert workspace.changes() == {"docs/b.md": b"# B\n\nSee [A](a.md).\n"}
    assert (result.title, result.summary, result.steps) == ("Add page B", "Added docs/b.md.", 3)
    # Every request but the first reads the system prompt and tools from the vendor's cache, so it bills less.
    reported = [sent.usage for sent in standin.requests]
    assert result.usage.input_tokens == sum(u.total for u in reported)
    assert result.usage.cache_read_tokens == sum(u.read for u in reported) > 0
    assert result.usage.cache_write_tokens == sum(u.written for u in reported)
    assert (result.usage.cache_write_tokens > 0) is (vendor == "anthropic")
    assert reported[0].read == 0 and all(u.read > 0 for u in reported[1:])
    assert result.usage.billable_tokens < result.usage.input_tokens + result.usage.output_tokens
    assert len(standin.requests) == 3 and standin.pending == 0
    results = tool_results(vendor, standin.requests[-1].body)
    assert [is_error for _, is_error in results] == [False, False, True]
    assert results[0][0].endswith("     1\t# A")
    assert ".git" in results[2][0]


def test_no_change_needed_goes_through_each_adapter_with_a_valid_finish_schema(vendor, standin, sleeps, open_workspace):
    workspace = open_workspace({"docs/a.md": "# A\n\nRun pip install a.\n"})
    standin.script(
        Reply(
            tool_calls=[
                ToolUse("finish", {"title": "", "summary": "docs/a.md already says it.", "no_change_needed": True})
            ]
        )
    )
    result = run_agent(
        workspace,
        make_model(vendor, standin, sleeps),
        AgentTask("Mention pip install."),
        RunLimits(max_steps=5, max_bytes_written=1_000),
    )
    assert (result.summary, result.no_change_needed) == ("docs/a.md already says it.", True)
    tools = standin.requests[0].body["tools"]
    # OpenAI nests the JSON Schema under function.parameters, Anthropic puts it in input_schema.
    [finish] = (
        [t["function"]["parameters"] for t in tools if t["function"]["name"] == "finish"]
        if vendor == "openai"
        else [t["input_schema"] for t in tools if t["name"] == "finish"]
    )
    assert finish["properties"]["no_change_needed"]["type"] == "boolean"
    assert finish["required"] == ["title", "summary"]


CACHED = {"cache_control": {"type": "ephemeral"}}


def marked(turn: dict) -> list[int]:
    """Which content blocks of an Anthropic turn carry a cache breakpoint."""
    return [i for i, block in enumerate(turn["content"]) if "cache_control" in block]


def unmark(body: dict) -> None:
    """Drop the cache breakpoints from an Anthropic request's turns (to compare their content)."""
    for turn in body["messages"]:
        for block in turn["content"]:
            block.pop("cache_control", None)


def tool_results(vendor: str, body: dict) -> list[tuple[str, bool]]:
    """The (content, is_error) of every tool result in a request, in order."""
    if vendor == "openai":
        return [
            (m["content"].removeprefix("ERROR: "), m["content"].startswith("ERROR: "))
            for m in body["messages"]
            if m["role"] == "tool"
        ]
    return [
        (b["content"], b["is_error"])
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]


DEEP = 100_000


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_dict(depth: int) -> dict:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return {"pattern": value}


@pytest.mark.parametrize(
    "vendor, arguments",
    [
        ("openai", '{"pattern": ' + deep_json(DEEP) + "}"),
        ("openai", '{"pattern": ' + deep_json(40) + "}"),
        ("anthropic", deep_dict(40)),
    ],
    ids=["openai-100k", "openai-40", "anthropic-40"],
)
def test_deeply_nested_tool_arguments_are_a_tool_error_and_the_run_goes_on(
    vendor, arguments, standin, sleeps, open_workspace
):
    workspace = open_workspace({"docs/a.md": "# A\n"})
    standin.script(
        Reply(tool_calls=[ToolUse("search", arguments)]),
        Reply(tool_calls=[ToolUse("finish", {"title": "Nothing", "summary": "Nothing to do."})]),
    )
    result = run_agent(
        workspace,
        make_model(vendor, standin, sleeps),
        AgentTask("Look around."),
        RunLimits(max_steps=5, max_bytes_written=1_000),
    )
    assert result.summary == "Nothing to do."
    [(content, is_error)] = tool_results(vendor, standin.requests[-1].body)
    assert is_error and content == "search failed: arguments must be a JSON object"


def test_a_reply_nested_too_deeply_to_decode_is_a_model_error_not_a_crash(sleeps):
    # The SDK decodes an Anthropic tool call's input with the whole reply, so the depth breaks the decoding.
    body = (
        '{"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use", '
        '"content": [{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"pattern": '
        + deep_json(DEEP)
        + '}}], "usage": {"input_tokens": 1, "output_tokens": 1}}'
    ).encode()

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    with LiveServer(app) as server:
        model = AnthropicModel("test-model", api_key=KEY, base_url=server.url, retry=policy(sleeps))
        with pytest.raises(ModelError) as caught:
            model.complete(list(START), TOOL_SPECS)
    assert caught.value.code == "model_error" and "nested too deeply" in str(caught.value)
