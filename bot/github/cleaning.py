"""GitHub-sourced text made safe for a prompt: hidden parts removed, the rest fenced as data."""

import re

# Text a reader of the rendered comment on GitHub never sees, so it must not reach the model either.
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u00ad"
# Bidirectional controls can make text read differently from what the model is given ("Trojan Source").
_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
# Unicode "tag" characters render as nothing but spell out ASCII to a model.
_TAGS = "".join(chr(c) for c in range(0xE0000, 0xE0080))
_INVISIBLE = str.maketrans("", "", _ZERO_WIDTH + _BIDI + _TAGS)
_BACKTICKS = re.compile(r"`+")


def strip_invisible(text: str) -> str:
    """`text` without zero-width and bidirectional control characters, with `\\n` line ends."""
    return text.replace("\r\n", "\n").replace("\r", "\n").translate(_INVISIBLE)


def clean(text: str) -> str:
    """A comment body without HTML comments and invisible characters, trimmed."""
    return _HTML_COMMENT.sub("", strip_invisible(text)).strip()


def fence(text: str, info: str = "") -> str:
    """`text` in a Markdown code fence longer than any run of backticks inside it, so it cannot close early."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    marker = "`" * max(3, longest + 1)
    return f"{marker}{info}\n{text}\n{marker}"
