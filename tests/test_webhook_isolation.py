"""Webhook deliveries cannot hurt other callers: a whole-attempt deadline, endpoints per project capped, re-sends
rate-limited, and attempts made apart from runs with per-account fairness."""

import concurrent.futures
import time

import pytest
import requests

from service.webhooks.addresses import vet_url
from service.webhooks.transport import post
from tests.slow_receivers import SlowReceiver
from tests.test_webhooks import register


@pytest.mark.parametrize("drip_every", [None, 0.3], ids=["tarpit", "dripping"])
def test_an_attempt_ends_at_its_deadline_however_the_receiver_stalls(drip_every):
    with SlowReceiver(drip_every) as slow:
        started = time.monotonic()
        with pytest.raises(requests.exceptions.Timeout, match="deadline of 1.5 s"):
            post(vet_url(slow.url, allow_private=True), b"{}", {"Content-Type": "application/json"}, timeout=1.5)
        assert 1.4 < time.monotonic() - started < 3  # each drip is well inside a per-read time-out of 1.5 s


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
    from tests.test_webhooks import _fan_out, deliveries

    _fan_out(stack)

    def resend(endpoint: dict) -> requests.Response:
        [delivery] = deliveries(stack, endpoint["id"])
        return stack.api.post(f"/v2/agent/{stack.project_id}/webhooks/{endpoint['id']}/deliveries/{delivery['id']}"
                              "/resend")

    first = [resend(endpoints[0]).status_code for _ in range(4)]
    assert first == [202, 202, 202, 429]  # the endpoint's 3 a minute
    second = [resend(endpoints[1]) for _ in range(3)]
    assert [r.status_code for r in second] == [202, 202, 429]  # the account's 5 a minute, over both endpoints
    assert second[-1].json()["code"] == "rate_limited" and 0 < int(second[-1].headers["Retry-After"]) <= 60
