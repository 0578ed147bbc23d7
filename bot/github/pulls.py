"""Copydesk's pull requests: which job one belongs to, and the job's end when it is merged or closed."""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from gidgethub.sansio import Event

from bot.github.bot import GitHubBot
from bot.github.codehost import HOST
from bot.github.routing import Router
from service.codehost.base import CodeHostError
from service.models import Job, Message, Project
from service.store.pullstates import pull_state, pull_states, record_pull_state
from service.tracking import post_queued

__all__ = ["announce_round", "job_of_pull", "pull_closed", "pull_state", "pull_states", "record_pull_state"]

log = logging.getLogger(__name__)
router = Router()

BRANCH_PREFIX = "copydesk/"


def job_of_pull(bot: GitHubBot, project: Project, repository: dict, pull: dict) -> Job | None:
    """The job of a pull request that Copydesk opened in `repository` (the project's); None for any other."""
    head = pull.get("head") or {}
    ref = head.get("ref") or ""
    # A fork may name its branch like ours: only a branch of the repository itself is a job's.
    if not ref.startswith(BRANCH_PREFIX) or (head.get("repo") or {}).get("id") != repository["id"]:
        return None
    job = bot.services.jobs.find(ref[len(BRANCH_PREFIX) :])
    if job is None or job.project_id != project.id:
        return None
    # Once the job knows its pull request, an older or newer one on the same branch is not it.
    if job.pr_number is not None and job.pr_number != pull["number"]:
        return None
    return job


def announce_round(bot: GitHubBot, project: Project, number: int) -> Callable[[Job, Message], None]:
    """What the intake calls once a round's message is stored, before its run is queued: the round's tracking
    comment on pull request `number`, which the run then edits rather than posting its own. It never raises, as the
    message is stored by then."""

    def announce(job: Job, message: Message) -> None:
        try:
            post_queued(bot.services.redis, bot.host, project, number, message)
        except (CodeHostError, redis.RedisError) as exc:
            log.warning("job %s: could not post the tracking comment of %s: %s", job.id, message.id, exc)

    return announce


@router.register("pull_request", action="closed")
def pull_closed(bot: GitHubBot, event: Event) -> None:
    """A job's pull request was merged or closed: archive the job; after a merge, delete its branch."""
    pull, repository = event.data["pull_request"], event.data["repository"]
    project = bot.services.projects.find_by_repository(HOST, repository["full_name"])
    job = job_of_pull(bot, project, repository, pull) if project is not None else None
    if project is None or job is None:
        return
    record_pull_state(bot.services.redis, job.id, "merged" if pull.get("merged") else "closed")
    bot.services.jobs.archive(job.id)
    log.info(
        "job %s archived: pull request #%s %s", job.id, pull["number"], "merged" if pull.get("merged") else "closed"
    )
    # GitHub deletes it itself when the repository says so.
    base_repository = (pull.get("base") or {}).get("repo") or {}
    if pull.get("merged") and not base_repository.get("delete_branch_on_merge"):
        _delete_branch(bot, project, pull["head"]["ref"])


def _delete_branch(bot: GitHubBot, project: Project, branch: str) -> None:
    try:
        bot.host.delete_branch(project, branch)
    except CodeHostError as exc:
        # Branch protection (or a rule set) may keep it; that is the repository's call, not an error.
        log.warning("kept branch %s of %s: %s", branch, project.repository, exc)
        return
    log.info("deleted branch %s of %s", branch, project.repository)
