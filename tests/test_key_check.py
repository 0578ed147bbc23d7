"""The key check reads a stored key record of any JSON layout alike (the one codec.dump writes and any other), and
stamps a use with the API's timestamp; the records read and a create script's guard check a key as it does."""

import json
from datetime import UTC, datetime

import pytest

from service.apikeys import ApiKeys
from service.clock import iso
from service.store.admission import Admitter, Verdict
from service.store.apikeys import ApiKeyStore, Guard, KeyCheck, use_stamps
from service.store.commands import CommandRecorder

PAST = "2020-01-01T00:00:00.000Z"
FUTURE = "2999-01-01T00:00:00.000Z"


def _compact(record: dict) -> str:
    return json.dumps(record, separators=(",", ":"), sort_keys=True)  # what codec.dump writes


def _spaced(record: dict) -> str:
    return json.dumps(record, sort_keys=True)


def _hash_first(record: dict) -> str:
    return _compact({"hash": record["hash"]})[:-1] + "," + _compact(record)[1:]


def _nested(record: dict) -> str:
    # A field holding an object whose own `revoked_at` comes before the record's.
    return _compact({**record, "a_meta": {"a": 1, "expires_at": None, "revoked_at": None}})


def _decoy_name(record: dict) -> str:
    # A name that spells out live fields, before the real ones in the record's order.
    return _compact({**record, "name": '","expires_at":null,"hash":"x","revoked_at":null,"z":"'})


LAYOUTS = [_compact, _spaced, _hash_first, _nested, _decoy_name]


@pytest.fixture
def stored(redis_client):
    store = ApiKeyStore(redis_client)
    key, _ = ApiKeys(store).create(account="local", name="k")

    def write(layout, **changes) -> str:
        record = {**key.to_dict(), **changes}
        redis_client.set(f"cd:apikey:{key.id}", layout(record))
        return key.id

    return store, key, write


CHECKS = [
    ({}, KeyCheck.OK),
    ({"expires_at": None}, KeyCheck.OK),
    ({"expires_at": FUTURE, "revoked_at": ""}, KeyCheck.OK),
    ({"revoked_at": PAST}, KeyCheck.REVOKED),
    ({"expires_at": PAST}, KeyCheck.EXPIRED),
    ({"expires_at": None, "revoked_at": PAST}, KeyCheck.REVOKED),
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("changes", "expected"), CHECKS)
def test_every_layout_of_a_key_record_is_checked_alike(stored, redis_client, layout, changes, expected):
    store, key, write = stored
    key_id = write(layout, **changes)
    redis_client.set("cd:test:present", '{"a":[1,"b"]}')
    check, found, records = store.authorize(key_id, key.hash, ["cd:test:missing", "cd:test:present"])
    assert check is expected
    assert records == ([None, {"a": [1, "b"]}] if expected is KeyCheck.OK else [None, None])
    assert (found is not None) == (expected is KeyCheck.OK)
    if found is not None:
        assert found.id == key.id and found.use_count >= 1 and found.last_used_at is not None


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda f: f.__name__)
def test_a_wrong_digest_or_a_record_without_one_is_unknown(stored, redis_client, layout):
    store, key, write = stored
    assert store.authorize(write(layout), "0" * 64, [])[0] is KeyCheck.UNKNOWN
    record = {k: v for k, v in key.to_dict().items() if k != "hash"}
    redis_client.set(f"cd:apikey:{key.id}", layout({**record, "hash": None}))
    assert store.authorize(key.id, key.hash, [])[0] is KeyCheck.UNKNOWN


