"""Compacting a job's earlier conversation and a run's transcript: budgets kept, the essentials never lost."""

from itertools import pairwise

import pytest

from service.agent.compaction import (
    KEEP_LAST,
    NOTE_HEAD,
    TranscriptCompactor,
    compact_history,
    compact_transcript,
    history_chars,
    transcript_chars,
)
from service.agent.loop import AgentTask, build_messages
from service.agent.model import ChatMessage, ToolCall


def conversation(rounds: int, size: int = 600) -> list[tuple[str, str]]:
    history = []
    for n in range(1, rounds + 1):
        history.append(("user", f"Request {n}: " + "please change the docs " * (size // 23)))
        history.append(("agent", f"Answer {n}: " + "I changed the pages " * (size // 20)))
    return history


# --- compact_history -----------------------------------------------------------------------------------


def test_a_conversation_within_budget_is_returned_as_is():
    history = conversation(3)
    compacted = compact_history(history, max_chars=history_chars(history))
    assert compacted == history and compacted is not history


@pytest.mark.parametrize("budget", [20_000, 30_000])
def test_fifty_rounds_keep_the_first_prompt_and_the_last_rounds_within_budget(budget):
    history = conversation(50)
    compacted = compact_history(history, max_chars=budget)
    assert history_chars(compacted) <= budget < history_chars(history)
    assert compacted[0] == history[0]
    assert compacted[-2:] == history[-2:]
    note = compacted[1]
    assert note[0] == "agent" and note[1].startswith(NOTE_HEAD)
    assert "1. answered “Answer 1:" in note[1] and "asked “Request 2:" in note[1]
    verbatim = compacted[2:]
    assert verbatim == history[-len(verbatim) :]  # the most recent rounds, whole
    assert len(verbatim) >= 4 and verbatim[0][0] == "user"
    roles = [role for role, _ in compacted]
    assert all(a != b for a, b in pairwise(roles))  # user and agent still take turns


def test_a_modest_excess_squeezes_older_messages_instead_of_replacing_them():
    history = conversation(6)
    compacted = compact_history(history, max_chars=history_chars(history) - 1_000)
    assert len(compacted) == len(history)
    assert [role for role, _ in compacted] == [role for role, _ in history]
    assert compacted[0] == history[0] and compacted[-2:] == history[-2:]
    clipped = [new for new, old in zip(compacted, history, strict=True) if new != old]
    assert clipped and all("characters elided to save context]" in text for _, text in clipped)


def test_a_tight_budget_drops_the_oldest_rounds_from_the_note_and_says_so():
    history = conversation(50)
    compacted = compact_history(history, max_chars=3_000)
    assert history_chars(compacted) <= 3_000
    assert compacted[0] == history[0] and compacted[-2:] == history[-2:]
    assert "earlier round(s) left out." in compacted[1][1]
    assert "49. asked" in compacted[1][1]
    assert compacted[-2:] == history[-2:]


@pytest.mark.parametrize("budget", [1_000, 2_000, 5_000, 8_000])
def test_any_budget_is_kept_for_fifty_rounds(budget):
    history = conversation(50)
    compacted = compact_history(history, max_chars=budget)
    assert history_chars(compacted) <= budget
    assert compacted[0][1].startswith("Request 1:") and compacted[-1][1].startswith("Answer 50:")


def test_huge_single_messages_are_clipped_with_a_note():
    history = [("user", "First " + "a" * 50_000), ("agent", "ok"), ("user", "Last " + "b" * 50_000)]
    compacted = compact_history(history, max_chars=10_000)
    assert history_chars(compacted) <= 10_000
    assert [role for role, _ in compacted] == ["user", "agent", "user"]
    assert compacted[0][1].startswith("First aaa") and compacted[2][1].startswith("Last bbb")
    assert compacted[0][1].endswith("characters elided to save context]")
    assert compacted[1] == ("agent", "ok")


def test_compacted_history_builds_a_valid_first_request():
    compacted = compact_history(conversation(50), max_chars=8_000)
    messages = build_messages(AgentTask("Now fix the FAQ", history=compacted))
    assert [m.role for m in messages[:3]] == ["system", "user", "assistant"]
    assert messages[-1].content == "Now fix the FAQ"


# --- compact_transcript --------------------------------------------------------------------------------


def run_transcript(steps: int, output_size: int = 5_000) -> list[ChatMessage]:
    """A run's messages: system, prompt, then per step one assistant turn with two calls and their results."""
    messages = [ChatMessage("system", "You are Copydesk."), ChatMessage("user", "Fix the install docs")]
    for step in range(1, steps + 1):
        calls = [
            ToolCall(f"s{step}a", "read_file", {"path": f"docs/p{step}.md"}),
            ToolCall(f"s{step}b", "write_file", {"path": f"docs/p{step}.md", "content": "w" * 3_000}),
        ]
        messages.append(ChatMessage("assistant", f"step {step}", calls))
        messages.append(ChatMessage("tool", f"page {step}\n" + "r" * output_size, tool_call_id=f"s{step}a"))
        messages.append(ChatMessage("tool", f"replaced docs/p{step}.md", tool_call_id=f"s{step}b", is_error=True))
    return messages


def assert_pairing_valid(messages: list[ChatMessage]) -> None:
    """Every tool message answers a call made by an earlier assistant message, once."""
    called, answered = set(), set()
    for message in messages:
        if message.role == "assistant":
            called |= {call.id for call in message.tool_calls}
        if message.role == "tool":
            assert message.tool_call_id in called - answered, message.tool_call_id
            answered.add(message.tool_call_id)
    assert answered == called


def test_a_transcript_within_budget_is_a_copy():
    messages = run_transcript(3)
    compacted = compact_transcript(messages, max_chars=transcript_chars(messages))
    assert compacted == messages and compacted is not messages


def test_the_oldest_tool_outputs_become_stubs_and_the_pairing_stays_valid():
    messages = run_transcript(30)
    before = [(m.role, m.content, list(m.tool_calls)) for m in messages]
    compacted = compact_transcript(messages, max_chars=60_000)
    assert [(m.role, m.content, list(m.tool_calls)) for m in messages] == before  # input untouched
    assert transcript_chars(compacted) <= 60_000
    assert len(compacted) == len(messages)
    assert_pairing_valid(compacted)
    assert compacted[:2] == messages[:2] and compacted[-6:] == messages[-6:]
    assert compacted[3].content == (
        "[read_file output from step 1 elided to save context; call the tool again if you need it]"
    )
    assert compacted[3].tool_call_id == "s1a" and compacted[4].is_error
    stubbed = [i for i, (new, old) in enumerate(zip(compacted, messages, strict=True)) if new.content != old.content]
    assert stubbed == sorted(stubbed) and stubbed[0] == 3
    assert compacted[stubbed[-1] + 3] == messages[stubbed[-1] + 3]  # later outputs kept whole


def test_long_arguments_of_old_calls_are_elided_when_stubs_are_not_enough():
    messages = run_transcript(30)
    compacted = compact_transcript(messages, max_chars=25_000)
    assert_pairing_valid(compacted)
    first_call = compacted[2].tool_calls[1]
    assert first_call.id == "s1b" and first_call.arguments == {
        "path": "docs/p1.md",
        "content": "[3,000 characters elided to save context]",
    }
    assert messages[2].tool_calls[1].arguments["content"] == "w" * 3_000
    assert compacted[-6:] == messages[-6:]
    assert transcript_chars(compacted) <= 25_000


def test_protected_messages_are_never_changed_even_over_budget():
    messages = run_transcript(2, output_size=50_000)
    messages[1] = ChatMessage("user", "Fix the docs " + "x" * 50_000)
    compacted = compact_transcript(messages, max_chars=1_000, keep_last=3)
    assert compacted[:2] == messages[:2] and compacted[-3:] == messages[-3:]
    assert compacted[3].content.startswith("[read_file output from step 1 elided")
    assert transcript_chars(compacted) > 1_000  # best effort: what is protected stays
    assert_pairing_valid(compacted)


def test_a_growing_transcript_is_compacted_in_chunks_so_earlier_requests_stay_its_prefix():
    """Step by step, each request repeats the previous one unchanged (a cache hit) except on the few steps where
    the transcript outgrew its budget; compacting from scratch every step changes an early message each time."""
    full = run_transcript(40, output_size=12_000)
    compact = TranscriptCompactor(200_000)
    sent_before: list[ChatMessage] = []
    rewrites, from_scratch_rewrites = 0, 0
    previous_scratch: list[ChatMessage] = []
    for end in range(5, len(full) + 1, 3):  # a request after each step: assistant turn + its two tool results
        sent = compact(full[:end])
        assert transcript_chars(sent) <= 200_000 and len(sent) == end
        assert_pairing_valid(sent)
        assert sent[:2] == full[:2] and sent[-KEEP_LAST:] == full[:end][-KEEP_LAST:]
        rewrites += sent[: len(sent_before)] != sent_before
        sent_before = sent
        scratch = compact_transcript(full[:end], max_chars=200_000)
        from_scratch_rewrites += scratch[: len(previous_scratch)] != previous_scratch
        previous_scratch = scratch
    assert from_scratch_rewrites >= 20  # what the vendors' caches used to miss
    print(rewrites, from_scratch_rewrites)
    assert 1 <= rewrites <= 8
