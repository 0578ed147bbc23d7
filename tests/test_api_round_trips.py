"""Redis round trips per API request, counted on the web process's own connections: GET job one, create one once the
process has read the key and the project (two the first time; one more for a replay of an Idempotency-Key, which
reads the earlier job)."""

import contextlib
import threading

import pytest
from redis.connection import AbstractConnection


@pytest.fixture
def round_trips(monkeypatch):
    """Counts every packet of commands the process sends to Redis (a pipeline's commands go as one)."""
    sent = {"count": 0}
    lock = threading.Lock()
    original = AbstractConnection.send_packed_command

    def counting(self, command, check_health=True):
        with lock:
            sent["count"] += 1
        return original(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counting)

    @contextlib.contextmanager
    def counted():
        before = sent["count"]
        result: dict = {}
        yield result
        result["round_trips"] = sent["count"] - before

    return counted


def test_get_job_takes_one_round_trip(stack, round_trips):
    job = stack.create("Add an FAQ").json()
    stack.job(job["id"])  # warm: the script is loaded once per Redis server, a connection opened once
    for _ in range(3):
        with round_trips() as counted:
            assert stack.job(job["id"])["id"] == job["id"]
        assert counted["round_trips"] == 1


def test_create_takes_one_round_trip_once_the_key_and_project_were_read_with_or_without_an_idempotency_key(
    stack, round_trips
):
    stack.create("warm up")  # each script is loaded once per Redis server, a connection opened once
    _, other_key = stack.ctx.services.keys.create(account="local", name="another")
    url = f"/v2/agent/{stack.project_id}/job"
    with round_trips() as counted:  # a key this process has not read yet: read first, then the create script
        assert stack.api.post(url, json={"prompt": "first"}, headers={"Authorization": f"Bearer {other_key}"}).ok
    assert counted["round_trips"] == 2
    for prompt in ("Add an FAQ", "Add a changelog"):
        with round_trips() as counted:
            assert stack.create(prompt).status_code == 201
        assert counted["round_trips"] == 1
    headers = {"Idempotency-Key": "round-trips-1"}
    with round_trips() as counted:
        first = stack.api.post(url, json={"prompt": "Add a glossary"}, headers=headers)
    assert first.status_code == 201 and counted["round_trips"] == 1
    with round_trips() as counted:
        replay = stack.api.post(url, json={"prompt": "Add a glossary"}, headers=headers)
    assert replay.json()["id"] == first.json()["id"] and counted["round_trips"] <= 2


def test_a_revoked_key_is_refused_on_the_very_next_request(stack):
    job = stack.create("Add an FAQ").json()
    stack.job(job["id"])
    key = stack.ctx.services.keys.authenticate(f"Bearer {stack.key}")
    stack.ctx.services.keys.revoke(key.id)
    response = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}")
    assert response.status_code == 401 and "revoked" in response.json()["detail"]
    assert stack.create("after the revocation").status_code == 401