def test_the_use_stamp_is_the_api_timestamp_and_the_cutoff_a_whole_minute_before():
    at_ns = 1_764_129_600_123_456_789
    stamp, cutoff = use_stamps(at_ns)
    assert stamp == iso(datetime.fromtimestamp(at_ns // 1000 / 1e6, UTC)) == "2025-11-26T04:00:00.123Z"
    assert cutoff == "2025-11-26T03:59:00.000Z"
    assert use_stamps(at_ns - 123_456_789) == ("2025-11-26T04:00:00.000Z", cutoff)
    assert use_stamps(at_ns + 876_543_210)[0] == "2025-11-26T04:00:00.999Z"


def test_while_redis_takes_no_writes_a_key_is_still_checked_and_its_reads_served_uncounted(stored, redis_client):
    store, key, write = stored
    key_id = write(_compact)
    redis_client.set("cd:test:present", '{"a":1}')

    def refusing_writes(reads: list[str]):
        # As a primary short of replicas does (COPYDESK_REDIS_MIN_REPLICAS): every write is refused, NOREPLICAS.
        redis_client.config_set("min-replicas-to-write", 1)
        try:
            return store.authorize(key_id, key.hash, reads)
        finally:
            redis_client.config_set("min-replicas-to-write", 0)

    check, never_used, records = refusing_writes(["cd:test:present"])
    assert check is KeyCheck.OK and records == [{"a": 1}]
    assert (never_used.use_count, never_used.last_used_at) == (0, None)
    counted = store.authorize(key_id, key.hash, [])[1]
    assert counted.use_count == 1 and counted.last_used_at is not None
    check, used, records = refusing_writes(["cd:test:missing"])
    assert check is KeyCheck.OK and records == [None]
    assert (used.use_count, used.last_used_at) == (1, counted.last_used_at)


def _uses(redis_client, key_id: str) -> int:
    return int(redis_client.get(f"cd:apikey:{key_id}:uses") or 0)


def _guard(key, key_record: bytes, record_key: str, record: bytes, digest: str | None = None) -> Guard:
    return Guard(key.id, digest or key.hash, *use_stamps(), key_record, record_key, record)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("changes", "expected"), CHECKS)
def test_the_records_read_and_a_create_scripts_guard_check_the_key_alike(
    stored, redis_client, layout, changes, expected
):
    store, key, write = stored
    key_id = write(layout, **changes)
    raw = redis_client.get(f"cd:apikey:{key_id}")
    redis_client.set("cd:test:present", '{"a":1}')
    passes = expected is KeyCheck.OK
    assert store.records(key_id, key.hash, "cd:test:present") == (
        (expected, raw, b'{"a":1}') if passes else (expected, b"", None)
    )
    assert _uses(redis_client, key_id) == 0  # reading them counts no use
    writes = CommandRecorder()
    writes.set("cd:test:written", "1")
    admission = Admitter(redis_client).admit(
        "job_x", writes, None, None, _guard(key, raw, "cd:test:present", b'{"a":1}')
    )
    assert admission.verdict is (Verdict.CREATED if passes else Verdict.STALE) and admission.records is None
    assert (redis_client.exists("cd:test:written"), _uses(redis_client, key_id)) == ((1, 1) if passes else (0, 0))


def test_a_guard_whose_key_or_record_changed_writes_and_counts_nothing_and_hands_both_back(stored, redis_client):
    store, key, write = stored
    key_id = write(_compact)
    raw = redis_client.get(f"cd:apikey:{key_id}")
    redis_client.set("cd:test:present", '{"a":2}')
    writes = CommandRecorder()
    writes.set("cd:test:written", "1")
    admitter = Admitter(redis_client)
    for key_record, record in [(raw, b'{"a":1}'), (raw + b" ", b'{"a":2}'), (b"", b"")]:
        admission = admitter.admit("job_x", writes, None, None, _guard(key, key_record, "cd:test:present", record))
        assert admission.verdict is Verdict.STALE and admission.records == (raw, b'{"a":2}')
    missing = admitter.admit("job_x", writes, None, None, _guard(key, raw, "cd:test:missing", b""))
    assert missing.verdict is Verdict.STALE and missing.records == (raw, None)
    wrong = admitter.admit("job_x", writes, None, None, _guard(key, raw, "cd:test:present", b'{"a":2}', "0" * 64))
    assert wrong.verdict is Verdict.STALE and wrong.records is None
    assert not redis_client.exists("cd:test:written") and _uses(redis_client, key_id) == 0
    assert store.records(key_id, "0" * 64, "cd:test:present") == (KeyCheck.UNKNOWN, b"", None)
