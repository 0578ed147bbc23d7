"""The diff of a GitHub job's pull request for the job page: read from GitHub with the installation's token,
bounded in size and time, cached briefly per job and head commit. When GitHub cannot give it, the page says why
instead of failing."""

import json
import logging
from dataclasses import dataclass

import redis
import requests
from gidgethub import GitHubException

from bot.github.apps import GitHubApp
from bot.github.auth import InstallationGone
from bot.github.client import GitHubUnavailable
from bot.github.diffs import PullDiff, pull_diff
from bot.github.settings import GitHubSettings
from service.models import Job, Project
from service.store.jobkeys import diff_cache_key

log = logging.getLogger(__name__)

MAX_BYTES = 512 * 1024  # past this a diff is more than a page can usefully show; the pull request has the rest
CACHE_SECONDS = 60  # long enough for a page's reloads and live updates, short enough for a person's own push
# A page waits on these: short time-outs, one quick retry, and no waiting out rate limits.
TIMEOUT = (3.0, 5.0)
RETRIES = 1
BACKOFF = 0.25


@dataclass(frozen=True)
class ShownDiff:
    """What the job page shows of a GitHub pull request's diff: its text, or why there is none."""

    text: str | None
    truncated: bool = False
    problem: str | None = None


class DiffUnavailable(Exception):
    """GitHub could not give the diff; the message says why, in words for the job page."""


class GitHubDiffs:
    """Reads GitHub jobs' diffs for the dashboard; `app` is None when no GitHub App is configured."""

    def __init__(
        self, app: GitHubApp | None, redis_client: redis.Redis, *, max_bytes: int = MAX_BYTES, ttl: int = CACHE_SECONDS
    ) -> None:
        self._app = app
        self._redis = redis_client
        self.max_bytes = max_bytes
        self._ttl = ttl

    def for_job(self, project: Project, job: Job, head: str | None) -> ShownDiff:
        """The diff of the job's pull request; `head` is the job's last commit, so a new one is read afresh."""
        key = diff_cache_key(job.id, job.pr_number, head)
        cached = self._redis.get(key)
        if cached:
            return ShownDiff(**json.loads(cached))
        try:
            found = self._fetch(project, job)
        except DiffUnavailable as exc:
            # Not cached: the next view asks GitHub again.
            return ShownDiff(None, problem=str(exc))
        shown = ShownDiff(found.text, found.truncated)
        self._redis.set(key, json.dumps({"text": shown.text, "truncated": shown.truncated}), ex=self._ttl)
        return shown

    def _fetch(self, project: Project, job: Job) -> PullDiff:
        if self._app is None:
            raise DiffUnavailable("no GitHub App is configured on this Copydesk")
        if job.pr_number is None:
            raise DiffUnavailable("the job has no pull request yet")
        owner, _, name = project.repository.partition("/")
        try:
            client = self._app.installation_client(int(project.host_data["installation_id"]), project.repository)
            return pull_diff(client, owner, name, job.pr_number, max_bytes=self.max_bytes)
        except _FAILURES as exc:
            reason = _reason(exc)
            log.warning("job %s: no diff from GitHub for %s#%s: %s", job.id, project.repository, job.pr_number, reason)
            raise DiffUnavailable(reason) from exc


# What reading a diff from GitHub can fail with; KeyError, TypeError and ValueError come from a project without
# an installation id or an answer not shaped like GitHub's.
_FAILURES = (
    InstallationGone,
    GitHubUnavailable,
    GitHubException,
    requests.RequestException,
    KeyError,
    TypeError,
    ValueError,
)


def _reason(exc: Exception) -> str:
    """Why GitHub gave no diff, in words for the page."""
    if isinstance(exc, InstallationGone):
        return f"{exc}; reinstall the App or re-enable the installation"
    if isinstance(exc, GitHubUnavailable):
        return str(exc)
    if isinstance(exc, GitHubException):
        status = getattr(exc, "status_code", None)
        return "GitHub refused" + (f" (HTTP {int(status)})" if status else "") + f": {exc}"
    if isinstance(exc, requests.RequestException):
        return f"GitHub could not be reached ({exc.__class__.__name__})"
    return "the project's GitHub details or GitHub's answer are not what Copydesk expects"


def build(settings: GitHubSettings, redis_client: redis.Redis) -> GitHubDiffs:
    """The dashboard's diff reader, with a GitHub App whose clients are bounded for a page that waits on them."""
    app = None
    if settings.configured:
        app = GitHubApp(
            settings, redis_client, requests.Session(), max_wait=0, retries=RETRIES, backoff=BACKOFF, timeout=TIMEOUT
        )
    return GitHubDiffs(app, redis_client)
