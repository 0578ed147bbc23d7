"""redis-py's replies as the types the store works with: its annotations cannot know our clients return bytes."""

from collections.abc import Callable
from typing import TypeVar, cast

import redis

T = TypeVar("T")


def text(reply: object) -> str:
    """A string reply as text (the clients are made without `decode_responses`, so replies are bytes)."""
    if isinstance(reply, bytes):
        return reply.decode()
    if isinstance(reply, str):
        return reply
    raise TypeError(f"expected a Redis string reply, got {type(reply).__name__}")


def transaction(client: redis.Redis, attempt: Callable[[redis.client.Pipeline], T], *watches: str) -> T:
    """Run `attempt` in a WATCH/MULTI transaction on `watches` (again after a conflicting write); its value."""
    # redis-py annotates the callable as returning None, though value_from_callable returns what it returns.
    run = cast(Callable[[redis.client.Pipeline], None], attempt)
    return cast(T, client.transaction(run, *watches, value_from_callable=True))
