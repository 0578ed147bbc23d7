"""Webhook deliveries cannot hurt other callers: a whole-attempt deadline, endpoints per project capped, re-sends
rate-limited, and attempts made apart from runs with per-account fairness."""

import concurrent.futures
import socket
import threading
import time

import pytest
import requests

from service.outbound.addresses import vet_url
from service.outbound.endpoints import RESEND_WINDOW_SECONDS
from service.outbound.transport import post
from tests.flow_scripts import FAQ, finish
from tests.harness import LiveServer, wait_until, within_one_window
from tests.slow_receivers import SlowReceiver
from tests.webhook_receivers import RebindingResolver, Receiver, register, self_signed
from tests.worker_processes import WorkerProcess


@pytest.mark.parametrize("drip_every", [None, 0.3], ids=["tarpit", "dripping"])
def test_an_attempt_ends_at_its_deadline_however_the_receiver_stalls(drip_every):
    with SlowReceiver(drip_every) as slow:
        started = time.monotonic()
        with pytest.raises(requests.exceptions.Timeout, match="deadline of 1.5 s"):
            post(vet_url(slow.url, allow_private=True), b"{}", {"Content-Type": "application/json"}, timeout=1.5)
        # Each drip is well inside a per-read time-out of 1.5 s; the upper bound is ten deadlines (without one the
        # attempt never ends), so a busy machine cannot miss it.
        assert 1.4 < time.monotonic() - started < 15


def test_an_https_attempt_ends_at_its_deadline_while_the_receiver_drips_its_headers(tmp_path):
    context, bundle = self_signed(tmp_path, "drip.test")
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip() -> None:
        conn, _ = server.accept()
        with context.wrap_socket(conn, server_side=True) as tls:
            tls.recv(65536)
            tls.sendall(b"HTTP/1.1 200 OK\r\n")
            while not stop.wait(0.3):
                try:
                    tls.sendall(b"X")
                except OSError:
                    return  # the client cut the connection

    dripping = threading.Thread(target=drip, daemon=True)
    dripping.start()
    target = vet_url(
        f"https://drip.test:{server.getsockname()[1]}/hook",
        allow_private=True,
        resolver=RebindingResolver("drip.test", first="127.0.0.1"),
    )
    started = time.monotonic()
    try:
        with pytest.raises(requests.exceptions.Timeout, match="deadline of 1.5 s"):
            post(target, b"{}", {"Content-Type": "application/json"}, timeout=1.5, verify=bundle)
        assert time.monotonic() - started < 15  # ten deadlines: only an attempt that never ends misses it
    finally:
        stop.set()
        dripping.join(timeout=5)
        server.close()


def test_a_project_has_at_most_its_cap_of_endpoints_even_when_asked_at_once(stack_factory):
    stack = stack_factory(webhook_allow_private=True, webhook_max_endpoints=3)
    url = f"/v2/agent/{stack.project_id}/webhooks"
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: stack.api.post(url, json={"url": f"http://127.0.0.1:9/{n}"}), range(12)))
    assert sorted(a.status_code for a in answers) == [201] * 3 + [409] * 9
    refused = next(a for a in answers if a.status_code == 409).json()
    assert refused["code"] == "webhook_limit_reached" and "COPYDESK_WEBHOOK_MAX_ENDPOINTS" in refused["detail"]
    assert len(stack.api.get(url).json()["webhooks"]) == 3


def test_resends_are_rate_limited_per_endpoint_and_per_account(stack_factory):
    stack = stack_factory(webhook_allow_private=True, webhook_resends_per_endpoint=3, webhook_resends_per_account=5)
    endpoints = [register(stack, f"http://127.0.0.1:9/{n}", events=["job.created"]) for n in range(2)]
    stack.create()
    from tests.webhook_receivers import _fan_out, deliveries

    _fan_out(stack)

    def resend(endpoint: dict) -> requests.Response:
        [delivery] = deliveries(stack, endpoint["id"])
        return stack.api.post(
            f"/v2/agent/{stack.project_id}/webhooks/{endpoint['id']}/deliveries/{delivery['id']}/resend"
        )

    within_one_window(RESEND_WINDOW_SECONDS, needed=20)  # a new minute would start the count again
    first = [resend(endpoints[0]).status_code for _ in range(4)]
    assert first == [202, 202, 202, 429]  # the endpoint's 3 a minute
    second = [resend(endpoints[1]) for _ in range(3)]
    assert [r.status_code for r in second] == [202, 202, 429]  # the account's 5 a minute, over both endpoints
    assert second[-1].json()["code"] == "rate_limited" and 0 < int(second[-1].headers["Retry-After"]) <= 60


