"""The vendors' prompt caches as the model stand-in reports them: which input tokens a request reads from cache.

Tokens are estimated as bytes / 4 of each part's canonical JSON (sorted keys, `cache_control` left out, since
moving a breakpoint does not change the content). Caches are kept per model, for the stand-in's lifetime (the
vendors' time-to-live, minutes, is longer than any test).

- Anthropic (prompt caching with `cache_control`): the prompt is a list of blocks in the order tools, system,
  messages. A breakpoint writes the prefix up to and including its block (when it is at least
  `ANTHROPIC_MIN_TOKENS` long); a request reads the longest prefix written earlier that ends at one of the 20
  blocks up to a breakpoint of its own. Usage: `cache_read_input_tokens`, `cache_creation_input_tokens` (from the
  read prefix to the last breakpoint) and `input_tokens` (the rest).
- OpenAI (automatic caching): the prompt is the tools then the messages as one byte string; prompts of at least
  `OPENAI_MIN_TOKENS` are cached in steps of `OPENAI_STEP_TOKENS`, and a request reads the longest such step
  shared with an earlier one. Usage: `prompt_tokens` (all) of which `prompt_tokens_details.cached_tokens`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass

BYTES_PER_TOKEN = 4
ANTHROPIC_MIN_TOKENS = 1024  # Claude Sonnet and Opus; the Haiku models need more
ANTHROPIC_LOOKBACK_BLOCKS = 20
ANTHROPIC_MAX_BREAKPOINTS = 4
OPENAI_MIN_TOKENS = 1024
OPENAI_STEP_TOKENS = 128


@dataclass(frozen=True)
class CacheUsage:
    """A request's input tokens: all of them, and of those the ones read from and written to the cache."""

    total: int
    read: int = 0
    written: int = 0

    @property
    def uncached(self) -> int:
        return self.total - self.read - self.written


def tokens_of(data: bytes) -> int:
    return -(-len(data) // BYTES_PER_TOKEN)


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _without_marker(block: dict) -> dict:
    return {k: v for k, v in block.items() if k != "cache_control"}


class AnthropicCache:
    """Anthropic's prompt cache: prefixes written at `cache_control` breakpoints, read back by later requests."""

    def __init__(self) -> None:
        self._written: set[bytes] = set()
        self._lock = threading.Lock()

    @staticmethod
    def blocks(body: dict) -> list[tuple[dict, bool]]:
        """The request's prompt as (block, carries a breakpoint) pairs: tools, system, then message blocks."""
        out: list[tuple[dict, bool]] = [
            ({"tool": _without_marker(t)}, "cache_control" in t) for t in body.get("tools") or []
        ]
        system = body.get("system")
        if isinstance(system, str):
            system = [{"type": "text", "text": system}] if system else []
        out += [({"system": _without_marker(b)}, "cache_control" in b) for b in system or []]
        for i, message in enumerate(body["messages"]):
            content = message["content"]
            content = [{"type": "text", "text": content}] if isinstance(content, str) else content
            out += [
                ({"message": i, "role": message["role"], "block": _without_marker(b)}, "cache_control" in b)
                for b in content
            ]
        if body.get("cache_control") and out:  # automatic caching: a breakpoint on the last block
            out[-1] = (out[-1][0], True)
        return out

    @staticmethod
    def breakpoints(body: dict) -> int:
        """How many breakpoints the request sets (the API refuses more than four)."""
        return sum(marked for _, marked in AnthropicCache.blocks(body))

    def use(self, body: dict) -> CacheUsage:
        """Read and write the cache for one request; its input tokens split the way the API reports them."""
        seed = hashlib.sha256(str(body.get("model")).encode())
        hashes, ends, marks = [], [], []
        total = 0
        for block, marked in self.blocks(body):
            data = _canonical(block)
            seed.update(len(data).to_bytes(8, "big") + data)
            hashes.append(seed.digest())
            total += tokens_of(data)
            ends.append(total)
            marks.append(marked)
        points = [i for i, marked in enumerate(marks) if marked]
        with self._lock:
            candidates = {j for p in points for j in range(max(0, p - ANTHROPIC_LOOKBACK_BLOCKS + 1), p + 1)}
            hit = max((j for j in candidates if hashes[j] in self._written), default=-1)
            read = ends[hit] if hit >= 0 else 0
            written = 0
            for p in points:
                if p > hit and ends[p] >= ANTHROPIC_MIN_TOKENS:
                    self._written.add(hashes[p])
                    written = ends[p] - read
        return CacheUsage(total, read, written)


class OpenAICache:
    """OpenAI's automatic prompt cache: the longest step-aligned byte prefix an earlier request shared."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()

    @staticmethod
    def prompt(body: dict) -> bytes:
        """The request's prompt as one byte string: the tools, then each message."""
        parts = [_canonical(tool) for tool in body.get("tools") or []]
        parts += [_canonical(message) for message in body["messages"]]
        return b"".join(parts)

    def use(self, body: dict) -> CacheUsage:
        """Read and write the cache for one request; `read` is the cached part of its prompt tokens."""
        data = self.prompt(body)
        total = tokens_of(data)
        if total < OPENAI_MIN_TOKENS:
            return CacheUsage(total)
        digest = hashlib.sha256(str(body.get("model")).encode())
        done = 0
        steps: list[tuple[int, bytes]] = []
        for step_tokens in range(OPENAI_MIN_TOKENS, total + 1, OPENAI_STEP_TOKENS):
            end = step_tokens * BYTES_PER_TOKEN
            digest.update(data[done:end])
            done = end
            steps.append((step_tokens, digest.copy().digest()))
        with self._lock:
            read = max((n for n, h in steps if h in self._seen), default=0)
            self._seen.update(h for _, h in steps)
        return CacheUsage(total, read)
