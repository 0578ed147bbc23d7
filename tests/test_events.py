"""Job events: the Redis stream, `?after=` pages, and the Server-Sent Events stream with resume and its cap."""

import threading
import time

import pytest
import requests
from requests_sse import EventSource, InvalidStatusCodeError

from service.job_events import EventType
from service.store.jobkeys import stream_key
from service.store.jobs import RunOutcome
from tests.conftest import free_port
from tests.event_reading import STATE_TYPES, events_url, page, read_sse
from tests.flow_scripts import FAQ, edit, finish
from tests.harness import wait_until
from tests.web_process import WebServer

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running


def test_a_job_run_leaves_its_events_in_order_with_monotonic_ids(stack):
    stack.script([FAQ, finish()])
    job = stack.create().json()
    stack.drain()

    events = page(stack, job["id"])
    assert [e["type"] for e in events] == STATE_TYPES
    ids = [tuple(map(int, e["id"].split("-"))) for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert events[0]["data"]["status"] == "active" and events[0]["data"]["id"] == job["id"]
    steps = [e["data"]["run"] for e in events if e["type"] == "run.step"]
    assert [s["tool"] for s in steps] == ["write_file", "finish"]
    assert "Ask away" not in str(steps)  # a summary of the arguments, never file contents
    opened = next(e for e in events if e["type"] == "pr.opened")
    assert opened["data"]["pullRequest"] == {"url": stack.job(job["id"])["prLink"], "number": 1}
    assert events[-1]["data"]["status"] == "completed" and events[-1]["data"]["prLink"]
    # A page after an id has exactly what followed it.
    assert page(stack, job["id"], after=events[2]["id"]) == events[3:]
    assert page(stack, job["id"], after=events[-1]["id"]) == []


def test_an_archived_jobs_stream_expires_and_an_active_ones_does_not(stack_factory):
    stack = stack_factory(event_ttl_days=2)
    ttl_seconds = 2 * 86400
    redis, jobs = stack.ctx.services.redis, stack.ctx.services.jobs
    stack.script([FAQ, finish()])
    done = stack.create().json()
    stack.drain()
    active = stack.create().json()  # not drained: its message waits
    assert stack.api.post(f"/v2/agent/{stack.project_id}/job/{done['id']}/archive").status_code == 200
    assert ttl_seconds - 60 < redis.ttl(stream_key(done["id"])) <= ttl_seconds
    assert redis.ttl(stream_key(active["id"])) == -1  # a stream without expiry

    # Archived while its run goes on: the run's late events keep the stream expiring.
    running, message = jobs.start_next(active["id"])
    jobs.archive(active["id"])
    key = stream_key(active["id"])
    assert ttl_seconds - 60 < redis.ttl(key) <= ttl_seconds
    redis.expire(key, 100)
    stack.ctx.services.events.emit(running, EventType.RUN_STEP, run={"messageId": message.id})  # the run's copy
    assert 0 < redis.ttl(key) <= 100, "an event of the run's (still active) copy of the job dropped the TTL"
    redis.delete(key)  # as if it had expired before the run finished
    jobs.finish_message(active["id"], message.id, RunOutcome(reply="Done."))
    assert [e["type"] for e in page(stack, active["id"])] == ["run.finished"]
    assert ttl_seconds - 60 < redis.ttl(key) <= ttl_seconds, "a stream made again by a late event never expires"


def test_the_stream_of_an_active_job_ends_when_it_leaves_active(stack_factory):
    stack = stack_factory(sse_keepalive_seconds=1)
    stack.script([FAQ, finish()])
    job = stack.create().json()
    headers = {"Authorization": f"Bearer {stack.key}"}
    records = []
    with requests.get(events_url(stack, job["id"]), headers=headers, stream=True, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        reader = threading.Thread(target=lambda: read_sse(response, until=time.monotonic() + 60, records=records))
        reader.start()
        # The job waits for a worker: the stream idles with keep-alives, then the run's events come.
        wait_until(lambda: {"comment": "keep-alive"} in records, 30, "a keep-alive on the idle stream")
        stack.drain()
        reader.join(timeout=60)
        assert not reader.is_alive(), "the stream did not end when the job left active"
    events = [r for r in records if "event" in r]
    assert [r["event"] for r in events] == STATE_TYPES
    assert {"comment": "keep-alive"} in records
    assert [r["id"] for r in events] == [e["id"] for e in page(stack, job["id"])]


def left(until: float) -> float:
    """Seconds from now to `until` (a monotonic time), none when it has passed."""
    return max(0.0, until - time.monotonic())


def test_a_followed_stream_stays_open_across_follow_ups_and_ends_when_the_job_is_archived(stack_factory):
    stack = stack_factory(sse_keepalive_seconds=1)
    stack.script([FAQ, finish()], [edit("docs/faq.md", "Ask away.", "Ask away, politely."), finish("Polite", "Ok.")])
    job = stack.create().json()
    headers = {"Authorization": f"Bearer {stack.key}"}
    until = time.monotonic() + 90
    records: list[dict] = []

    def completed() -> int:
        return sum(1 for r in list(records) if r.get("event") == "job.completed")

    with requests.get(
        events_url(stack, job["id"]), params={"follow": "true"}, headers=headers, stream=True, timeout=30
    ) as response:
        assert response.status_code == 200
        reader = threading.Thread(target=read_sse, args=(response, until, records), daemon=True)
        reader.start()
        stack.drain()
        wait_until(lambda: completed() == 1, left(until), "the first round's job.completed", interval=0.1)
        # Past job.completed the stream is still open: keep-alives keep coming.
        seen = len(records)
        wait_until(
            lambda: {"comment": "keep-alive"} in records[seen:],
            left(until),
            "a keep-alive after job.completed",
            interval=0.1,
        )
        assert reader.is_alive()
        assert stack.message(job["id"], "Be more polite").status_code == 200
        stack.drain()
        wait_until(lambda: completed() == 2, left(until), "the follow-up's job.completed", interval=0.1)
        assert reader.is_alive()
        assert stack.api.post(f"/v2/agent/{stack.project_id}/job/{job['id']}/archive").status_code == 200
        reader.join(timeout=left(until))
        assert not reader.is_alive(), "the followed stream did not end when the job was archived"
    events = [r for r in records if "event" in r]
    assert [r["id"] for r in events] == [e["id"] for e in page(stack, job["id"])]
    types = [r["event"] for r in events]
    assert types[: len(STATE_TYPES)] == STATE_TYPES and types[-1] == "job.archived"
    follow_up = types[len(STATE_TYPES) : -1]
    assert follow_up[0] == "run.started" and "run.pushed" in follow_up and follow_up[-1] == "job.completed"


def test_a_finished_job_streams_what_is_left_and_a_reconnect_after_the_end_is_told_to_stop(stack):
    stack.script([FAQ, finish()])
    job = stack.create().json()
    stack.drain()
    events = page(stack, job["id"])
    headers = {"Authorization": f"Bearer {stack.key}", "Last-Event-ID": events[3]["id"]}
    with requests.get(events_url(stack, job["id"]), headers=headers, stream=True, timeout=30) as response:
        records = read_sse(response, until=time.monotonic() + 30)
    assert [r["id"] for r in records if "id" in r] == [e["id"] for e in events[4:]]
    headers["Last-Event-ID"] = events[-1]["id"]
    assert requests.get(events_url(stack, job["id"]), headers=headers, timeout=10).status_code == 204


def test_bad_event_ids_and_parameters_are_400(stack):
    job = stack.create().json()
    url = f"/v2/agent/{stack.project_id}/job/{job['id']}/events"
    for params, field in (({"after": "yesterday"}, "after"), ({"follow": "maybe"}, "follow"), ({"x": "1"}, "x")):
        response = stack.api.get(url, params=params)
        assert response.status_code == 400 and response.json()["field"] == field
    response = requests.get(
        stack.url + url, headers={"Authorization": f"Bearer {stack.key}", "Last-Event-ID": "<>"}, timeout=10
    )
    assert response.status_code == 400 and response.json()["field"] == "Last-Event-ID"


def test_streams_past_the_per_process_cap_are_503(stack_factory):
    stack = stack_factory(max_streams=1, sse_keepalive_seconds=1)
    job = stack.create().json()
    headers = {"Authorization": f"Bearer {stack.key}"}
    with requests.get(events_url(stack, job["id"]), headers=headers, stream=True, timeout=30) as first:
        assert first.status_code == 200
        second = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}/events")
        assert second.status_code == 503 and second.json()["code"] == "unavailable"
        assert int(second.headers["Retry-After"]) > 0
        # The JSON page is not a stream and still answers.
        assert (
            stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}/events", params={"after": "0"}).status_code
            == 200
        )

    def slot_free() -> bool:
        with requests.get(events_url(stack, job["id"]), headers=headers, stream=True, timeout=30) as again:
            return again.status_code == 200

    # The slot comes back when the client goes away (noticed at the next keep-alive at the latest).
    wait_until(slot_free, 20, "the stream slot to be given back", interval=0.5)


