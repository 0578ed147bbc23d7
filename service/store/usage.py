"""Model tokens totalled per account and per API key per calendar month (UTC), and the accounts' monthly caps."""

from dataclasses import dataclass
from datetime import UTC, datetime

import redis

from service.billing import add_records
from service.clock import now
from service.errors import MonthlyBudgetExceeded

# Monthly totals are kept a little over a year, long enough for a yearly look back.
TOTALS_TTL_SECONDS = 400 * 24 * 3600


def month_of(moment: datetime | None = None) -> str:
    """`YYYY-MM` of `moment` (default now), in UTC."""
    return (moment or now()).astimezone(UTC).strftime("%Y-%m")


def account_key(account: str, month: str) -> str:
    """The hash of the account's token totals of `month`."""
    return f"cd:usage:account:{account}:{month}"


def _key_key(key_id: str, month: str) -> str:
    return f"cd:usage:key:{key_id}:{month}"


def cap_key(account: str) -> str:
    """The account's monthly token cap, when it has one."""
    return f"cd:account:{account}:monthly-token-cap"


@dataclass(frozen=True)
class MonthUsage:
    month: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # Input plus output minus billable tokens. Kept instead of a billable total so that runs recorded before
    # billable tokens existed (none unbilled) count in full in the same month's total.
    unbilled_tokens: int = 0

    @property
    def total(self) -> int:
        """What the monthly cap counts: billable tokens (service.billing)."""
        return self.input_tokens + self.output_tokens - self.unbilled_tokens

    def to_api(self) -> dict:
        return {"month": self.month, "inputTokens": self.input_tokens, "outputTokens": self.output_tokens,
                "cacheReadTokens": self.cache_read_tokens, "cacheWriteTokens": self.cache_write_tokens,
                "billableTokens": self.total}


class UsageLedger:
    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def record(self, pipe, account: str, key_id: str | None, usage: dict | None) -> None:
        """Queue the tokens of one run on `pipe`: to the account's month and, when a key sent it, the key's."""
        if not usage:
            return
        month = month_of()
        for name in [account_key(account, month)] + ([_key_key(key_id, month)] if key_id else []):
            counts = add_records(None, usage)
            billable = counts.pop("billableTokens")
            counts["unbilledTokens"] = counts["inputTokens"] + counts["outputTokens"] - billable
            for field, count in counts.items():
                pipe.hincrby(name, field, count)
            pipe.expire(name, TOTALS_TTL_SECONDS)

    def account(self, account: str, month: str | None = None) -> MonthUsage:
        return self._read(account_key(account, month or month_of()), month or month_of())

    def key(self, key_id: str, month: str | None = None) -> MonthUsage:
        return self._read(_key_key(key_id, month or month_of()), month or month_of())

    def cap(self, account: str) -> int | None:
        """The account's monthly token cap, None when it has none."""
        raw = self._redis.get(cap_key(account))
        return int(raw) if raw is not None else None

    def set_cap(self, account: str, tokens: int | None) -> None:
        if tokens is None:
            self._redis.delete(cap_key(account))
        else:
            self._redis.set(cap_key(account), int(tokens))

    def check(self, account: str) -> None:
        """Raise MonthlyBudgetExceeded when the account has used up its monthly cap."""
        cap = self.cap(account)
        if cap is None:
            return
        used = self.account(account)
        if used.total >= cap:
            raise cap_reached(account, used.total, cap, used.month)

    def _read(self, name: str, month: str) -> MonthUsage:
        raw = self._redis.hgetall(name)
        counts = [int(raw.get(field, 0)) for field in
                  (b"inputTokens", b"outputTokens", b"cacheReadTokens", b"cacheWriteTokens", b"unbilledTokens")]
        return MonthUsage(month, *counts)


def cap_reached(account: str, used: int, cap: int, month: str | None = None) -> MonthlyBudgetExceeded:
    """The error of an account that used `used` of its `cap` tokens this month."""
    return MonthlyBudgetExceeded(
        f"account {account!r} used {used:,} model tokens in {month or month_of()}, its monthly cap is "
        f"{cap:,}; new jobs and messages are refused until the month ends", retry_after=_seconds_to_month_end())


def _seconds_to_month_end() -> int:
    moment = now()
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return max(1, int((datetime(year, month, 1, tzinfo=UTC) - moment).total_seconds()))
