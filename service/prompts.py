"""The rules a prompt must pass, whichever door it comes through (the API, the dashboard, a GitHub comment)."""

import re

from service.errors import InvalidRequest

_SURROGATE = re.compile("[\ud800-\udfff]")


def check_prompt(prompt: str, max_chars: int) -> str:
    """`prompt` when it is not empty, at most `max_chars` long and Unicode text; else InvalidRequest."""
    if len(prompt) < 1:
        raise InvalidRequest("`prompt` must not be empty", field="prompt")
    if len(prompt) > max_chars:
        raise InvalidRequest(f"`prompt` is longer than {max_chars} characters", field="prompt")
    return check_text(prompt, "prompt")


def check_text(value: str, field: str) -> str:
    """`value`, or InvalidRequest naming `field` when it holds a lone surrogate: not Unicode text, it cannot be
    encoded as UTF-8, so it could be neither stored nor shown."""
    found = _SURROGATE.search(value)
    if found is not None:
        code = ord(found.group())
        raise InvalidRequest(
            f"`{field}` is not valid Unicode text: it holds a lone surrogate (U+{code:04X} at "
            f"character {found.start()}), half of a UTF-16 pair such as the escape \\u{code:04x}; "
            "send whole characters only",
            field=field,
        )
    return value
