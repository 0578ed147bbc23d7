"""The latest docs check of each job, so its pull request's description keeps it after a round that ran none."""

import redis

from service.store.jobkeys import docs_check_key
from service.store.replies import text

TTL_SECONDS = 90 * 24 * 3600


class DocsChecks:
    """One text per job, replaced by each round that ran the docs check."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def latest(self, job_id: str, current: str | None) -> str | None:
        """`current` when this round has one (and it is remembered), else the last one remembered."""
        if current:
            self._redis.set(self._key(job_id), current, ex=TTL_SECONDS)
            return current
        found = self._redis.get(self._key(job_id))
        return text(found) if found is not None else None

    @staticmethod
    def _key(job_id: str) -> str:
        return docs_check_key(job_id)
