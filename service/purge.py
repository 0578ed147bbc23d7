"""Purging an account's data some days after it left (its GitHub App installation was deleted), unless it comes back.

Due purges are a Redis sorted set, `<host>:<account>` scored by the Unix time the purge is due; the workers' upkeep
runs the due ones. A purge deletes the account's projects on that host with their jobs (records, prompts,
conversations, events, per-job usage), webhook endpoints, automations and API keys. The monthly usage totals stay
(they expire on their own), as do branches and pull requests on the code host.
"""

import logging
import time
from dataclasses import dataclass
from typing import cast

from service.errors import JobActive
from service.services import Services
from service.store.replies import text

log = logging.getLogger(__name__)

PURGES = "cd:purges"
RETRY_SECONDS = 3600  # a purge that found a run still going tries again this much later


@dataclass(frozen=True)
class PurgeResult:
    host: str
    account: str
    projects: int
    jobs: int
    keys: int
    left: int  # jobs whose run was still going: the purge comes back for them

    @property
    def done(self) -> bool:
        return self.left == 0


def _member(host: str, account: str) -> str:
    return f"{host}:{account}"


class AccountPurges:
    """Schedules, cancels and runs the purges of accounts that left."""

    def __init__(self, services: Services) -> None:
        self._s = services
        self._redis = services.redis

    def schedule(self, host: str, account: str, *, now: float | None = None) -> float:
        """Purge the account's data on `host` after the configured days; returns when (Unix time)."""
        due = (time.time() if now is None else now) + self._s.settings.purge_days * 86400
        self._redis.zadd(PURGES, {_member(host, account): due})
        log.info(
            "account %s on %s left: its data is purged at %s unless it comes back",
            account,
            host,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(due)),
        )
        return due

    def cancel(self, host: str, account: str) -> bool:
        """The account came back before its purge: keep its data. True when a purge was scheduled."""
        cancelled = bool(self._redis.zrem(PURGES, _member(host, account)))
        if cancelled:
            log.info("account %s on %s came back: its purge is cancelled", account, host)
        return cancelled

    def due_at(self, host: str, account: str) -> float | None:
        return self._redis.zscore(PURGES, _member(host, account))

    def run_due(self, now: float | None = None) -> list[PurgeResult]:
        """Run every purge due by `now` (default: the current time)."""
        moment = time.time() if now is None else now
        results = []
        for member in [text(raw) for raw in cast(list, self._redis.zrangebyscore(PURGES, "-inf", moment))]:
            host, _, account = member.partition(":")
            result = self.purge(host, account)
            if result.done:
                # Unless it was moved meanwhile: the account came back (cancelled) and left again (a later date).
                score = self._redis.zscore(PURGES, member)
                if score is not None and score <= moment:
                    self._redis.zrem(PURGES, member)
            else:
                self._redis.zadd(PURGES, {member: moment + RETRY_SECONDS})
            results.append(result)
        return results

    def purge(self, host: str, account: str) -> PurgeResult:
        """Delete the account's disabled projects on `host` with their jobs and webhooks, and its keys there."""
        projects = jobs = left = 0
        for project in self._s.projects.all():
            if project.host != host or project.account != account or project.enabled:
                continue  # an enabled project came back with a new installation: keep it
            deleted, kept = self._purge_jobs(project.id)
            jobs, left = jobs + deleted, left + kept
            for endpoint in self._s.webhooks.of_project(project.id):
                self._s.webhooks.delete(project.id, endpoint.id)
            self._s.automations.delete_project(project.id)
            if not kept:
                self._s.projects.delete(project)
                projects += 1
        keys = [k for k in self._s.keys.of_account(account) if k.code_host == host]
        for key in keys:
            self._s.keys.delete(key.id)
        if not self._s.keys.of_account(account):
            self._s.keys.forget_audit(account)
        result = PurgeResult(host, account, projects, jobs, len(keys), left)
        log.info(
            "purged account %s on %s: %d project(s), %d job(s), %d key(s)%s",
            account,
            host,
            projects,
            jobs,
            len(keys),
            f"; {left} job(s) still running, tried again later" if left else "",
        )
        return result

    def _purge_jobs(self, project_id: str) -> tuple[int, int]:
        """Delete every job of the project; (deleted, left running)."""
        deleted = left = 0
        cursor = None
        while True:
            page, cursor = self._s.jobs.page(project_id, status=None, limit=500, cursor=cursor)
            for job in page:
                self._s.jobs.archive(job.id)  # cancels what waits; a run under way finishes
                try:
                    self._s.jobs.delete(job.id)
                    deleted += 1
                except JobActive:
                    left += 1
            if cursor is None:
                return deleted, left
