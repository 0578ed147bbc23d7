"""Recorded writes reach Redis byte for byte as redis-py would have sent them: text, binary data, ints and floats
(sent as JSON with the binary arguments beside it, service.store.commands), and only when their condition holds;
a recorded kick records what RQ's own enqueue would."""

import enum
import re
from typing import Any, cast

import pytest
import rq
from redis.exceptions import DataError

from service.dispatch import Dispatcher
from service.ids import UlidGenerator
from service.store.admission import Admitter, Verdict
from service.store.commands import RUN_RECORDED, CommandRecorder
from service.store.jobkeys import rq_key
from service.store.jobs import JobStore

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


def test_text_redis_py_cannot_encode_is_refused_with_its_error(redis_client):
    lone = "docs/caf\udce9.md"  # a lone surrogate: no UTF-8 form
    with pytest.raises(UnicodeEncodeError):
        redis_client.set("k", lone)
    recorder = CommandRecorder()
    cast(Any, recorder).set("k", lone)
    with pytest.raises(UnicodeEncodeError):
        recorder.encoded()


def _masked(recorder: CommandRecorder, rq_id: str) -> list:
    """The recorded commands with the RQ job's id and timestamps (new at each enqueue) masked."""
    stamp = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z")
    return [
        (condition, [stamp.sub("TS", a.replace(rq_id, "ID")) if isinstance(a, str) else a for a in args])
        for condition, args in recorder._commands
    ]


@pytest.mark.parametrize("first", [False, True])
def test_a_recorded_kick_writes_what_rqs_own_enqueue_writes(redis_client, first):
    dispatcher = Dispatcher(
        redis_client, JobStore(redis_client, UlidGenerator()), queue_name="runs", task="tasks.run", job_timeout=300
    )
    ours, theirs = CommandRecorder(), CommandRecorder()
    dispatcher.record_kick(ours, "job_1", first=first)
    rq_job = rq.Queue("runs", connection=redis_client).enqueue_call(
        "tasks.run",
        args=("job_1",),
        timeout=300,
        result_ttl=3600,
        failure_ttl=7 * 24 * 3600,
        description="copydesk run job_1",
        at_front=first,
        pipeline=cast(Any, theirs),
    )
    our_id = ours._commands[-1][1][2]
    assert ours._commands[-1][1][:2] == ("SET", rq_key("job_1"))
    assert _masked(ours, our_id)[:-1] == _masked(theirs, rq_job.id)
