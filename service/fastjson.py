"""JSON on every API request's path (records, the key check's reply, request and response bodies, job events) by
orjson, which reads and writes it in C, several times faster than the standard library. Where orjson refuses what
the standard library takes, the standard library does the work, so nothing read or written before is refused now:
a lone surrogate (a file name that is not UTF-8 holds one), NaN and Infinity, keys that are not text, integers past
64 bits when writing.

What differs from `json`: text is written as UTF-8 rather than as ASCII escapes (both read back the same), and an
integer past 64 bits is read as a float. No record holds one: the API caps the numbers it takes (maxTokens at
10^10) and Redis's own counters stop at 2^63.
"""

import json
from collections.abc import Callable
from typing import Any

import orjson

_SORTED = orjson.OPT_SORT_KEYS
# Given a `default`, it decides dates and dataclasses too, which orjson would otherwise write its own way.
_DEFAULT_DECIDES = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def loads(raw: bytes | str) -> Any:
    """The value of the JSON document `raw` (UTF-8 bytes or text); ValueError (json.JSONDecodeError) if not JSON."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def dumps(
    value: Any, *, sort_keys: bool = False, indent: bool = False, default: Callable[[Any], Any] | None = None
) -> bytes:
    """`value` as compact JSON in UTF-8 (`indent`: two spaces a level); `default` turns what JSON has no type for
    into what it has, or raises TypeError."""
    option = (_SORTED if sort_keys else 0) | (orjson.OPT_INDENT_2 if indent else 0)
    if default is not None:
        option |= _DEFAULT_DECIDES
    try:
        return orjson.dumps(value, default=default, option=option)
    except orjson.JSONEncodeError:
        # ASCII escapes, as json writes by default: a lone surrogate has no UTF-8 form.
        separators = (",", ": ") if indent else (",", ":")
        text = json.dumps(
            value, sort_keys=sort_keys, indent=2 if indent else None, separators=separators, default=default
        )
        return text.encode()
