"""Input that could not be stored or shown is refused at the door: text that is not Unicode, event ids Redis
would refuse. Each answer is a 400 naming the field, and nothing reaches the store."""

import json

import pytest
import redis
import requests

LONE = "\ud800"


def _post_json(stack, path: str, raw: bytes) -> requests.Response:
    return requests.post(
        stack.url + path,
        data=raw,
        timeout=10,
        headers={"Authorization": f"Bearer {stack.key}", "Content-Type": "application/json"},
    )


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps({"prompt": f"fix the {LONE} typo"}).encode(),  # the escape \ud800
        b'{"prompt": "fix the \xed\xa0\x80 typo"}',  # its UTF-8-like bytes, unescaped
        json.dumps({"prompt": "ok", "ref": f"main{LONE}"}).encode(),
    ],
)
def test_a_lone_surrogate_in_a_new_job_is_refused_naming_its_field(stack, raw):
    response = _post_json(stack, f"/v2/agent/{stack.project_id}/job", raw)
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "invalid_request" and problem["field"] in ("prompt", "ref")
    assert "lone surrogate" in problem["detail"] and "not valid Unicode" in problem["detail"]
    listed = stack.api.get(f"/v2/agent/{stack.project_id}/jobs")
    assert listed.status_code == 200 and listed.json()["jobs"] == []


def test_lone_surrogates_are_refused_in_messages_webhooks_and_field_names(stack):
    job = stack.create().json()
    cases = [
        (f"/v2/agent/{stack.project_id}/job/{job['id']}/message", {"prompt": f"more {LONE}"}, "prompt"),
        (
            f"/v2/agent/{stack.project_id}/webhooks",
            {"url": "https://example.com/h", "description": LONE},
            "description",
        ),
        (
            f"/v2/agent/{stack.project_id}/webhooks",
            {"url": "https://example.com/h", "events": ["job.created", LONE]},
            "events[1]",
        ),
        (f"/v2/agent/{stack.project_id}/job", {"prompt": "x", f"p{LONE}": 1}, "p\\ud800"),
    ]
    for path, body, field in cases:
        response = _post_json(stack, path, json.dumps(body).encode())
        assert response.status_code == 400 and response.json()["field"] == field, (path, response.text)
    assert stack.api.get(f"/v2/agent/{stack.project_id}/webhooks").json()["webhooks"] == []
    messages = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}/messages").json()["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == ["Improve the docs"]
    # A character beyond the BMP, sent as an escaped UTF-16 pair, is text: taken, and shown back.
    sent = _post_json(
        stack, f"/v2/agent/{stack.project_id}/job/{job['id']}/message", json.dumps({"prompt": "docs 😀"}).encode()
    )
    assert sent.status_code == 200, sent.text
    messages = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}/messages").json()["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"][-1] == "docs 😀"


def _xreads(client: redis.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_xread", {}).get("calls", 0))


@pytest.mark.parametrize(
    "after", ["99999999999999999999", "0\n", "18446744073709551616-0", "1-18446744073709551616", " 1", "1-2-3"]
)
def test_malformed_event_ids_are_400_and_never_reach_redis(stack, redis_client, after):
    job = stack.create().json()
    url = f"{stack.url}/v2/agent/{stack.project_id}/job/{job['id']}/events"
    auth = {"Authorization": f"Bearer {stack.key}"}
    before = _xreads(redis_client)
    response = requests.get(url, params={"after": after}, headers=auth, timeout=10)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_request" and response.json()["field"] == "after"
    if after.strip() == after:  # a header cannot carry a newline, and its value loses surrounding spaces
        response = requests.get(url, headers={**auth, "Last-Event-ID": after}, timeout=10)
        assert response.status_code == 400 and response.json()["field"] == "Last-Event-ID"
    assert _xreads(redis_client) == before


def test_the_largest_event_id_redis_accepts_is_taken(stack):
    job = stack.create().json()
    top = f"{2**64 - 1}-{2**64 - 1}"
    response = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}/events", params={"after": top})
    assert response.status_code == 200 and response.json()["events"] == []
    response = requests.get(
        f"{stack.url}/v2/agent/{stack.project_id}/job/{job['id']}/events",
        timeout=10,
        headers={"Authorization": f"Bearer {stack.key}", "Last-Event-ID": "99999999999999999999"},
    )
    assert response.status_code == 400 and response.json()["field"] == "Last-Event-ID"


def test_a_command_redis_refuses_is_a_500_and_only_an_outage_is_a_503(stack, redis_client):
    from service.store.jobkeys import stream_key

    job = stack.create().json()
    redis_client.delete(stream_key(job["id"]))
    redis_client.set(stream_key(job["id"]), "not a stream")  # XREAD on it gets WRONGTYPE: a bug, not an outage
    response = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}/events", params={"after": "0"})
    assert response.status_code == 500 and response.json()["code"] == "internal_error"
    assert "Retry-After" not in response.headers


def test_outages_and_refusals_are_told_apart(redis_client):
    from service.api.problems import is_outage
    from tests.conftest import free_port

    refusals = []
    for command in (("XREAD", "STREAMS", "s", "99999999999999999999"), ("NO-SUCH-COMMAND",)):
        with pytest.raises(redis.ResponseError) as refused:
            redis_client.execute_command(*command)
        refusals.append(refused.value)
    with pytest.raises(redis.DataError) as bad_argument:
        redis_client.set("k", None)  # type: ignore[arg-type]
    refusals.append(bad_argument.value)
    assert not any(is_outage(exc) for exc in refusals)
    with pytest.raises(redis.ConnectionError) as down:
        redis.Redis(port=free_port(), socket_connect_timeout=1).ping()
    assert is_outage(down.value)
    assert is_outage(redis.exceptions.ReadOnlyError("You can't write against a read only replica."))
    assert is_outage(redis.ResponseError("MISCONF Redis is configured to save RDB snapshots, but it's unable to"))


def test_the_parsers_the_dashboard_shares_refuse_lone_surrogates_too(stack):
    from service.api.body import parse_prompt, parse_webhook
    from service.errors import InvalidRequest

    # A form body cannot carry one (Werkzeug never decodes bad UTF-8 into a surrogate); the rule holds regardless.
    with pytest.raises(InvalidRequest) as refused:
        parse_prompt({"prompt": f"x{LONE}"}, stack.settings)
    assert refused.value.field == "prompt"
    with pytest.raises(InvalidRequest) as refused:
        parse_webhook({"url": "https://example.com/h", "description": LONE})
    assert refused.value.field == "description"
