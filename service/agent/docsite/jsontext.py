"""JSON from repository files, bounded in size and depth."""

import json

from service.agent.docsite.limits import MAX_CONFIG_BYTES, MAX_DEPTH, Uncheckable, check_depth, check_size

JSONDecodeError = json.JSONDecodeError


def load_json(text: str, *, max_bytes: int = MAX_CONFIG_BYTES):
    """The value of a JSON document; raises JSONDecodeError when it does not parse, Uncheckable past a cap."""
    check_size(text, max_bytes)
    try:
        value = json.loads(text)
    except RecursionError:
        raise Uncheckable(f"nested deeper than {MAX_DEPTH} levels") from None
    check_depth(value)
    return value
