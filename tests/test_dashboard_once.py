"""One-time values of a dashboard session (a new API key, a webhook secret): each kept under its own expiry."""

from bot.dashboard.sessions import OPERATOR, SessionStore
from tests.harness import wait_until


def _store(redis_client) -> SessionStore:
    return SessionStore(redis_client, idle_seconds=3600, max_seconds=8 * 3600, seal_key=lambda: b"k" * 32)


def _session(store: SessionStore):
    return store.load(store.create(login="operator", source=OPERATOR, accounts=[]))


def test_a_new_value_does_not_shorten_the_wait_of_an_earlier_one(redis_client):
    store = _store(redis_client)
    session = _session(store)
    store.keep_once(session, "webhook-secret:prj_1", "whsec_secret", 600)
    store.keep_once(session, "new-key:key_1", "cdk_key", 1)
    remaining = sorted(redis_client.pttl(k) for k in redis_client.keys("cd:dash:once:*"))
    assert len(remaining) == 2 and remaining[0] <= 1000 and remaining[1] > 590_000
    assert all(b"whsec_secret" not in redis_client.get(k) for k in redis_client.keys("cd:dash:once:*"))
    wait_until(lambda: len(redis_client.keys("cd:dash:once:*")) == 1, 5, "the short-lived value to expire")
    assert store.take_once(session, "new-key:key_1") is None
    assert store.take_once(session, "webhook-secret:prj_1") == "whsec_secret"
    assert store.take_once(session, "webhook-secret:prj_1") is None  # once only


def test_ending_the_session_drops_its_values_and_leaves_other_sessions_alone(redis_client):
    store = _store(redis_client)
    mine, theirs = _session(store), _session(store)
    store.keep_once(mine, "a", "one", 600)
    store.keep_once(mine, "b", "two", 600)
    store.keep_once(theirs, "a", "three", 600)
    store.end(mine)
    assert store.take_once(mine, "a") is None and store.take_once(mine, "b") is None
    assert store.take_once(theirs, "a") == "three"
    store.end(theirs)
    assert redis_client.keys("cd:dash:once*") == []
