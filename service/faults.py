"""Fault points for tests: a run's process dies, or stalls inside a tool, at a named point. Off in production."""

import logging
import os
import re
import signal
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

# Crash points: the process dies there at once, as if SIGKILLed, in the order a run reaches them.
AFTER_PUSH = "after_push"  # the commit is on the branch; no pull request opened or updated yet
PULL_CLAIMED = "pull_claimed"  # inside the local host's pull-request transaction: a number chosen, nothing saved
AFTER_PULL = "after_pull"  # the pull request is open; the outcome is not recorded
CRASHES = (AFTER_PUSH, PULL_CLAIMED, AFTER_PULL)
# A crash point in a worker's upkeep, not in a run: an automation ran for a new local commit, and the scan's
# cursor is not moved past it yet.
AFTER_CHANGE_FIRED = "after_change_fired"
UPKEEP_CRASHES = (AFTER_CHANGE_FIRED,)
# Stall points, reached by every `search` tool call: it never returns by itself.
STALL_IN_TOOL = "stall_in_tool"  # waits in Python code
REGEX_IN_TOOL = "regex_in_tool"  # a catastrophic match inside Python's `re`: C code that holds the GIL
STALLS = (STALL_IN_TOOL, REGEX_IN_TOOL)
# Freeze points: the process stops itself (SIGSTOP), as a paused VM or a debugger would, until SIGCONT.
FREEZE_BEFORE_PUSH = "freeze_before_push"  # after the push's lease check, before the push itself
FREEZE_BEFORE_PULL = "freeze_before_pull"  # after the runner's lease check, before it opens or updates the PR
FREEZE_BEFORE_COMMENT = "freeze_before_comment"  # after the runner's lease check, before a follow-up's comment
# In the worker process itself: it popped a run's RQ job from the queue, and RQ has not marked it started.
FREEZE_AFTER_DEQUEUE = "freeze_after_dequeue"
FREEZES = (FREEZE_BEFORE_PUSH, FREEZE_BEFORE_PULL, FREEZE_BEFORE_COMMENT, FREEZE_AFTER_DEQUEUE)
# Pause points: the run sleeps PAUSE_SECONDS and carries on, long enough for a test to act meanwhile.
PAUSE_BEFORE_PUSH = "pause_before_push"  # past the run's last stop check, before its push (a cancel lands here)
PAUSES = (PAUSE_BEFORE_PUSH,)
PAUSE_SECONDS = 3.0
STALL_IN_DOCS_CHECK = "stall_in_docs_check"  # the docs check at the end of a run never returns by itself
POINTS = CRASHES + UPKEEP_CRASHES + STALLS + FREEZES + PAUSES + (STALL_IN_DOCS_CHECK,)


@dataclass(frozen=True)
class Faults:
    """The fault points armed in this process (COPYDESK_TEST_FAULTS, for tests only); none by default."""

    armed: frozenset[str] = frozenset()

    def reach(self, point: str) -> None:
        """Die or stall here if `point` is armed; return at once otherwise."""
        if point not in self.armed:
            return
        log.warning("test fault point %s reached", point)
        if point in CRASHES or point in UPKEEP_CRASHES:
            os._exit(137)
        if point in FREEZES:
            os.kill(os.getpid(), signal.SIGSTOP)
            return
        if point in PAUSES:
            time.sleep(PAUSE_SECONDS)
            return
        if point == REGEX_IN_TOOL:
            while True:
                re.fullmatch(r"(a+)+$", "a" * 64 + "!")  # exponential backtracking: never ends
        while True:
            time.sleep(3600)
