"""Time-outs chosen, not inherited: Redis clients get the configured time-outs, every blocking call blocks for less
than its client's read time-out, and an event stream stays open across gaps longer than it until the job ends."""

import contextlib
import threading
import time

import pytest
import requests
import rq

from bot import context
from bot.rqworker import CopydeskWorker
from service.settings import Settings, SettingsError
from tests.conftest import free_port
from tests.event_reading import STATE_TYPES, page, read_sse
from tests.model_fixtures import PROVIDERS, write_then_finish
from tests.model_standin import Hang
from tests.redis_servers import NO_PERSISTENCE, running_redis
from tests.web_process import WebServer
from tests.worker_processes import WorkerProcess

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running

# Seconds the model takes per call: longer than the keep-alive (1 s) and the Redis read time-out (2 s) below, by a
# whole second, so the stream has to outlast both.
GAP = 3.0


def test_clients_get_the_chosen_time_outs_and_blocking_reads_stay_under_them(redis_url):
    settings = Settings(
        redis_url=redis_url,
        redis_socket_timeout=2,
        redis_connect_timeout=1,
        sse_keepalive_seconds=3,
        max_streams=20,
        redis_max_connections=40,
    )
    ctx = context.build(settings, environ={})
    pool = ctx.services.redis.connection_pool
    assert pool.connection_kwargs["socket_timeout"] == 2 and pool.connection_kwargs["socket_connect_timeout"] == 1
    assert pool.max_connections == 20  # what the streams' own pool does not hold
    # An event stream's XREAD blocks a whole keep-alive period, longer than the ordinary read time-out, on a
    # client of its own: it comes back empty, without a time-out error.
    started = time.monotonic()
    assert ctx.services.events.after("job_none", "0", block_ms=3000) == []
    assert time.monotonic() - started >= 2.9
    # RQ's dequeue blocks for less than the read time-out, so RQ leaves the time-out the process shares alone.
    worker = CopydeskWorker([rq.Queue("q", connection=ctx.services.redis)], ctx=ctx)
    assert worker.dequeue_timeout < settings.redis_socket_timeout
    assert pool.connection_kwargs["socket_timeout"] == 2


def test_a_stream_cap_that_leaves_requests_too_few_connections_is_refused_at_start():
    with pytest.raises(SettingsError, match="COPYDESK_REDIS_MAX_CONNECTIONS"):
        Settings.from_env({"COPYDESK_MAX_STREAMS": "200", "COPYDESK_REDIS_MAX_CONNECTIONS": "100"})
    with pytest.raises(SettingsError, match="COPYDESK_REDIS_SOCKET_TIMEOUT"):
        Settings.from_env({"COPYDESK_REDIS_SOCKET_TIMEOUT": "1"})
    chosen = Settings.from_env(
        {
            "COPYDESK_REDIS_SOCKET_TIMEOUT": "30",
            "COPYDESK_REDIS_CONNECT_TIMEOUT": "3",
            "COPYDESK_REDIS_MAX_CONNECTIONS": "500",
        }
    )
    assert (chosen.redis_socket_timeout, chosen.redis_connect_timeout, chosen.redis_max_connections) == (30, 3, 500)


@pytest.mark.parametrize("worker_class", ["gevent", "gthread"])
def test_one_connection_gets_every_event_of_a_slow_run_and_keep_alives_between(
    worker_class, stack_factory, standin, tmp_path
):
    stack = stack_factory(**PROVIDERS["openai"](standin), sse_keepalive_seconds=1, redis_socket_timeout=2)
    write, finish = write_then_finish()
    standin.script(Hang(GAP), write, Hang(GAP), finish)
    port = free_port()
    env = {**stack.env(), "COPYDESK_BASE_URL": f"http://127.0.0.1:{port}"}
    auth = {"Authorization": f"Bearer {stack.key}"}
    # The worker, too, runs with the 2 s read time-out: its dequeue must not trip over it. It is started first, so
    # that it starts up while the web does; the stream is open long before its run ends (two gaps of GAP s).
    with (
        WorkerProcess(env, tmp_path / "worker.log") as worker,
        WebServer(env, port, tmp_path / "web.log", worker_class=worker_class, workers=1) as web,
    ):
        job = requests.post(
            f"{web.url}/v2/agent/{stack.project_id}/job", json={"prompt": "FAQ"}, headers=auth, timeout=10
        ).json()
        records: list[dict] = []
        with requests.get(
            f"{web.url}/v2/agent/{stack.project_id}/job/{job['id']}/events", headers=auth, stream=True, timeout=30
        ) as response:
            assert response.status_code == 200
            reader = threading.Thread(target=read_sse, args=(response, time.monotonic() + 90, records), daemon=True)
            reader.start()
            reader.join(timeout=90)
            assert not reader.is_alive(), f"the stream did not end; worker log:\n{worker.log()}"
        # Killed, not stopped: how the web stops is not this test's subject (test_web_server's is), and gunicorn's
        # graceful stop takes seconds of 1 s ticks. Its log is written line by line, so it is complete either way.
        web.crash()
        log = web.log()
    events = [r for r in records if "event" in r]
    assert [r["event"] for r in events] == STATE_TYPES, log[-3000:]
    assert [r["id"] for r in events] == [e["id"] for e in page(stack, job["id"])]
    # Keep-alives while the model thought, between events.
    between = records[records.index(events[0]) : records.index(events[-1])]
    assert sum(1 for r in between if r.get("comment") == "keep-alive") >= 2
    assert "Redis unreachable" not in log


def test_a_redis_outage_ends_the_stream_and_the_client_is_told_to_come_back(stack_factory, tmp_path):
    with contextlib.ExitStack() as redis_running:
        url = redis_running.enter_context(running_redis(tmp_path / "redis", *NO_PERSISTENCE))
        stack = stack_factory(redis_url=f"{url}/0", sse_keepalive_seconds=1)
        job = stack.create().json()  # no worker: it stays active, so only the outage can end its stream
        records: list[dict] = []
        with requests.get(
            f"{stack.url}/v2/agent/{stack.project_id}/job/{job['id']}/events",
            headers={"Authorization": f"Bearer {stack.key}"},
            stream=True,
            timeout=30,
        ) as response:
            reader = threading.Thread(target=read_sse, args=(response, time.monotonic() + 60, records), daemon=True)
            reader.start()
            deadline = time.monotonic() + 10
            while {"comment": "keep-alive"} not in records:
                assert time.monotonic() < deadline, "no keep-alive before the outage"
                time.sleep(0.1)
            redis_running.close()  # Redis goes away
            reader.join(timeout=30)
            assert not reader.is_alive(), "the stream outlived Redis"
    assert records[0] == {"retry": "1000"}  # an EventSource comes back after a second, with Last-Event-ID
    assert [r["event"] for r in records if "event" in r] == ["job.created"]
