"""Redis writes recorded instead of sent, so one Lua script can run them after its checks in one round trip."""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from redis.commands.core import CoreCommands
from redis.connection import Encoder

# Runs the commands a CommandRecorder encoded: ARGV[at] holds them as JSON, ARGV[at + 1]... their binary arguments;
# included in the scripts that use it. One JSON argument instead of one script argument per command argument:
# redis-py packs each argument in Python, ~100 µs for a create's ~140, where orjson takes a few.
# In the JSON every value is a string; a number n stands for ARGV[at + n], an argument sent as it is because it
# need not be UTF-8 (RQ's job data is compressed pickle) and a JSON string can only carry text.
# The recorded writes name their own keys instead of passing them in KEYS: Copydesk runs on one Redis (or a
# Sentinel-managed primary), never a cluster, where every key would have to be declared.
RUN_RECORDED = """
local function run_recorded(at)
  for _, command in ipairs(cjson.decode(ARGV[at])) do
    local args = {}
    for j = 2, #command do
      local arg = command[j]
      if type(arg) == 'number' then arg = ARGV[at + arg] end
      args[j - 1] = arg
    end
    local condition = command[1]
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
        """The script arguments RUN_RECORDED reads: the commands as JSON (per command its condition key, '' for
        none, then its arguments), then their binary arguments."""
        binary: list = []
        commands = []
        for condition, args in self._commands:
            # Most arguments are text and go as they are, without a call each (a create records ~100).
            commands.append([condition, *[arg if type(arg) is str else _value(arg, binary) for arg in args]])
        try:
            packed = orjson.dumps(commands)
        except orjson.JSONEncodeError:
            # A lone surrogate (orjson refuses it): refused with the error redis-py would raise sending it, not
            # sent as an escape.
            packed = json.dumps(commands, ensure_ascii=False, separators=(",", ":")).encode()
        return [packed, *binary]


# redis-py's own encoder, for the arguments that are neither text nor bytes: numbers become the strings it would
# send, and what it refuses (bools, None, other types) is refused with its own DataError.
_ENCODER = Encoder(encoding="utf-8", encoding_errors="strict", decode_responses=False)


def _value(arg: Any, binary: list) -> Any:
    """An argument as the JSON value RUN_RECORDED turns into the bytes redis-py would send: text as itself, a
    number as the string redis-py makes of it (a Lua number is a double: a large int would lose digits), bytes as
    the number of their own script argument, appended to `binary`."""
    if isinstance(arg, str):
        return arg
    if isinstance(arg, (bytes, bytearray, memoryview)):
        binary.append(arg)
        return len(binary)
    return _ENCODER.encode(arg).decode()
