"""One comment per round on the job's pull request: posted when the round is accepted, then edited in place
(queued, working with the steps so far, done or failed), at most once per `COPYDESK_COMMENT_EDIT_SECONDS`."""

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from service.agent.model import ToolCall
from service.codehost.base import CodeHost
from service.describe import RoundReport, RoundState, tracking_comment
from service.lease import Fence, LeaseLost
from service.models import Message, Project
from service.store.jobkeys import tracking_key

log = logging.getLogger(__name__)

RECORD_TTL_SECONDS = 30 * 24 * 3600
MAX_PATHS_SHOWN = 5


def comment_key(message_id: str) -> str:
    """The idempotency key the round's comment is posted with (a retried post finds the first one)."""
    return f"{message_id}:track"


@dataclass
class Tracked:
    """Where a round's tracking comment is, and when it was last edited (epoch seconds; 0: never)."""

    comment_id: str
    number: int
    edited_at: float = 0.0


class TrackingComments:
    """The record of each round's tracking comment, kept in Redis by message id (the owner of these keys)."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def find(self, message_id: str) -> Tracked | None:
        raw = self._redis.get(self._key(message_id))
        return Tracked(**json.loads(raw)) if raw else None

    def save(self, message_id: str, tracked: Tracked) -> None:
        self._redis.set(self._key(message_id), json.dumps(tracked.__dict__), ex=RECORD_TTL_SECONDS)

    @staticmethod
    def _key(message_id: str) -> str:
        return tracking_key(message_id)


def post_queued(client: redis.Redis, host: CodeHost, project: Project, number: int, message: Message) -> None:
    """Post a just-accepted round's comment on the job's pull request `number`, saying it is queued."""
    report = RoundReport(message.seq + 1, RoundState.QUEUED, request=_request_line(message))
    comment_id = host.comment(project, number, tracking_comment(report), key=comment_key(message.id))
    TrackingComments(client).save(message.id, Tracked(comment_id, number))


def mark_cancelled(client: redis.Redis, host: CodeHost, project: Project, message: Message) -> None:
    """A waiting round was cancelled before it ran: its comment says so."""
    tracked = TrackingComments(client).find(message.id)
    if tracked is None:
        return
    report = RoundReport(message.seq + 1, RoundState.CANCELLED, request=_request_line(message))
    host.edit_comment(
        project, tracked.number, tracked.comment_id, tracking_comment(report), key=comment_key(message.id)
    )


class StepTally:
    """The steps of a round in a few words: "read 3 files, searched 2 times, edited `docs/x.md`"."""

    def __init__(self) -> None:
        self.read: set[str] = set()
        self.searches = 0
        self.listings = 0
        self.edited: list[str] = []
        self.moved: list[str] = []
        self.deleted: list[str] = []
        self.checked = 0

    def add(self, call: ToolCall) -> None:
        args = call.arguments if isinstance(call.arguments, dict) else {}
        path = _path(args.get("path"))
        if call.name == "read_file" and path:
            self.read.add(path)
        elif call.name == "search":
            self.searches += 1
        elif call.name == "list_files":
            self.listings += 1
        elif call.name in ("write_file", "edit_file") and path and path not in self.edited:
            self.edited.append(path)
        elif call.name == "move_file" and path:
            self.moved.append(f"{path} → {_path(args.get('new_path'))}")
        elif call.name == "delete_file" and path:
            self.deleted.append(path)
        elif call.name == "check_docs":
            self.checked += 1

    def text(self) -> str:
        parts = []
        if self.listings:
            parts.append(f"listed files {_times(self.listings)}")
        if self.read:
            parts.append(f"read {len(self.read)} file" + ("s" if len(self.read) != 1 else ""))
        if self.searches:
            parts.append(f"searched {_times(self.searches)}")
        for verb, paths in (("edited", self.edited), ("moved", self.moved), ("deleted", self.deleted)):
            if paths:
                parts.append(f"{verb} {_paths(paths)}")
        if self.checked:
            parts.append("checked the docs")
        return ", ".join(parts)


class RoundTracker:
    """A run's handle on its round's comment: it posts the comment once the pull request exists and edits it as the
    round goes, never twice within `edit_every` seconds; a failing code host only costs a log line."""

    def __init__(
        self,
        records: TrackingComments,
        host: CodeHost,
        project: Project,
        message: Message,
        *,
        fence: Fence,
        edit_every: float,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._records, self._host, self._project, self._message = records, host, project, message
        self._fence, self._edit_every, self._clock, self._sleep = fence, edit_every, clock, sleep
        self._tally = StepTally()
        self._started = clock()
        self._tracked = records.find(message.id)

    @property
    def round_number(self) -> int:
        return self._message.seq + 1

    @property
    def comment_id(self) -> str | None:
        return self._tracked.comment_id if self._tracked else None

    def start(self, number: int | None) -> None:
        """The round starts on a job with a pull request: make sure the comment exists (an API round has none yet)."""
        if number is not None and self._tracked is None:
            self._write(number, self._report(RoundState.WORKING))

    def step(self, call: ToolCall) -> None:
        """Count one tool call; show the steps so far once the throttle allows (never holds the agent back)."""
        self._tally.add(call)
        if self._tracked is None:
            return
        since = self._clock() - max(self._tracked.edited_at, self._started)
        if since >= self._edit_every:
            self._write(self._tracked.number, self._report(RoundState.WORKING))

    def finish(self, number: int, report: RoundReport) -> None:
        """The round's last word: its comment edited to `report` (waiting out the throttle), or posted if new."""
        if self._tracked is not None:
            wait = self._tracked.edited_at + self._edit_every - self._clock()
            if wait > 0:
                self._sleep(min(wait, self._edit_every))
        self._write(number, report, final=True)

    def report(self, state: RoundState, **fields) -> RoundReport:
        """A report of this round in `state`, with its request and the steps so far."""
        return self._report(state, **fields)

    def _report(self, state: RoundState, **fields) -> RoundReport:
        return RoundReport(
            self.round_number, state, request=_request_line(self._message), steps=self._tally.text(), **fields
        )

    def _write(self, number: int, report: RoundReport, *, final: bool = False) -> None:
        body = tracking_comment(report)
        key = comment_key(self._message.id)
        try:
            if self._tracked is None:
                comment_id = self._host.comment(self._project, number, body, fence=self._fence, key=key)
                self._tracked = Tracked(comment_id, number)
            else:
                self._host.edit_comment(
                    self._project, number, self._tracked.comment_id, body, fence=self._fence, key=key
                )
                self._tracked.edited_at = self._clock()
            self._records.save(self._message.id, self._tracked)
        except LeaseLost:
            if final:
                raise
        except Exception:
            # The round's work does not depend on its comment: a refused edit is retried by the next one.
            log.warning("could not write the tracking comment of message %s", self._message.id, exc_info=True)


def _request_line(message: Message) -> str:
    """What the round was asked, briefly: who asked on the pull request, or the request's words."""
    if message.source == "ci":
        return message.content.splitlines()[0]  # "Fix the checks that fail on this pull request: …"
    if message.source == "automation":  # its name is no login, and its prompt carries source PRs' text (data)
        return (
            f"Started by the automation `{_path(message.author)}`." if message.author else "Started by an automation."
        )
    if message.source == "api" or not message.author:
        return message.content
    return f"Requested by @{message.author}."


def _path(value) -> str:
    return str(value).replace("`", "'").replace("\n", " ")[:200] if value else ""


def _paths(paths: list[str]) -> str:
    shown = ", ".join(f"`{p}`" for p in paths[:MAX_PATHS_SHOWN])
    more = len(paths) - MAX_PATHS_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"
