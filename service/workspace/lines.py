"""Reads lines from a byte stream without ever holding the stream, or one long line, whole."""

from collections.abc import Iterator
from typing import IO

_CHUNK = 1 << 16


class LineReader:
    """Lines of a stream, each cut to `max_line` bytes (its full length reported), plus what is left."""

    def __init__(self, stream: IO[bytes], max_line: int) -> None:
        self._stream = stream
        self._max_line = max_line
        self._buf = b""
        self._pos = 0  # where the unread part of _buf starts
        self._eof = False

    def head(self, size: int) -> bytes:
        """The next `size` bytes (fewer at the end), left unread."""
        self._fill(size)
        return self._buf[self._pos : self._pos + size]

    def lines(self) -> Iterator[tuple[bytes, int]]:
        """(the line's first `max_line` bytes without `\\n` or `\\r\\n`, its full length) for each next line."""
        while True:
            end = self._buf.find(b"\n", self._pos)
            if end < 0 and not self._eof and len(self._buf) - self._pos <= self._max_line:
                self._fill(len(self._buf) - self._pos + _CHUNK)
                continue
            if end >= 0:
                line = self._buf[self._pos : min(end, self._pos + self._max_line + 1)]
                length, self._pos = end - self._pos, end + 1
            elif self._pos < len(self._buf) and self._eof:
                line = self._buf[self._pos : self._pos + self._max_line + 1]
                length, self._pos = len(self._buf) - self._pos, len(self._buf)
            elif self._eof:
                return
            else:
                line = self._buf[self._pos : self._pos + self._max_line + 1]
                length = self._skip_line()
            yield (line.removesuffix(b"\r") if length <= self._max_line else line[: self._max_line]), length

    def skip_lines(self, count: int) -> int:
        """Consume up to `count` lines, counting newlines a chunk at a time; return how many there were."""
        skipped, pending = 0, False  # pending: part of a line was dropped and its newline is still to come
        while skipped < count:
            if self._pos >= len(self._buf):
                self._buf, self._pos = b"", 0
                if self._eof:
                    break
                self._fill(_CHUNK)
                continue
            newlines = self._buf.count(b"\n", self._pos)
            if skipped + newlines >= count:
                for _ in range(count - skipped):
                    self._pos = self._buf.index(b"\n", self._pos) + 1
                return count
            skipped += newlines
            pending = not self._buf.endswith(b"\n")
            self._buf, self._pos = b"", 0
        return skipped + (1 if pending and skipped < count else 0)

    def count_lines(self) -> int:
        """How many lines are left (a last line without `\\n` counts), reading the rest in chunks."""
        rest = self._buf[self._pos :]
        count, last = rest.count(b"\n"), rest[-1:]
        self._buf, self._pos = b"", 0
        while not self._eof:
            chunk = self._stream.read(_CHUNK)
            if not chunk:
                self._eof = True
                break
            count += chunk.count(b"\n")
            last = chunk[-1:]
        return count + (1 if last and last != b"\n" else 0)

    def _fill(self, size: int) -> None:
        if self._pos:
            self._buf, self._pos = self._buf[self._pos :], 0
        while len(self._buf) < size and not self._eof:
            chunk = self._stream.read(_CHUNK)
            if chunk:
                self._buf += chunk
            else:
                self._eof = True

    def _skip_line(self) -> int:
        """Consume a line longer than the buffer holds; return its length."""
        length = len(self._buf) - self._pos
        self._buf, self._pos = b"", 0
        while True:
            chunk = self._stream.read(_CHUNK)
            if not chunk:
                self._eof = True
                return length
            end = chunk.find(b"\n")
            if end >= 0:
                self._buf = chunk[end + 1 :]
                return length + end
            length += len(chunk)
