"""Webhooks to API callers: endpoints, Standard Webhooks signatures checked by the reference library, retries
through RQ's scheduler in a real worker, the delivery log, re-send, rotation, disabling, and the address guard."""

import threading
import time
from datetime import timedelta

import pytest
import requests

from service import metrics
from service.clock import iso, now
from service.models import Delivery, DeliveryStatus
from service.outbound.addresses import UnsafeUrl, check_url, vet_url
from service.outbound.transport import post
from service.services import webhook_sender
from tests.conftest import free_port
from tests.flow_scripts import FAQ, finish
from tests.harness import LiveServer, deliver_webhooks, wait_until
from tests.metrics_text import recorded
from tests.webhook_receivers import RebindingResolver, Receiver, _fan_out, deliveries, register, self_signed
from tests.worker_processes import WorkerProcess


@pytest.fixture
def receiver():
    made = []

    def make(fail_first: int = 0, **server_options):
        handler = Receiver(fail_first)
        server = LiveServer(handler, **server_options).__enter__()
        made.append(server)
        handler.url, handler.port = f"{server.url}/hooks", server.port
        return handler

    yield make
    for server in made:
        server.__exit__(None, None, None)


@pytest.fixture
def hooked_stack(stack_factory):
    return stack_factory(webhook_allow_private=True, webhook_retry_seconds=1)


def test_deliveries_are_signed_retried_with_backoff_logged_and_can_be_sent_again(hooked_stack, receiver, tmp_path):
    stack = hooked_stack
    hook = receiver(fail_first=2)
    endpoint = register(stack, hook.url, events=["job.created", "job.completed"], description="CI")
    hook.secrets.append(endpoint["secret"])
    assert endpoint["secret"].startswith("whsec_")
    assert "secret" not in stack.api.get(f"/v2/agent/{stack.project_id}/webhooks").json()["webhooks"][0]
    stack.script([FAQ, finish()])
    with WorkerProcess(stack.env(), tmp_path / "worker.log"):
        job = stack.create().json()
        done = wait_until(
            lambda: len([d for d in deliveries(stack, endpoint["id"]) if d["status"] == "succeeded"]) == 2,
            60,
            "both deliveries to succeed",
            interval=0.2,
        )
        log = deliveries(stack, endpoint["id"])
        assert {d["type"] for d in log} == {"job.created", "job.completed"} and done
        # The receiver failed the first two attempts (of whichever deliveries came first) on purpose.
        assert sorted(d["attempts"] for d in log) in ([1, 3], [2, 2])
        assert all(d["responseStatus"] == 200 and d["latencyMs"] >= 0 for d in log)
        assert all(r["verified"] == [endpoint["secret"]] for r in hook.received), "a signature did not verify"
        retried = [
            r
            for r in hook.received
            if r["headers"]["webhook-id"] == log[0]["id"] or r["headers"]["webhook-id"] == log[1]["id"]
        ]
        assert len(retried) == 4
        completed = next(r["body"] for r in hook.received if r["body"]["type"] == "job.completed")
        assert completed["data"]["id"] == job["id"] and completed["data"]["status"] == "completed"
        assert set(completed) == {"type", "timestamp", "data"}

        # A re-send is one more attempt with the same webhook-id, made by the worker.
        first = log[-1]
        resent = stack.api.post(
            f"/v2/agent/{stack.project_id}/webhooks/{endpoint['id']}/deliveries/{first['id']}/resend"
        )
        assert resent.status_code == 202
        wait_until(
            lambda: (
                next(d for d in deliveries(stack, endpoint["id"]) if d["id"] == first["id"])["attempts"]
                == first["attempts"] + 1
            ),
            30,
            "the re-send",
            interval=0.2,
        )
        assert hook.received[-1]["headers"]["webhook-id"] == first["id"] and hook.received[-1]["verified"]

        # After a rotation the new secret verifies; the old one still signs for a while (a second signature).
        rotated = stack.api.post(f"/v2/agent/{stack.project_id}/webhooks/{endpoint['id']}/rotate").json()
        assert rotated["secret"] != endpoint["secret"]
        hook.secrets.append(rotated["secret"])
        stack.message(job["id"], "Anything else?")
        wait_until(lambda: len(hook.received) >= 6, 60, "deliveries of the follow-up", interval=0.2)
        assert set(hook.received[-1]["verified"]) == {endpoint["secret"], rotated["secret"]}


