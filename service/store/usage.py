"""Model tokens totalled per account (code host and name) and per API key per calendar month (UTC), and the
accounts' monthly caps."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

import redis

from service.billing import add_records
from service.clock import now
from service.errors import MonthlyBudgetExceeded
from service.models import Project

# Monthly totals are kept a little over a year, long enough for a yearly look back.
TOTALS_TTL_SECONDS = 400 * 24 * 3600
# Stored per month: input (cached included), output, cached reads and writes, and input plus output minus billable
# tokens. The last is kept instead of a billable total so that runs recorded before billable tokens existed (none
# unbilled) count in full in the same month's total.
_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "unbilledTokens")


def month_of(moment: datetime | None = None) -> str:
    """`YYYY-MM` of `moment` (default now), in UTC."""
    return (moment or now()).astimezone(UTC).strftime("%Y-%m")


# Keyed by code host and account, as keys and projects are: the GitHub org `team` and the local account `team`
# are two accounts.
def account_key(host: str, account: str, month: str) -> str:
    """The hash of the account's token totals of `month`."""
    return f"cd:usage:host:{host}:account:{account}:{month}"


def cap_key(host: str, account: str) -> str:
    """The account's monthly token cap, when it has one ("" when it was removed on this host)."""
    return f"cd:cap:host:{host}:account:{account}:monthly-tokens"


# Before totals were keyed by host, one name stood for both accounts. Such totals and caps are read for either
# host (never split: who spent what cannot be told apart), so no cap loosens at the upgrade; totals last until
# their month ends, a cap until one is set for the host.
def legacy_account_key(account: str, month: str) -> str:
    return f"cd:usage:account:{account}:{month}"


def legacy_cap_key(account: str) -> str:
    return f"cd:account:{account}:monthly-token-cap"


def cap_keys(host: str, account: str, month: str) -> dict[str, str]:
    """The keys a check of the account's monthly cap reads, as service.store.admission.Gate names them."""
    return {
        "cap_key": cap_key(host, account),
        "usage_key": account_key(host, account, month),
        "legacy_cap_key": legacy_cap_key(account),
        "legacy_usage_key": legacy_account_key(account, month),
    }


def _key_key(key_id: str, month: str) -> str:
    return f"cd:usage:key:{key_id}:{month}"


@dataclass(frozen=True)
class MonthUsage:
    month: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    unbilled_tokens: int = 0

    @property
    def total(self) -> int:
        """What the monthly cap counts: billable tokens (service.billing)."""
        return self.input_tokens + self.output_tokens - self.unbilled_tokens

    def to_api(self) -> dict:
        return {
            "month": self.month,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "billableTokens": self.total,
        }


class UsageLedger:
    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def add(self, host: str, account: str, key_id: str | None, usage: dict) -> None:
        """Count the tokens of one model call, at once: to the account's month and, when a key sent the work, the
        key's. Runs count each call as it is made, so parallel runs see each other's spending."""
        pipe = self._redis.pipeline(transaction=True)
        self.record(pipe, host, account, key_id, usage)
        pipe.execute()

    def record(self, pipe, host: str, account: str, key_id: str | None, usage: dict, month: str | None = None) -> None:
        """Queue `usage` on `pipe`: to the account's month (default this one) and, when a key sent it, the key's."""
        month = month or month_of()
        counts = add_records(None, usage)
        billable = counts.pop("billableTokens")
        counts["unbilledTokens"] = counts["inputTokens"] + counts["outputTokens"] - billable
        for name in [account_key(host, account, month)] + ([_key_key(key_id, month)] if key_id else []):
            for field in _FIELDS:
                pipe.hincrby(name, field, counts[field])
            pipe.expire(name, TOTALS_TTL_SECONDS)

    def account(self, host: str, account: str, month: str | None = None) -> MonthUsage:
        month = month or month_of()
        pipe = self._redis.pipeline(transaction=False)
        pipe.hgetall(account_key(host, account, month))
        pipe.hgetall(legacy_account_key(account, month))
        current, legacy = pipe.execute()
        return MonthUsage(month, *(_count(current, f) + _count(legacy, f) for f in _FIELDS))

    def key(self, key_id: str, month: str | None = None) -> MonthUsage:
        month = month or month_of()
        raw = self._redis.hgetall(_key_key(key_id, month))
        return MonthUsage(month, *(_count(raw, f) for f in _FIELDS))

    def cap(self, host: str, account: str) -> int | None:
        """The account's monthly token cap, None when it has none."""
        raw, legacy = self._redis.mget([cap_key(host, account), legacy_cap_key(account)])
        raw = raw if raw is not None else legacy
        return int(raw) if raw else None  # b"": removed on this host, whatever the shared cap says

    def set_cap(self, host: str, account: str, tokens: int | None) -> None:
        """Set the account's cap, or remove it (None)."""
        self._redis.set(cap_key(host, account), "" if tokens is None else int(tokens))

    def check(self, host: str, account: str) -> None:
        """Raise MonthlyBudgetExceeded when the account has used up its monthly cap."""
        cap = self.cap(host, account)
        if cap is None:
            return
        used = self.account(host, account)
        if used.total >= cap:
            raise cap_reached(host, account, used.total, cap, used.month)


def hosts_of(account: str, projects: Iterable[Project]) -> set[str]:
    """The code hosts that have an account named `account`, as its projects show."""
    return {project.host for project in projects if project.account == account}


def _count(raw: dict, field: str) -> int:
    return int(raw.get(field.encode(), 0))


def cap_reached(host: str, account: str, used: int, cap: int, month: str | None = None) -> MonthlyBudgetExceeded:
    """The error of an account that used `used` of its `cap` tokens this month."""
    return MonthlyBudgetExceeded(
        f"account {account!r} ({host}) used {used:,} model tokens in {month or month_of()}, its monthly cap is "
        f"{cap:,}; new work is refused until the month ends",
        retry_after=_seconds_to_month_end(),
    )


def _seconds_to_month_end() -> int:
    moment = now()
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return max(1, int((datetime(year, month, 1, tzinfo=UTC) - moment).total_seconds()))
