"""Reading lines from a stream without holding it whole agrees with splitting the whole text."""

import io
import itertools
import random

import pytest

from service.workspace.lines import LineReader


def reference(data: bytes, max_line: int) -> list[tuple[bytes, int]]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [((line.removesuffix(b"\r") if len(line) <= max_line else line[:max_line]), len(line)) for line in lines]


def samples():
    rng = random.Random(9)
    yield b""
    yield b"one line without newline"
    yield b"a\r\nb\r\n\r\n\nlast"
    yield b"\n" * 200_000
    yield b"x" * 300_000 + b"\nshort\n" + b"y" * 70_000  # lines longer than the buffer, no final newline
    yield b"".join(rng.choice([b"", b"word ", b"\r", b"\n", b"z" * 5000]) for _ in range(40_000))


@pytest.mark.parametrize("data", list(samples()), ids=lambda d: f"{len(d)}-bytes")
def test_lines_skips_and_counts_agree_with_splitting(data):
    expected = reference(data, 100)
    assert list(LineReader(io.BytesIO(data), 100).lines()) == expected
    for skip in {0, 1, 2, len(expected) // 2, max(len(expected) - 1, 0), len(expected), len(expected) + 5}:
        reader = LineReader(io.BytesIO(data), 100)
        assert reader.head(10) == data[:10]
        skipped = reader.skip_lines(skip)
        assert skipped == min(skip, len(expected))
        following = list(itertools.islice(reader.lines(), 3))
        assert following == expected[skipped : skipped + 3]
        assert skipped + len(following) + reader.count_lines() == len(expected)