def _quiet_round(stack, hook: Receiver) -> dict[str, float]:
    """Create a job of the quiet account; seconds until it completed and until its two deliveries arrived."""
    started = time.monotonic()
    job = stack.create("Add an FAQ").json()
    wait_until(lambda: stack.job(job["id"])["status"] == "completed", 60, "the quiet account's job", interval=0.1)
    done = time.monotonic() - started

    def arrived(kind: str) -> float | None:
        return next(
            (
                r["at"] - started
                for r in list(hook.received)
                if r["body"]["type"] == kind and r["body"]["data"]["id"] == job["id"]
            ),
            None,
        )

    wait_until(lambda: arrived("job.completed") is not None, 60, "the quiet account's deliveries", interval=0.1)
    return {"job": done, "job.created": arrived("job.created") or 0.0, "job.completed": arrived("job.completed") or 0.0}


def _noisy_account(stack, tarpit: SlowReceiver, dripper: SlowReceiver) -> tuple[dict, list[tuple[str, str]]]:
    """A second account's project with as many endpoints as it may have, every one a tarpit or a dripping
    receiver; returns its key's headers and (project, endpoint) pairs."""
    services = stack.ctx.services
    project = services.projects.add(
        account="noisy",
        host="local",
        repository="/nowhere/noisy.git",
        web_url="http://example.invalid/noisy",
        ref="main",
    )
    _key, plaintext = services.keys.create(account="noisy", name="noisy", host="local")
    headers = {"Authorization": f"Bearer {plaintext}"}
    hooks = []
    for number in range(stack.settings.webhook_max_endpoints):
        target = tarpit if number % 2 else dripper
        made = stack.api.post(
            f"/v2/agent/{project.id}/webhooks", json={"url": f"{target.url}/{number}"}, headers=headers
        )
        assert made.status_code == 201, made.text
        hooks.append((project.id, made.json()["id"]))
    return headers, hooks


def test_one_accounts_dead_and_dripping_endpoints_and_resends_leave_another_accounts_runs_and_deliveries_alone(
    stack_factory, tmp_path
):
    stack = stack_factory(webhook_allow_private=True)
    quiet = Receiver()
    with LiveServer(quiet) as served, SlowReceiver() as tarpit, SlowReceiver(drip_every=1.0) as dripper:
        quiet.url = f"{served.url}/hooks"
        register(stack, quiet.url, events=["job.created", "job.completed"])
        stack.script([FAQ, finish()])
        # One worker process: runs and deliveries of both accounts share it. Attempts may take 4 s each.
        env = {**stack.env(), "COPYDESK_WEBHOOK_TIMEOUT": "4"}
        with WorkerProcess(env, tmp_path / "worker.log") as worker:
            _quiet_round(stack, quiet)  # the first run makes the repository's mirror
            alone = _quiet_round(stack, quiet)

            headers, hooks = _noisy_account(stack, tarpit, dripper)
            for number in range(3):  # its jobs fail at once (no repository), each event a delivery per endpoint
                stack.api.post(f"/v2/agent/{hooks[0][0]}/job", json={"prompt": f"noise {number}"}, headers=headers)

            # Wait for a delivery on every endpoint: they are logged one by one as the worker gets to them.
            def every_log():
                logs = [
                    stack.api.get(f"/v2/agent/{project_id}/webhooks/{hook_id}/deliveries", headers=headers).json()[
                        "deliveries"
                    ]
                    for project_id, hook_id in hooks
                ]
                return logs if all(logs) else None

            logs = wait_until(every_log, 30, "a delivery logged on every one of the noisy account's endpoints")
            answers = [
                stack.api.post(
                    f"/v2/agent/{project_id}/webhooks/{hook_id}/deliveries/{log[0]['id']}/resend", headers=headers
                ).status_code
                for _ in range(6)
                for (project_id, hook_id), log in zip(hooks, logs, strict=True)
            ]
            assert answers.count(202) == stack.settings.webhook_resends_per_account and set(answers) == {202, 429}
            wait_until(lambda: tarpit.accepted >= 2 and dripper.accepted >= 2, 30, "the noisy attempts to start")

            loaded = _quiet_round(stack, quiet)
            # Cut answers are logged (urllib3 warns of the headers it got), but nothing failed.
            assert worker.alive() and " ERROR " not in worker.log()
    slack = {name: 3.0 + 2 * alone[name] for name in alone}  # generous: a broken isolation costs 4 s an attempt
    print(f"the quiet account alone: {alone}; beside the noisy one: {loaded}")
    assert all(loaded[name] <= alone[name] + slack[name] for name in alone), (alone, loaded)


