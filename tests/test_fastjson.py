"""service.fastjson and the Flask provider over it: the same values as the standard library's json in both
directions, including what orjson refuses (lone surrogates, NaN, keys that are not text, integers past 64 bits),
and records written before it read back unchanged."""

import dataclasses
import datetime
import decimal
import json
import math
import uuid

import pytest
from flask import Flask, jsonify, request

from service import fastjson
from service.api.json_provider import FastJSONProvider
from service.models import Message, Role
from service.store.codec import dump, load

ESCAPED_NAME = "docs/caf\udce9.md"  # a file name that is not UTF-8, as git's tree is read (surrogateescape)
VALUES = [
    None,
    True,
    0,
    -(2**63),
    2**64 - 1,
    0.1,
    1e100,
    "",
    'é ☃ 😀 \x00 \u2028 "quoted" \\ \n\t\x7f',
    [],
    {"b": 1, "a": [1, {"z": None}]},
]


@pytest.mark.parametrize("value", VALUES)
def test_values_read_back_as_the_standard_library_reads_its_own(value):
    assert fastjson.loads(fastjson.dumps(value)) == json.loads(json.dumps(value))
    assert fastjson.loads(json.dumps(value)) == json.loads(json.dumps(value))
    assert fastjson.loads(json.dumps(value).encode()) == json.loads(json.dumps(value))


def test_what_orjson_refuses_is_read_and_written_as_json_does():
    # Written: a lone surrogate (as its escape), an integer past 64 bits, a key that is not text.
    for value in ({"path": ESCAPED_NAME}, {"n": 2**70}, {1: "one"}, [{"x": ESCAPED_NAME}] * 2):
        written = fastjson.dumps(value)
        assert written == json.dumps(value, separators=(",", ":")).encode()
        assert fastjson.loads(written) == json.loads(json.dumps(value))
    # Read: a lone surrogate's escape, NaN and Infinity.
    assert fastjson.loads('["\\udce9"]') == ["\udce9"]
    read = fastjson.loads(b"[NaN, Infinity, -Infinity]")
    assert math.isnan(read[0]) and read[1:] == [math.inf, -math.inf]


@pytest.mark.parametrize("raw", [b"", b"{", b"[1,]", b"{'a': 1}", b'"\xff"', "nul"])
def test_what_is_not_json_raises_value_error(raw):
    with pytest.raises(ValueError):
        fastjson.loads(raw)


def test_text_is_written_as_utf8_keys_in_order_or_sorted():
    assert fastjson.dumps({"b": "é", "a": 1}) == '{"b":"é","a":1}'.encode()
    assert fastjson.dumps({"b": "é", "a": 1}, sort_keys=True) == '{"a":1,"b":"é"}'.encode()
    assert fastjson.dumps({"a": [1]}, indent=True) == b'{\n  "a": [\n    1\n  ]\n}'


def test_a_record_with_a_file_name_that_is_not_utf8_round_trips_through_the_store_codec():
    message = Message(
        id="msg_1", job_id="job_1", seq=0, role=Role.AGENT, content="Fixed ☃", created_at="2026-11-26T00:00:00.000Z"
    )
    message.changed_files = [ESCAPED_NAME, "docs/ok.md"]
    raw = dump(message)
    assert b"\\udce9" in raw  # escaped, as json wrote it: the name has no UTF-8 form
    assert load(Message, raw) == message
    message.changed_files = ["docs/ok.md"]
    assert "☃".encode() in dump(message)  # otherwise UTF-8
    assert load(Message, dump(message)) == message


def test_a_record_written_by_the_standard_library_reads_the_same():
    message = Message(
        id="msg_1", job_id="job_1", seq=0, role=Role.USER, content="Add ☃ 😀", created_at="2026-11-26T00:00:00.000Z"
    )
    before = json.dumps(message.to_dict(), separators=(",", ":"), sort_keys=True)  # what dump wrote before
    assert load(Message, before.encode()) == message == load(Message, dump(message))


@dataclasses.dataclass
class _Point:
    x: int
    when: datetime.date


@pytest.fixture
def app():
    app = Flask(__name__)
    app.json = FastJSONProvider(app)

    @app.post("/echo")
    def echo():
        return jsonify(request.get_json())

    return app


def test_jsonify_writes_what_flasks_own_provider_writes_for_the_types_it_knows(app):
    when = datetime.datetime(2026, 11, 26, 7, 30, tzinfo=datetime.UTC)
    value = {
        "z": "é",
        "a": when,
        "point": _Point(1, when.date()),
        "id": uuid.UUID(int=1),
        "price": decimal.Decimal("1.10"),
    }
    for shown in (value, {**value, "path": ESCAPED_NAME}):  # orjson's way, and json's where orjson cannot
        with app.app_context():
            ours = jsonify(shown)
            flasks = app.json_provider_class(app).response(shown)
        assert ours.mimetype == "application/json" and ours.data.endswith(b"\n")
        assert json.loads(ours.data) == json.loads(flasks.data)
        assert list(json.loads(ours.data)) == list(shown)  # the order given
        assert ("é".encode() in ours.data) is (shown is value)  # UTF-8, unless json wrote it all
    with app.app_context(), pytest.raises(TypeError):
        jsonify({"x": object()})


def test_request_bodies_are_read_and_debug_responses_indented(app):
    client = app.test_client()
    assert client.post("/echo", json={"b": ["é", 1.5]}).data == '{"b":["é",1.5]}\n'.encode()
    app.debug = True
    assert client.post("/echo", json={"b": 1}).data == b'{\n  "b": 1\n}\n'