def test_secrets_are_sealed_at_rest(hooked_stack, receiver):
    endpoint = register(hooked_stack, receiver().url)
    client = hooked_stack.ctx.services.redis
    secret_body = endpoint["secret"].removeprefix("whsec_").encode()
    for key in client.keys("*"):
        if client.type(key) == b"string":
            assert secret_body not in client.get(key)


def test_an_endpoint_failing_for_five_days_is_disabled_with_the_reason(hooked_stack, receiver):
    stack = hooked_stack
    hook = receiver(fail_first=100)
    endpoint = register(stack, hook.url, events=["job.created"])
    services = stack.ctx.services
    record = services.webhooks.find(endpoint["id"])
    record.failing_since = iso(now() - timedelta(days=5, minutes=1))
    services.webhooks._save(record)
    stack.create()
    fanned = _fan_out(stack)
    assert fanned == 1
    after = stack.api.get(f"/v2/agent/{stack.project_id}/webhooks/{endpoint['id']}").json()
    assert after["enabled"] is False and "5 days" in after["disabledReason"] and "HTTP 500" in after["disabledReason"]
    [delivery] = deliveries(stack, endpoint["id"])
    assert delivery["status"] == "failed" and delivery["attempts"] == 1 and delivery["nextAttemptAt"] is None
    # A disabled endpoint gets no new deliveries, until it is enabled again.
    stack.create()
    _fan_out(stack)
    assert len(deliveries(stack, endpoint["id"])) == 1
    enabled = stack.api.post(f"/v2/agent/{stack.project_id}/webhooks/{endpoint['id']}/enable").json()
    assert enabled["enabled"] is True and enabled["disabledReason"] is None


def test_a_first_attempt_its_taker_never_made_is_made_by_another(hooked_stack, receiver):
    from bot.worker import fanout

    stack = hooked_stack
    hook = receiver()
    endpoint = register(stack, hook.url, events=["job.created"])
    hook.secrets.append(endpoint["secret"])
    stack.create()
    services = stack.ctx.services
    assert fanout(stack.ctx).run_once(block_ms=100) == 1
    # A worker takes the first attempt off its lane and dies before making it.
    [lane] = services.deliveries.lanes()
    taken_at = time.time()
    [taken] = services.deliveries.take(lane, 10, lease_seconds=0.5, now=taken_at)
    [unsent] = deliveries(stack, endpoint["id"])
    assert (taken.delivery_id, taken.number, unsent["attempts"], hook.received) == (unsent["id"], 1, 0, [])
    # Held while its taker may be at it: asked as of a moment inside the lease, however long the lines above took.
    assert services.deliveries.take(lane, 10, lease_seconds=0.5, now=taken_at + 0.4) == []
    time.sleep(max(0.0, taken_at + 0.5 - time.time()) + 0.05)  # the lease's end: a moment in time, not an event
    assert _fan_out(stack) == 0  # no new event, but the attempt whose lease ended is made
    wait_until(lambda: hook.received, 10, "the attempt its taker never made", interval=0.2)
    assert hook.received[0]["headers"]["webhook-id"] == unsent["id"] and hook.received[0]["verified"]
    assert services.deliveries.lanes() == []  # nothing left waiting


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/x",
        "http://localhost/x",
        "http://10.1.2.3/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/x",
        "http://[::ffff:127.0.0.1]/x",
        "http://0.0.0.0/x",
        "http://192.168.0.1/x",
        "http://100.64.0.1/x",
        "http://100.127.255.254/x",
        "http://0.1.2.3/x",
        "http://224.0.0.251/x",
        "http://239.1.2.3/x",
        "http://240.0.0.1/x",
        "http://198.18.0.1/x",
        "http://[::ffff:100.64.0.1]/x",
        "http://[::ffff:10.0.0.1]/x",
        "http://[2002:7f00:1::]/x",
        "http://[64:ff9b::a00:1]/x",
        "http://[ff02::1]/x",
        "http://[fc00::1]/x",
    ],
)
def test_addresses_that_are_not_public_are_refused_unless_the_operator_allows_them(url):
    with pytest.raises(UnsafeUrl):
        check_url(url, allow_private=False)
    check_url(url, allow_private=True)


