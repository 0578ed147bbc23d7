"""Billable tokens: cached input at the vendor's price, one rule for run limits, job budgets and monthly caps."""

from service import billing
from service.agent.model import Usage
from service.store.usage import UsageLedger


def test_cached_input_is_weighted_by_the_vendors_price_and_rounded_up():
    assert (
        billing.billable(10_000, 200, cache_read=8_000, cache_write=1_000, rates=billing.ANTHROPIC)
        == 1_000 + 800 + 1_250 + 200
    )
    assert billing.billable(10_000, 200, cache_read=8_000, rates=billing.OPENAI) == 2_000 + 4_000 + 200
    assert billing.billable(10, 0, cache_read=1, rates=billing.ANTHROPIC) == 9 + 1  # 0.1 of a token bills one
    assert billing.billable(10_000, 200) == 10_200  # no cache, no discount


def test_usage_adds_up_every_field_and_defaults_to_billing_in_full():
    one = Usage.billed(5_000, 100, cache_read=4_000, rates=billing.OPENAI)
    two = Usage(300, 20)
    assert two.billable_tokens == 320
    total = one + two
    assert total.to_api() == {
        "inputTokens": 5_300,
        "outputTokens": 120,
        "cacheReadTokens": 4_000,
        "cacheWriteTokens": 0,
        "billableTokens": 1_000 + 2_000 + 100 + 320,
    }


def test_records_from_before_caching_was_counted_bill_in_full():
    old = {"inputTokens": 700, "outputTokens": 300}
    assert billing.billable_of(old) == 1_000 and billing.billable_of(None) == 0
    new = Usage.billed(2_000, 50, cache_read=1_000, rates=billing.ANTHROPIC).to_api()
    assert billing.add_records(old, new) == {
        "inputTokens": 2_700,
        "outputTokens": 350,
        "cacheReadTokens": 1_000,
        "cacheWriteTokens": 0,
        "billableTokens": 1_000 + 1_000 + 100 + 50,
    }


def test_a_months_total_bills_old_runs_in_full_and_cached_input_at_its_price(redis_client):
    ledger = UsageLedger(redis_client)
    ledger.add("local", "acme", "key_1", {"inputTokens": 700, "outputTokens": 300})  # recorded before caching
    run = Usage.billed(10_000, 100, cache_read=9_000, cache_write=500, rates=billing.ANTHROPIC)
    ledger.add("local", "acme", "key_1", run.to_api())
    for month in (ledger.account("local", "acme"), ledger.key("key_1")):
        assert month.total == 1_000 + run.billable_tokens == 1_000 + 500 + 900 + 625 + 100
        assert month.to_api()["billableTokens"] == month.total and month.cache_read_tokens == 9_000
    ledger.set_cap("local", "acme", month.total + 1)
    ledger.check("local", "acme")  # input plus output (11,100) is far past the cap; what was billed is not