def test_an_sse_client_resumes_across_a_restart_of_the_web_process_and_misses_nothing(stack, tmp_path):
    stack.script([FAQ, finish()])
    port = free_port()
    web = WebServer(
        {**stack.env(), "COPYDESK_BASE_URL": f"http://127.0.0.1:{port}"}, port, tmp_path / "web.log", workers=1
    )
    auth = {"Authorization": f"Bearer {stack.key}"}
    with web:
        job = requests.post(
            f"{web.url}/v2/agent/{stack.project_id}/job", json={"prompt": "FAQ"}, headers=auth, timeout=10
        ).json()
        received = []
        with EventSource(
            f"{web.url}/v2/agent/{stack.project_id}/job/{job['id']}/events",
            headers=auth,
            timeout=30,
            max_connect_retry=8,
        ) as source:
            first = next(source)
            received.append((first.last_event_id, first.type))
            web.crash()
            stack.drain()  # the whole run happens while the web process is down
            web.__enter__()
            with pytest.raises(InvalidStatusCodeError) as stopped:  # the 204 after the last event
                for event in source:
                    received.append((event.last_event_id, event.type))
            assert stopped.value.status_code == 204
        web.crash()  # not stopped gracefully: that takes seconds, and is not what this test is about
    assert [t for _id, t in received] == STATE_TYPES
    assert [i for i, _t in received] == [e["id"] for e in page(stack, job["id"])]