@pytest.mark.parametrize(
    "url", ["http://93.184.215.14/x", "https://[2606:4700:4700::1111]/x", "http://[64:ff9b::5db8:d70e]/x"]
)
def test_public_addresses_pass(url):
    check_url(url, allow_private=False)


def use_resolver(stack, resolver: RebindingResolver, **overrides) -> None:
    """Make the stack's webhook sender ask `resolver` for names (and take `overrides` of its settings)."""
    services = stack.ctx.services
    services.sender = webhook_sender(
        stack.ctx.settings.with_overrides(**overrides), services.webhooks, services.deliveries, resolver=resolver
    )


def test_a_delivery_connects_to_the_address_it_vetted_not_to_a_second_answer_of_the_name(hooked_stack, receiver):
    stack = hooked_stack
    port, name = free_port(), "hooks.rebind.test"
    vetted, rebound = receiver(host="127.0.0.1", port=port), receiver(host="127.0.0.2", port=port)
    endpoint = register(stack, f"http://{name}:{port}/hooks", events=["job.created"])
    vetted.secrets.append(endpoint["secret"])
    resolver = RebindingResolver(name, first="127.0.0.1", then="127.0.0.2")
    use_resolver(stack, resolver)
    stack.create()
    assert _fan_out(stack) == 1
    [delivery] = deliveries(stack, endpoint["id"])
    assert delivery["status"] == "succeeded", delivery
    assert rebound.received == [], "the request went to the name's second answer"
    [got] = vetted.received
    assert got["verified"] == [endpoint["secret"]] and got["headers"]["host"] == f"{name}:{port}"
    assert resolver.questions == 1


def test_a_delivery_to_a_name_that_resolves_to_a_shared_cgnat_address_is_refused(hooked_stack, receiver):
    stack = hooked_stack
    hook = receiver()
    endpoint = register(stack, f"http://hooks.cgnat.test:{hook.port}/hooks", events=["job.created"])
    use_resolver(stack, RebindingResolver("hooks.cgnat.test", first="100.64.0.1"), webhook_allow_private=False)
    stack.create()
    refused = recorded(metrics.WEBHOOK_DELIVERIES, "copydesk_webhook_deliveries_total", result="refused")
    _fan_out(stack)
    [delivery] = deliveries(stack, endpoint["id"])
    assert delivery["status"] == DeliveryStatus.PENDING.value and delivery["error"].startswith("refused")
    assert recorded(metrics.WEBHOOK_DELIVERIES, "copydesk_webhook_deliveries_total", result="refused") == refused + 1
    assert "100.64.0.1" in delivery["error"] and hook.received == []


