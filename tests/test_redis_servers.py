"""The tests' own redis-servers: a port taken between picking and binding it must not hand a test another
test's Redis."""

import redis

from tests import redis_servers
from tests.redis_servers import NO_PERSISTENCE, running_redis


def test_a_taken_port_is_given_up_for_another_and_the_server_is_this_ones(tmp_path, monkeypatch):
    with running_redis(tmp_path / "other", *NO_PERSISTENCE) as other_url:
        taken = redis.Redis.from_url(other_url)
        taken_port = taken.connection_pool.connection_kwargs["port"]
        picks = iter([taken_port])
        fresh = redis_servers._free_port
        monkeypatch.setattr(redis_servers, "_free_port", lambda: next(picks, None) or fresh())
        with running_redis(tmp_path / "mine", *NO_PERSISTENCE) as url:
            assert url != other_url
            mine = redis.Redis.from_url(url)
            mine.set("whose", "mine")
            assert taken.get("whose") is None  # the other test's server was never used as this one's
            mine.close()
        taken.close()
