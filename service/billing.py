"""Billable tokens: the one rule budgets and caps count by, with cached input at the vendor's price.

A run's billable tokens are its uncached input tokens, plus its cached ones weighted by what the vendor charges
for them relative to an uncached input token, plus its output tokens. The weights are the vendors' published
prices: Anthropic bills a cache read at 0.1x and a cache write (5-minute lifetime) at 1.25x the base input price;
OpenAI bills cached input at 0.5x on its older models and less on newer ones (0.1x for the GPT-5 family), so
0.5x is taken: a budget is never overrun because a model's discount was smaller than assumed. Each model call's
weighted part is rounded up to a whole token.
"""

import math
from dataclasses import dataclass

# A usage record's fields in the API's camelCase form, as stored on messages and jobs.
USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "billableTokens")


@dataclass(frozen=True)
class CacheRates:
    """Price of a cached input token relative to an uncached one: read from the cache, written to it."""

    read: float
    write: float


ANTHROPIC = CacheRates(read=0.1, write=1.25)
OPENAI = CacheRates(read=0.5, write=1.0)
NO_CACHE = CacheRates(read=1.0, write=1.0)


def billable(
    input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0, rates: CacheRates = NO_CACHE
) -> int:
    """Billable tokens of one model call; `input_tokens` counts all input, the cached part included."""
    uncached = input_tokens - cache_read - cache_write
    return uncached + math.ceil(cache_read * rates.read + cache_write * rates.write) + output_tokens


def billable_of(record: dict | None) -> int:
    """The billable tokens of a usage record (API form); records from before caching was counted bill in full."""
    record = record or {}
    if "billableTokens" in record:
        return int(record["billableTokens"])
    return int(record.get("inputTokens", 0)) + int(record.get("outputTokens", 0))


def add_records(total: dict | None, run: dict | None) -> dict:
    """`total` plus one run's usage record, every field of USAGE_FIELDS present in the sum."""
    out = {}
    for name in USAGE_FIELDS:
        if name == "billableTokens":
            out[name] = billable_of(total) + billable_of(run)
        else:
            out[name] = int((total or {}).get(name, 0)) + int((run or {}).get(name, 0))
    return out