def test_an_https_delivery_to_the_vetted_address_names_and_verifies_the_host(tmp_path, receiver):
    name = "hooks.pinned.test"
    context, bundle = self_signed(tmp_path, name)
    hook = receiver(ssl_context=context)
    port = hook.port
    target = vet_url(
        f"https://{name}:{port}/hooks",
        allow_private=True,
        resolver=RebindingResolver(name, first="127.0.0.1", then="127.0.0.2"),
    )
    assert post(target, b"{}", {"Content-Type": "application/json"}, timeout=10, verify=bundle) == 200
    assert context.sni_names == [name]  # type: ignore[attr-defined]
    assert hook.received[0]["headers"]["host"] == f"{name}:{port}"
    # The certificate is checked against the URL's name, not the address connected to.
    other = vet_url(
        f"https://other.pinned.test:{port}/hooks",
        allow_private=True,
        resolver=RebindingResolver("other.pinned.test", first="127.0.0.1"),
    )
    with pytest.raises(requests.exceptions.SSLError):
        post(other, b"{}", {"Content-Type": "application/json"}, timeout=10, verify=bundle)
    assert len(hook.received) == 1


def test_registration_refuses_bad_and_internal_urls(stack):
    base = f"/v2/agent/{stack.project_id}/webhooks"
    for body, field in (
        ({"url": "http://127.0.0.1:8000/hook"}, "url"),
        ({"url": "ftp://example.com/"}, "url"),
        ({"url": "http://user:pw@example.com/"}, "url"),
        ({}, "url"),
        ({"url": "https://example.com/", "events": ["job.exploded"]}, "events"),
        ({"url": "https://example.com/", "colour": "red"}, "colour"),
    ):
        response = stack.api.post(base, json=body)
        assert response.status_code == 400 and response.json()["field"] == field, (body, response.text)
    assert stack.api.get(base).json()["webhooks"] == []


def test_a_delivery_to_a_name_that_now_resolves_inside_is_refused(hooked_stack, receiver):
    stack = hooked_stack
    hook = receiver()
    endpoint = register(stack, hook.url, events=["job.created"])
    # The worker runs with the guard on, although registration (here) allowed the address.
    stack.ctx.services.sender._allow_private = False
    stack.create()
    _fan_out(stack)
    [delivery] = deliveries(stack, endpoint["id"])
    assert delivery["status"] == DeliveryStatus.PENDING.value and delivery["error"].startswith("refused")
    assert hook.received == []


def test_webhook_endpoints_are_scoped_to_the_project_and_can_be_deleted(hooked_stack, receiver, make_repo):
    stack = hooked_stack
    endpoint = register(stack, receiver().url)
    services = stack.ctx.services
    other = stack.ctx.local.register(services.projects, path=make_repo({"a.md": "a"}, name="other"), ref="main")
    assert stack.api.get(f"/v2/agent/{other.id}/webhooks/{endpoint['id']}").json()["code"] == "webhook_not_found"
    assert stack.api.delete(f"/v2/agent/{stack.project_id}/webhooks/{endpoint['id']}").status_code == 204
    assert stack.api.get(f"/v2/agent/{stack.project_id}/webhooks/{endpoint['id']}").status_code == 404
    stack.create()
    assert services.redis.xlen("cd:events:outbox") == 0  # no endpoint left: nothing to fan out


def _waiting(stack) -> list:
    """The attempts waiting in the project's account's lane, soonest first."""
    return [attempt for attempt, _due in stack.ctx.services.deliveries.waiting("local:local")]


