"""JSON encoding of records kept in Redis."""

import json


def dump(record) -> str:
    """Serialise a record dataclass (anything with `to_dict`)."""
    return json.dumps(record.to_dict(), separators=(",", ":"), sort_keys=True)


def load(cls, raw: bytes | str | None):
    """Deserialise a record of type `cls`, or None when the key was missing."""
    if raw is None:
        return None
    return cls.from_dict(json.loads(raw))
