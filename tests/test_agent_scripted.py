"""The scripted model provider and the model factory, without a workspace."""

import json

import pytest

from service.agent.model import ModelError, ModelFactory, UnknownModel
from service.agent.scripted import ScriptError, load_script, parse_script
from service.errors import RunFailed

SCRIPT = {
    "runs": [
        {
            "steps": [
                {"tool": "read_file", "args": {"path": "README.md"}},
                {"tool": "write_file", "args": {"path": "docs/a.md", "content": "A\n"}},
            ]
        },
        {"steps": [{"tool": "finish", "args": {"title": "T", "summary": "S"}}]},
    ]
}


@pytest.fixture
def script_path(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def test_run_n_replays_runs_n_then_finishes(script_path):
    model = ModelFactory().client(f"scripted:{script_path}", run_index=0)
    assert model.name == f"scripted:{script_path}"
    calls = [model.complete([], []).tool_calls for _ in range(3)]
    assert [len(c) for c in calls] == [1, 1, 1]
    assert [(c[0].name, c[0].arguments) for c in calls[:2]] == [
        ("read_file", {"path": "README.md"}),
        ("write_file", {"path": "docs/a.md", "content": "A\n"}),
    ]
    assert calls[2][0].name == "finish"
    assert len({c[0].id for c in calls}) == 3

    second = ModelFactory().client(f"scripted:{script_path}", run_index=1).complete([], [])
    assert second.tool_calls[0].arguments == {"title": "T", "summary": "S"}
    assert second.usage.input_tokens == second.usage.output_tokens == 0


def test_past_the_last_run_finishes_saying_nothing_changed(script_path):
    reply = ModelFactory().client(f"scripted:{script_path}", run_index=2).complete([], [])
    (call,) = reply.tool_calls
    assert call.name == "finish"
    assert "nothing was changed" in call.arguments["summary"]


def test_a_no_change_needed_finish_step_is_replayed_as_written(tmp_path):
    path = tmp_path / "no_change.json"
    finish = {"title": "", "summary": "Already documented.", "no_change_needed": True}
    path.write_text(json.dumps({"runs": [{"steps": [{"tool": "finish", "args": finish}]}]}))
    (call,) = ModelFactory().client(f"scripted:{path}", run_index=0).complete([], []).tool_calls
    assert (call.name, call.arguments) == ("finish", finish)
    assert (
        "no_change_needed"
        not in ModelFactory().client(f"scripted:{path}", run_index=1).complete([], []).tool_calls[0].arguments
    )  # past the last run: an answer, not a judgement


def test_alias_resolves_to_bundled_script(script_path):
    model = ModelFactory({"demo": script_path}).client("scripted:demo", run_index=0)
    assert model.name == "scripted:demo"
    assert model.complete([], []).tool_calls[0].name == "read_file"


@pytest.mark.parametrize("name", ["openai:gpt-4.1", "gpt-4.1", "scripted:", ":x"])
def test_unknown_provider_or_malformed_name_is_a_clear_error(name):
    with pytest.raises(UnknownModel) as caught:
        ModelFactory().client(name, run_index=0)
    assert caught.value.code == "unknown_model"
    assert isinstance(caught.value, RunFailed)


def test_extra_providers_slot_in():
    class Echo:
        def __init__(self, model, run_index, cache_key):
            self.name = f"echo:{model}"

    client = ModelFactory(providers={"echo": Echo}).client("echo:one", run_index=3)
    assert client.name == "echo:one"


def test_missing_script_file_names_the_path(tmp_path):
    with pytest.raises(ScriptError) as caught:
        ModelFactory().client(f"scripted:{tmp_path / 'nope.json'}", run_index=0)
    assert "nope.json" in str(caught.value)
    assert caught.value.code == "invalid_script"
    assert isinstance(caught.value, ModelError)


def test_script_that_is_not_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{runs: ")
    with pytest.raises(ScriptError, match="not valid JSON"):
        load_script(path)


@pytest.mark.parametrize(
    "data, message",
    [
        ([], "top level must be an object"),
        ({}, "missing 'runs'"),
        ({"runs": {}}, "'runs' must be a list"),
        ({"runs": [{}]}, r"runs\[0\] must be an object with a 'steps' list"),
        ({"runs": [{"steps": [{"args": {}}]}]}, r"runs\[0\].steps\[0\] has no 'tool'"),
        ({"runs": [{"steps": [{"tool": "shell", "args": {}}]}]}, "unknown tool 'shell'"),
        ({"runs": [{"steps": [{"tool": "read_file", "args": ["README.md"]}]}]}, "'args' must be an object"),
        ({"runs": [{"steps": [{"tool": "read_file", "arguments": {}}]}]}, "unexpected key.*'arguments'"),
        ({"runs": [{"steps": ["read_file"]}]}, r"steps\[0\] must be an object"),
    ],
)
def test_invalid_scripts_say_what_is_wrong(data, message):
    with pytest.raises(ScriptError, match=message):
        parse_script(data, source="s.json")


def test_args_are_optional_and_not_checked_against_the_schema():
    script = parse_script(
        {"description": "x", "runs": [{"steps": [{"tool": "check_docs"}, {"tool": "read_file", "args": {"p": 1}}]}]}
    )
    assert [s.args for s in script.runs[0]] == [{}, {"p": 1}]
