"""Model tokens totalled per account and per API key per calendar month (UTC), and the accounts' monthly caps."""

from dataclasses import dataclass
from datetime import UTC, datetime

import redis

from service.clock import now
from service.errors import MonthlyBudgetExceeded

# Monthly totals are kept a little over a year, long enough for a yearly look back.
TOTALS_TTL_SECONDS = 400 * 24 * 3600


def month_of(moment: datetime | None = None) -> str:
    """`YYYY-MM` of `moment` (default now), in UTC."""
    return (moment or now()).astimezone(UTC).strftime("%Y-%m")


def _account_key(account: str, month: str) -> str:
    return f"cd:usage:account:{account}:{month}"


def _key_key(key_id: str, month: str) -> str:
    return f"cd:usage:key:{key_id}:{month}"


def _cap_key(account: str) -> str:
    return f"cd:account:{account}:monthly-token-cap"


@dataclass(frozen=True)
class MonthUsage:
    month: str
    input_tokens: int
    output_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_api(self) -> dict:
        return {"month": self.month, "inputTokens": self.input_tokens, "outputTokens": self.output_tokens}


class UsageLedger:
    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def record(self, pipe, account: str, key_id: str | None, usage: dict | None, month: str | None = None) -> None:
        """Queue the tokens of one run on `pipe`: to the account's month (default this one) and, when a key sent
        it, the key's."""
        if not usage:
            return
        month = month or month_of()
        for name in [_account_key(account, month)] + ([_key_key(key_id, month)] if key_id else []):
            pipe.hincrby(name, "inputTokens", int(usage.get("inputTokens", 0)))
            pipe.hincrby(name, "outputTokens", int(usage.get("outputTokens", 0)))
            pipe.expire(name, TOTALS_TTL_SECONDS)

    def account(self, account: str, month: str | None = None) -> MonthUsage:
        return self._read(_account_key(account, month or month_of()), month or month_of())

    def key(self, key_id: str, month: str | None = None) -> MonthUsage:
        return self._read(_key_key(key_id, month or month_of()), month or month_of())

    def cap(self, account: str) -> int | None:
        """The account's monthly token cap, None when it has none."""
        raw = self._redis.get(_cap_key(account))
        return int(raw) if raw is not None else None

    def set_cap(self, account: str, tokens: int | None) -> None:
        if tokens is None:
            self._redis.delete(_cap_key(account))
        else:
            self._redis.set(_cap_key(account), int(tokens))

    def check(self, account: str) -> None:
        """Raise MonthlyBudgetExceeded when the account has used up its monthly cap."""
        cap = self.cap(account)
        if cap is None:
            return
        used = self.account(account)
        if used.total >= cap:
            raise MonthlyBudgetExceeded(
                f"account {account!r} used {used.total:,} model tokens in {used.month}, its monthly cap is "
                f"{cap:,}; new jobs and messages are refused until the month ends", retry_after=_seconds_to_month_end())

    def _read(self, name: str, month: str) -> MonthUsage:
        raw = self._redis.hgetall(name)
        return MonthUsage(month, int(raw.get(b"inputTokens", 0)), int(raw.get(b"outputTokens", 0)))


def _seconds_to_month_end() -> int:
    moment = now()
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return max(1, int((datetime(year, month, 1, tzinfo=UTC) - moment).total_seconds()))
