"""Recorded writes reach Redis byte for byte as redis-py would have sent them: text, binary data, ints and floats
(sent as JSON with the binary arguments beside it, service.store.commands), and only when their condition holds."""

import enum
from typing import Any, cast

import pytest
from redis.exceptions import DataError

from service.store.admission import Admitter, Verdict
from service.store.commands import RUN_RECORDED, CommandRecorder

BINARY = b"x\x9c\x80\xff\x00\xc3(\xed\xa0\x80end"  # not UTF-8 (compressed pickle is not), with a NUL
TEXT = 'é ☃ 😀 \x00 \u2028 "quoted" \\ \n\t\x7f'  # multi-byte, control and JSON-escaped characters
BIG = 2**53 + 1  # the first int a Lua number (a double) cannot hold


class Status(str, enum.Enum):  # like RQ's JobStatus, a str enum redis-py sends as its value
    QUEUED = "queued"


def recorded() -> CommandRecorder:
    recorder = CommandRecorder()
    writes = cast(Any, recorder)
    writes.set("k:binary", BINARY)
    writes.set("k:text", TEXT)
    writes.hset(
        "k:hash", mapping={"big": BIG, "negative": -(2**70), "float": 0.1, "huge": 1e100, "status": Status.QUEUED}
    )
    writes.rpush("k:list", BINARY, memoryview(b"\xfe"), bytearray(b"\xfd"), TEXT)
    with recorder.when_exists("k:present"):
        writes.set("k:if-present", "ran")
    with recorder.when_exists("k:absent"):
        writes.set("k:if-absent", BINARY)
    writes.set("k:after", 7)  # the condition ends with its block
    return recorder


def check_written(client) -> None:
    assert client.get("k:binary") == BINARY
    assert client.get("k:text") == TEXT.encode()
    assert client.hgetall("k:hash") == {
        b"big": b"9007199254740993",
        b"negative": b"-1180591620717411303424",
        b"float": b"0.1",
        b"huge": b"1e+100",
        b"status": b"queued",
    }
    assert client.lrange("k:list", 0, -1) == [BINARY, b"\xfe", b"\xfd", TEXT.encode()]
    assert client.get("k:if-present") == b"ran"
    assert client.exists("k:if-absent") == 0
    assert client.get("k:after") == b"7"


def test_recorded_writes_land_byte_exact_and_only_when_their_condition_holds(redis_client):
    redis_client.set("k:present", "1")
    run = redis_client.register_script(RUN_RECORDED + "run_recorded(2)")
    run(args=["ignored: the writes start where the script says", *recorded().encoded()])
    check_written(redis_client)


def test_the_create_script_runs_the_recorded_writes_after_its_own_arguments(redis_client):
    redis_client.set("k:present", "1")
    assert Admitter(redis_client).admit("job_1", recorded(), None, None).verdict is Verdict.CREATED
    check_written(redis_client)


@pytest.mark.parametrize("value", [True, None, object()])
def test_a_value_redis_py_refuses_is_refused(value):
    recorder = CommandRecorder()
    cast(Any, recorder).set("k", value)
    with pytest.raises(DataError):
        recorder.encoded()
