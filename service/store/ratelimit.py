"""A fixed-window counter per subject: a project's job creations plus messages, a client address's knocks on a
door anyone may use (bot.door_limits)."""

import time
from dataclasses import dataclass

import redis

# Count and refuse in one round trip; a refused request does not use up the window.
_CONSUME = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
if n > tonumber(ARGV[1]) then
  redis.call('DECR', KEYS[1])
  return {0, n - 1}
end
return {1, n}
"""


@dataclass(frozen=True)
class Quota:
    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int


class RateLimiter:
    def __init__(self, client: redis.Redis, *, limit: int, window_seconds: int = 3600) -> None:
        self._redis = client
        self._script = client.register_script(_CONSUME)
        self.limit = limit
        self.window_seconds = window_seconds

    def consume(self, subject: str) -> Quota:
        """Take one unit of the subject's quota (a project id, or a namespaced name) if any is left."""
        key, reset = self.window(subject)
        allowed, used = self._script(keys=[key], args=[self.limit, self.ttl])
        return self.quota(bool(allowed), int(used), reset)

    def window(self, subject: str) -> tuple[str, int]:
        """The counter of the subject's current window and the seconds until the next one starts."""
        now = time.time()
        window_start = int(now // self.window_seconds) * self.window_seconds
        return f"cd:rl:{subject}:{window_start}", max(1, int(window_start + self.window_seconds - now))

    @property
    def ttl(self) -> int:
        """How long a window's counter is kept."""
        return self.window_seconds + 60

    def quota(self, allowed: bool, used: int, reset_seconds: int) -> Quota:
        """The quota left after a window's counter reached `used` (counted elsewhere, e.g. in a script)."""
        return Quota(allowed, self.limit, max(0, self.limit - used), reset_seconds)