def test_lanes_hold_one_account_to_its_share_of_threads_and_serve_the_others_meanwhile(redis_client):
    from service.outbound.lanes import DeliveryLanes
    from service.outbound.queue import Attempt, DeliveryQueue

    queue = DeliveryQueue(redis_client, lambda delivery_id: delivery_id.split("-")[0])
    for number in range(10):
        queue.now(f"slow-{number}", 1)
    for number in range(3):
        queue.now(f"quick-{number}", 1)
    release, made, lock = threading.Event(), [], threading.Lock()
    running = {"slow": 0, "most": 0}

    def make(attempt: Attempt) -> None:
        lane = attempt.delivery_id.split("-")[0]
        with lock:
            made.append(attempt.delivery_id)
            if lane == "slow":
                running["slow"] += 1
                running["most"] = max(running["most"], running["slow"])
        if lane == "slow":
            release.wait(30)  # a receiver that does not answer until the test lets it
            with lock:
                running["slow"] -= 1

    lanes = DeliveryLanes(queue, make, threads=4, per_lane=2, deadline_seconds=30)

    def served(condition) -> bool:
        lanes.run_once()  # one pass of the worker's loop
        return condition()

    try:
        wait_until(
            lambda: served(lambda: len([m for m in made if m.startswith("quick")]) == 3),
            10,
            "the quick account's attempts while the slow one's hang",
        )
        assert running["most"] == 2 and len([m for m in made if m.startswith("slow")]) == 2
        release.set()
        wait_until(lambda: served(lambda: len(made) == 13 and not lanes.busy), 10, "every attempt")
    finally:
        release.set()
        lanes.close()
    assert running["most"] == 2 and sorted(made) == sorted({*made}) and queue.lanes() == []


def test_attempts_older_versions_queued_on_rq_are_moved_onto_the_lanes(stack_factory):
    import rq

    from bot.worker import fanout
    from service.outbound.queue import LEGACY_UNSENT
    from service.queues import legacy_webhooks_queue
    from tests.harness import drain_queues

    stack = stack_factory(webhook_allow_private=True)
    endpoint = register(stack, "http://127.0.0.1:9/hook", events=["job.created"])
    stack.create()
    fanout(stack.ctx).run_once(block_ms=100)
    services = stack.ctx.services
    [(first, _due)] = services.deliveries.waiting("local:local")
    services.deliveries.done("local:local", first)
    legacy = rq.Queue(legacy_webhooks_queue(stack.settings.queue_name), connection=services.redis)
    legacy.enqueue("bot.tasks.deliver_webhook", first.delivery_id, 2, False)
    drain_queues(services.redis, stack.settings.queue_name)
    [(moved, _due)] = services.deliveries.waiting("local:local")
    assert (moved.delivery_id, moved.number, moved.manual) == (first.delivery_id, 2, False)
    assert endpoint["id"] == services.webhooks.delivery(first.delivery_id).endpoint_id

    # A first attempt they had not made yet is moved onto the lanes too.
    services.deliveries.done("local:local", moved)
    services.redis.zadd(LEGACY_UNSENT, {first.delivery_id: 0})
    assert services.deliveries.adopt_legacy() == 1 and services.redis.exists(LEGACY_UNSENT) == 0
    [(adopted, _due)] = services.deliveries.waiting("local:local")
    assert (adopted.delivery_id, adopted.number, adopted.manual) == (first.delivery_id, 1, False)
