"""JSON encoding of records kept in Redis."""

import json


def dump(record) -> str:
    """Serialise a record dataclass (anything with `to_dict`)."""
    return json.dumps(record.to_dict(), separators=(",", ":"), sort_keys=True)


def load(cls, raw: bytes | str | None):
    """Deserialise a record of type `cls`, or None when the key was missing."""
    if raw is None:
        return None
    # Decoded here, as UTF-8 (dump writes nothing else): json.loads would first sniff a byte string's encoding.
    return cls.from_dict(json.loads(raw.decode() if isinstance(raw, bytes) else raw))
