"""JSON encoding of records kept in Redis."""

from service import fastjson


def dump(record) -> bytes:
    """Serialise a record dataclass (anything with `to_dict`)."""
    return fastjson.dumps(record.to_dict(), sort_keys=True)


def load(cls, raw: bytes | str | None):
    """Deserialise a record of type `cls`, or None when the key was missing."""
    if raw is None:
        return None
    return cls.from_dict(fastjson.loads(raw))
