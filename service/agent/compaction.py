"""Keeping the model's context small: compacting a job's earlier conversation and a run's growing transcript."""

import dataclasses
import json
import re

from service.agent.model import ChatMessage, ToolCall

SQUEEZED_CHARS = 400  # what each older message keeps when the middle of a conversation is squeezed
NOTE_ITEM_WIDTHS = (160, 80, 40)  # per quoted text in the compacted note, widest first; then old rounds go
NOTE_HEAD = "Earlier rounds (compacted):"
KEEP_LAST = 6  # transcript messages never elided: the model's latest calls and their results
ARGUMENT_KEEP_CHARS = 1_000  # longer tool-call arguments (written file contents) are elided in old calls
ELIDED_OUTPUT = "[{tool} output from step {step} elided to save context; call the tool again if you need it]"
ELIDED_ARGUMENT = "[{size} characters elided to save context]"
# When a transcript outgrows its budget it is compacted to this share of it, so that the next several steps fit
# without compacting again: each compaction rewrites the transcript from its oldest kept tool output on, which
# the vendors' prompt caches must then write afresh.
COMPACT_TO = 0.6

History = list[tuple[str, str]]


# --- the job's earlier conversation ---------------------------------------------------------------------


def history_chars(history: History) -> int:
    """The size of a conversation as compact_history counts it: the characters of its texts."""
    return sum(len(text) for _, text in history)


def compact_history(history: History, *, max_chars: int) -> History:
    """The conversation (role "user"/"agent", oldest first) within `max_chars` characters of text.

    The first prompt and the most recent rounds stay verbatim; older rounds are clipped, or else replaced by one
    note listing them briefly. The first prompt and the last round are clipped (saying so) only when they alone
    exceed the budget.
    """
    if history_chars(history) <= max_chars:
        return list(history)
    head, rounds = _split(history)
    last = rounds.pop()[1] if rounds else []
    kept = _fit(head + last, max_chars - _note_reserve(rounds, max_chars))
    head, last = kept[: len(head)], kept[len(head) :]
    room = max_chars - history_chars(kept)
    squeezed = _squeezed_split(rounds, room)
    if squeezed is not None:
        return head + squeezed + last
    recent: History = []
    while rounds and history_chars(rounds[-1][1]) + _note_reserve(rounds[:-1], max_chars) <= room:
        room -= history_chars(rounds[-1][1])
        recent[:0] = rounds.pop()[1]
    if not rounds:
        return head + recent + last
    # The note speaks for the agent, so it sits between the first prompt and the next user message.
    return head + [("agent", _note(rounds, room))] + recent + last


def _squeezed_split(rounds: list[tuple[int, History]], room: int) -> History | None:
    """The rounds in `room` with as many recent ones verbatim as possible and the older ones each clipped;
    None when even clipping every one of them does not fit."""
    squeezed = [[(role, _clip(text, SQUEEZED_CHARS)) for role, text in messages] for _, messages in rounds]
    squeezed_size = [history_chars(messages) for messages in squeezed]
    whole_size = [history_chars(messages) for _, messages in rounds]
    older = sum(squeezed_size)
    recent = 0
    best = 0 if older <= room else None
    for verbatim in range(1, len(rounds) + 1):
        older -= squeezed_size[-verbatim]
        recent += whole_size[-verbatim]
        if older + recent <= room:
            best = verbatim
    if best is None:
        return None
    cut = len(rounds) - best
    return [m for messages in squeezed[:cut] for m in messages] + [m for _, messages in rounds[cut:] for m in messages]


def _role(role) -> str:
    return getattr(role, "value", role)


def _split(history: History) -> tuple[History, list[tuple[int, History]]]:
    """The first prompt, and the rest as numbered rounds that each start at a user message.

    The first round may start with the answer to the first prompt: it keeps that prompt's number, 1.
    """
    head = list(history[:1]) if history and _role(history[0][0]) == "user" else []
    rounds: list[tuple[int, History]] = []
    number = len(head)
    for message in history[len(head) :]:
        is_user = _role(message[0]) == "user"
        if is_user or not rounds:
            if is_user or number == 0:
                number += 1
            rounds.append((number, []))
        rounds[-1][1].append(message)
    return head, rounds