def test_a_resend_leaves_the_retry_due_next_to_be_made(stack_factory, receiver):
    stack = stack_factory(webhook_allow_private=True, webhook_retry_seconds=60)
    hook = receiver(fail_first=2)
    endpoint = register(stack, hook.url, events=["job.created"])
    hook.secrets.append(endpoint["secret"])
    stack.create()
    _fan_out(stack)  # the first attempt fails; the retry, attempt 2, waits in the account's lane
    [delivery] = deliveries(stack, endpoint["id"])
    assert (delivery["status"], delivery["attempts"]) == ("pending", 1)
    [retry] = _waiting(stack)
    assert (retry.delivery_id, retry.number, retry.manual) == (delivery["id"], 2, False)
    assert stack.ctx.services.deliveries.lanes() == []  # nothing due: the lane is not even looked at until then

    base = f"/v2/agent/{stack.project_id}/webhooks/{endpoint['id']}/deliveries/{delivery['id']}"
    assert stack.api.post(f"{base}/resend").status_code == 202
    deliver_webhooks(stack.ctx)
    assert [r["status"] for r in hook.received] == [500, 500]  # the re-send was made, and failed too
    [after] = deliveries(stack, endpoint["id"])
    assert (after["status"], after["attempts"], after["nextAttemptAt"]) == ("pending", 2, delivery["nextAttemptAt"])
    assert _waiting(stack) == [retry]

    # The retry, made as the lanes would when it is due: its attempt number is still its own, so it is made.
    assert stack.ctx.services.sender.attempt(retry.delivery_id, retry.number, manual=retry.manual) is not None
    assert [r["status"] for r in hook.received] == [500, 500, 200]
    assert all(r["verified"] and r["headers"]["webhook-id"] == delivery["id"] for r in hook.received)
    [done] = deliveries(stack, endpoint["id"])
    assert (done["status"], done["attempts"], done["nextAttemptAt"]) == ("succeeded", 3, None)


def test_a_retry_due_after_a_resend_got_through_is_not_sent_again(stack_factory, receiver):
    stack = stack_factory(webhook_allow_private=True, webhook_retry_seconds=60)
    hook = receiver(fail_first=1)
    endpoint = register(stack, hook.url, events=["job.created"])
    stack.create()
    _fan_out(stack)
    [delivery] = deliveries(stack, endpoint["id"])
    [retry] = _waiting(stack)
    base = f"/v2/agent/{stack.project_id}/webhooks/{endpoint['id']}/deliveries/{delivery['id']}"
    assert stack.api.post(f"{base}/resend").status_code == 202
    assert stack.api.post(f"{base}/resend").status_code == 202  # each re-send is one more attempt
    deliver_webhooks(stack.ctx)
    assert [r["status"] for r in hook.received] == [500, 200, 200]
    assert stack.ctx.services.sender.attempt(retry.delivery_id, retry.number) is None
    assert len(hook.received) == 3
    [done] = deliveries(stack, endpoint["id"])
    assert (done["status"], done["attempts"], done["nextAttemptAt"]) == ("succeeded", 3, None)


def test_attempts_recorded_meanwhile_never_undo_a_rotation_or_each_other(hooked_stack):
    store = hooked_stack.ctx.services.webhooks
    project_id = hooked_stack.project_id
    endpoint = store.add(
        project_id, url="https://example.com/hook", sealed_secret="secret-0", description="", events=[]
    )
    delivery = Delivery(
        id="dlv_race",
        endpoint_id=endpoint.id,
        job_id="job_race",
        event_id="1-0",
        event_type="job.created",
        payload="{}",
        created_at=iso(now()),
    )
    assert store.add_delivery(delivery)
    stop, recorded = threading.Event(), []

    def record() -> None:
        count = 0
        while not stop.is_set():
            # Alternating outcomes rewrite the endpoint's failure record on every attempt.
            ok = count % 2 == 0
            store.record_attempt(
                delivery,
                ok=ok,
                response_status=200 if ok else 500,
                latency_ms=1,
                error=None if ok else "HTTP 500",
                next_attempt_at=None,
            )
            count += 1
        recorded.append(count)

    senders = [threading.Thread(target=record) for _ in range(2)]
    for sender in senders:
        sender.start()
    lost, current = [], "secret-0"
    try:
        for number in range(1, 151):
            rotated = store.rotate(project_id, endpoint.id, f"secret-{number}")
            if rotated.sealed_previous != current:  # the secret before this rotation was overwritten meanwhile
                lost.append(number - 1)
            current = rotated.sealed_secret
    finally:
        stop.set()
        for sender in senders:
            sender.join(timeout=30)
    assert lost == [], f"rotations undone by a concurrent attempt: {lost[:10]}"
    assert store.find(endpoint.id).sealed_secret == "secret-150"
    assert store.delivery(delivery.id).attempts == sum(recorded) > 0
