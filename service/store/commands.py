"""Redis writes recorded instead of sent, so one Lua script can run them after its checks in one round trip."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from redis.commands.core import CoreCommands

# Runs the commands a CommandRecorder encoded, starting at ARGV[first]; included in the scripts that use it.
# The recorded writes name their own keys instead of passing them in KEYS: Copydesk runs on one Redis (or a
# Sentinel-managed primary), never a cluster, where every key would have to be declared.
RUN_RECORDED = """
local function run_recorded(first)
  local i = first
  local count = tonumber(ARGV[i])
  i = i + 1
  for _ = 1, count do
    local condition, argc = ARGV[i], tonumber(ARGV[i + 1])
    i = i + 2
    local args = {}
    for j = 1, argc do args[j] = ARGV[i + j - 1] end
    i = i + argc
    if condition == '' or redis.call('EXISTS', condition) == 1 then redis.call(unpack(args)) end
  end
end
"""


class CommandRecorder(CoreCommands):
    """Takes redis-py's command methods (`set`, `zadd`, `xadd`, ...) and records their arguments."""

    _event_dispatcher: Any = None  # redis-py's client attribute; nothing is sent, so nothing is dispatched
    # A pipeline's attribute: the script runs the recorded commands atomically, like MULTI ... EXEC, so RQ, given a
    # recorder as its pipeline (service.dispatch.Dispatcher.record_kick), does not ask for a transaction.
    explicit_transaction = True

    def __init__(self) -> None:
        self._commands: list[tuple[str, tuple]] = []
        self._condition = ""

    def execute_command(self, *args, **options) -> None:
        self._commands.append((self._condition, args))

    @contextmanager
    def when_exists(self, key: str) -> Iterator[None]:
        """Commands recorded inside run only if `key` exists when the script runs them."""
        self._condition = key
        try:
            yield
        finally:
            self._condition = ""

    def encoded(self) -> list:
        """The script arguments: the count, then per command its condition key ('' for none), argc and args."""
        flat: list = [len(self._commands)]
        for condition, args in self._commands:
            flat += [condition, len(args), *args]
        return flat