def _note_reserve(rounds: list, max_chars: int) -> int:
    """Room kept for the note about `rounds`: enough to say how many, and up to a fifth of the budget to list them."""
    if not rounds:
        return 0
    wanted = len(NOTE_HEAD) + len(rounds) * (2 * NOTE_ITEM_WIDTHS[0] + 40)
    return max(len(_omitted(len(rounds))), min(wanted, max_chars // 5))


def _fit(messages: History, budget: int) -> History:
    """Clip the longest messages until the texts fit in `budget` (shortest kept whole: water-filling)."""
    if history_chars(messages) <= budget:
        return list(messages)
    sizes = sorted(len(text) for _, text in messages)
    cap, left = 0, max(budget, 0)
    for n, size in enumerate(sizes):
        share = left // (len(sizes) - n)
        if size > share:
            cap = share
            break
        left -= size
    return [(role, _clip(text, cap)) for role, text in messages]


def _clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, saying how much was left out when there is room to say it."""
    if len(text) <= limit:
        return text
    longest_marker = len(_elided(len(text)))
    if limit < longest_marker + 20:
        return text[: max(limit, 0)]
    cut = limit - longest_marker
    return text[:cut] + _elided(len(text) - cut)


def _elided(count: int) -> str:
    return f"\n[… {count:,} characters elided to save context]"


def _omitted(count: int) -> str:
    return f"{NOTE_HEAD} {count} round(s) left out to save context."


def _note(rounds: list[tuple[int, History]], room: int) -> str:
    """One message listing the compacted rounds, each briefly, within `room` characters.

    Quotes get narrower first; only at the narrowest are the oldest rounds left out.
    """
    for width in NOTE_ITEM_WIDTHS:
        items = [_item(number, messages, width) for number, messages in rounds]
        size = len(NOTE_HEAD) + sum(len(item) + 1 for item in items)
        if size <= room:
            return " ".join([NOTE_HEAD, *items])
    for start, item in enumerate(items, 1):
        size -= len(item) + 1
        text_head = f"{NOTE_HEAD} ({start} earlier round(s) left out.)"
        if size - len(NOTE_HEAD) + len(text_head) <= room:
            return " ".join([text_head, *items[start:]])
    return _omitted(len(rounds))[: max(room, 0)]


def _item(number: int, messages: History, width: int) -> str:
    asked = [text for role, text in messages if _role(role) == "user"]
    answered = [text for role, text in messages if _role(role) != "user"]
    parts = []
    if asked:
        parts.append(f"asked “{_brief(' '.join(asked), width)}”")
    if answered:
        parts.append(f"answered “{_brief(' '.join(answered), width)}”")
    return f"{number}. " + "; ".join(parts) + "."


def _brief(text: str, width: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


# --- a run's transcript ---------------------------------------------------------------------------------


def transcript_chars(messages: list[ChatMessage]) -> int:
    """The size of a transcript as compact_transcript counts it: message texts plus tool-call arguments."""
    return sum(len(m.content) + sum(_arguments_chars(call) for call in m.tool_calls) for m in messages)


def compact_transcript(messages: list[ChatMessage], *, max_chars: int, keep_last: int = KEEP_LAST) -> list[ChatMessage]:
    """A copy of the run's messages within `max_chars` where possible: the oldest tool outputs become stubs.

    Then, if still too long, long arguments of old tool calls (written file contents) are elided. The system
    message, user messages and the last `keep_last` messages are never changed and no message is removed, so
    every tool result still answers its call; when those alone exceed `max_chars` the result stays over it.
    """
    out = list(messages)
    excess = transcript_chars(out) - max_chars
    if excess <= 0:
        return out
    calls = _calls_by_id(out)
    changeable = range(max(len(out) - keep_last, 0))
    for i in changeable:
        if excess <= 0:
            return out
        message = out[i]
        if message.role == "tool" and message.tool_call_id in calls:
            name, step = calls[message.tool_call_id]
            stub = ELIDED_OUTPUT.format(tool=name, step=step)
            if len(stub) < len(message.content):
                out[i] = dataclasses.replace(message, content=stub)
                excess -= len(message.content) - len(stub)
    for i in changeable:
        if excess <= 0:
            break
        message = out[i]
        if message.role == "assistant" and message.tool_calls:
            shrunk = [_shrink_arguments(call) for call in message.tool_calls]
            saved = sum(
                _arguments_chars(a) - _arguments_chars(b) for a, b in zip(message.tool_calls, shrunk, strict=True)
            )
            if saved > 0:
                out[i] = dataclasses.replace(message, tool_calls=shrunk)
                excess -= saved
    return out


class TranscriptCompactor:
    """Compacts one run's growing transcript for each model request, changing what was sent before rarely.

    The vendors cache a request's longest byte prefix shared with an earlier one. Compacting anew each step
    would move the cut every step and rewrite a message near the front, missing the cache from there on. So
    every message compacted once stays exactly as it was sent, and compaction happens only when the transcript
    outgrows `max_chars`, then down to `COMPACT_TO` of it.
    """

    def __init__(self, max_chars: int, *, keep_last: int = KEEP_LAST, compact_to: float = COMPACT_TO) -> None:
        self.max_chars = max_chars
        self.keep_last = keep_last
        self.target = int(max_chars * compact_to)
        self._sent: dict[int, ChatMessage] = {}  # index in the transcript -> the compacted form it was sent in

    def __call__(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """`messages` as the model gets them; every earlier request's messages are a prefix, unless compacted."""
        out = [self._sent.get(i, message) for i, message in enumerate(messages)]
        if transcript_chars(out) <= self.max_chars:
            return out
        # The cached prefix breaks here, once per COMPACT_TO of the budget: from the first message this call
        # compacts, every later one is sent as the vendor has not seen it.
        compacted = compact_transcript(out, max_chars=self.target, keep_last=self.keep_last)
        self._sent.update((i, new) for i, (old, new) in enumerate(zip(out, compacted, strict=True)) if new is not old)
        return compacted


def _calls_by_id(messages: list[ChatMessage]) -> dict[str, tuple[str, int]]:
    """Tool call id -> (tool name, step), a step being one model reply that made tool calls."""
    found, step = {}, 0
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            step += 1
            for call in message.tool_calls:
                found[call.id] = (call.name, step)
    return found


def _arguments_chars(call: ToolCall) -> int:
    arguments = call.arguments
    return len(arguments) if isinstance(arguments, str) else len(json.dumps(arguments, ensure_ascii=False))


def _shrink_arguments(call: ToolCall) -> ToolCall:
    if not isinstance(call.arguments, dict):
        return call
    shrunk = {
        key: ELIDED_ARGUMENT.format(size=f"{len(value):,}")
        if isinstance(value, str) and len(value) > ARGUMENT_KEEP_CHARS
        else value
        for key, value in call.arguments.items()
    }
    return call if shrunk == call.arguments else dataclasses.replace(call, arguments=shrunk)
