"""Webhook attempts waiting to be made, in Redis: one schedule per account (a lane), so that the workers' delivery
lanes (service.outbound.lanes) serve accounts in turn and one account's backlog never stands before another's."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import redis

from service.store.outbound_webhooks import WebhookStore
from service.store.projects import ProjectStore
from service.store.replies import text

# The lanes with attempts waiting, each scored by when its soonest attempt is due (never later than that), so that
# idle lanes (retries due hours later) cost nothing until then.
LANES = "cd:deliveries:lanes"
# Versions before the lanes kept first attempts not made yet here (delivery ids); they are moved onto the lanes.
LEGACY_UNSENT = "cd:deliveries:unsent"

# Schedules ARGV[1] at ARGV[2] in lane ARGV[3], moving the lane's turn earlier when it is due sooner now.
_ADD = """
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
local turn = redis.call('ZSCORE', KEYS[2], ARGV[3])
if not turn or tonumber(ARGV[2]) < tonumber(turn) then redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3]) end
"""
# Takes the lane's due attempts, at most ARGV[3], and holds them until ARGV[2] (a lease: an attempt whose taker died
# is due again then); the lane's next turn is its soonest attempt, and an empty lane leaves the list.
_TAKE = """
local items = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, member in ipairs(items) do redis.call('ZADD', KEYS[1], ARGV[2], member) end
local soonest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #soonest == 0 then redis.call('ZREM', KEYS[2], ARGV[4]) else redis.call('ZADD', KEYS[2], soonest[2], ARGV[4]) end
return items
"""


def account_lane(webhooks: WebhookStore, projects: ProjectStore) -> Callable[[str], str]:
    """Names a delivery's lane: its project's account (code host and name)."""

    def lane_of(delivery_id: str) -> str:
        delivery = webhooks.delivery(delivery_id)
        endpoint = webhooks.find(delivery.endpoint_id) if delivery else None
        project = projects.find(endpoint.project_id) if endpoint else None
        # With nothing left to send to, any lane will do: the attempt finds nothing to make.
        return f"{project.host}:{project.account}" if project else "gone"

    return lane_of


def _lane_key(lane: str) -> str:
    return f"cd:deliveries:lane:{lane}"


@dataclass(frozen=True)
class Attempt:
    """Attempt number `number` of a delivery; with `manual`, re-send number `number` (counted apart)."""

    delivery_id: str
    number: int
    manual: bool = False

    def member(self) -> str:
        return f"{self.delivery_id}|{self.number}|{'resend' if self.manual else 'attempt'}"

    @classmethod
    def parse(cls, member: str) -> "Attempt":
        delivery_id, number, kind = member.split("|")
        return cls(delivery_id, int(number), kind == "resend")


class DeliveryQueue:
    """Schedules attempts now (a first attempt, a re-send) or later (a retry) in their account's lane; `lane_of`
    names the lane of a delivery (its account, host and name)."""

    def __init__(self, client: redis.Redis, lane_of: Callable[[str], str]) -> None:
        self._redis = client
        self._lane_of = lane_of
        self._add = client.register_script(_ADD)
        self._take = client.register_script(_TAKE)

    def now(self, delivery_id: str, attempt: int, *, manual: bool = False) -> None:
        self.add(Attempt(delivery_id, attempt, manual), at=time.time())

    def later(self, seconds: float, delivery_id: str, attempt: int) -> None:
        """Make the attempt after `seconds`."""
        self.add(Attempt(delivery_id, attempt), at=time.time() + seconds)

    def add(self, attempt: Attempt, *, at: float) -> None:
        lane = self._lane_of(attempt.delivery_id)
        self._add(keys=[_lane_key(lane), LANES], args=[attempt.member(), at, lane])

    def adopt_legacy(self) -> int:
        """Move the first attempts a version before the lanes left unmade onto the lanes; returns how many."""
        moved = 0
        for raw in cast(list, self._redis.zrange(LEGACY_UNSENT, 0, -1)):
            self.now(text(raw), 1)
            self._redis.zrem(LEGACY_UNSENT, raw)
            moved += 1
        return moved

    def lanes(self, now: float | None = None) -> list[str]:
        """The lanes that may have attempts due, in a stable order."""
        due = cast(list, self._redis.zrangebyscore(LANES, "-inf", time.time() if now is None else now))
        return sorted(text(lane) for lane in due)

    def take(self, lane: str, count: int, *, lease_seconds: float, now: float | None = None) -> list[Attempt]:
        """Up to `count` of the lane's due attempts, held for `lease_seconds` (then due again unless done)."""
        moment = time.time() if now is None else now
        members = self._take(keys=[_lane_key(lane), LANES], args=[moment, moment + lease_seconds, count, lane])
        return [Attempt.parse(text(member)) for member in cast(list, members)]

    def done(self, lane: str, attempt: Attempt) -> None:
        """The attempt was made (or found not to be needed): it leaves the schedule."""
        self._redis.zrem(_lane_key(lane), attempt.member())

    def waiting(self, lane: str) -> list[tuple[Attempt, float]]:
        """The lane's attempts and when each is due (or its lease ends), soonest first."""
        items = cast(list, self._redis.zrange(_lane_key(lane), 0, -1, withscores=True))
        return [(Attempt.parse(text(member)), float(score)) for member, score in items]
