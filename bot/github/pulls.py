"""Copydesk's pull requests: which job one belongs to, and the job's end when it is merged or closed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from gidgethub.sansio import Event

from bot.github.codehost import HOST
from service.codehost.base import CodeHostError
from service.models import Job, Project
from service.store.jobkeys import pull_state_key

if TYPE_CHECKING:
    from bot.github.events import GitHubBot

log = logging.getLogger(__name__)

BRANCH_PREFIX = "copydesk/"


def job_of_pull(bot: GitHubBot, repository: dict, pull: dict) -> tuple[Project, Job] | None:
    """The project and job of a pull request that Copydesk opened in `repository`; None for any other."""
    head = pull.get("head") or {}
    ref = head.get("ref") or ""
    # A fork may name its branch like ours: only a branch of the repository itself is a job's.
    if not ref.startswith(BRANCH_PREFIX) or (head.get("repo") or {}).get("id") != repository["id"]:
        return None
    project = bot.services.projects.find_by_repository(HOST, repository["full_name"])
    if project is None:
        return None
    job = bot.services.jobs.find(ref[len(BRANCH_PREFIX):])
    if job is None or job.project_id != project.id:
        return None
    # Once the job knows its pull request, an older or newer one on the same branch is not it.
    if job.pr_number is not None and job.pr_number != pull["number"]:
        return None
    return project, job


def pull_closed(bot: GitHubBot, event: Event) -> None:
    """A job's pull request was merged or closed: archive the job; after a merge, delete its branch."""
    pull = event.data["pull_request"]
    found = job_of_pull(bot, event.data["repository"], pull)
    if found is None:
        return
    project, job = found
    record_pull_state(bot.services.redis, job.id, "merged" if pull.get("merged") else "closed")
    bot.services.jobs.archive(job.id)
    log.info("job %s archived: pull request #%s %s", job.id, pull["number"],
             "merged" if pull.get("merged") else "closed")
    # GitHub deletes it itself when the repository says so.
    base_repository = (pull.get("base") or {}).get("repo") or {}
    if pull.get("merged") and not base_repository.get("delete_branch_on_merge"):
        _delete_branch(bot, project, pull["head"]["ref"])


def record_pull_state(redis_client, job_id: str, state: str) -> None:
    """Remember how a job's GitHub pull request ended ("merged" or "closed"), for the dashboard."""
    redis_client.set(pull_state_key(job_id), state)


def pull_state(redis_client, job: Job) -> str | None:
    """open, merged or closed for a job's GitHub pull request; None when it has none."""
    if job.pr_number is None:
        return None
    ended = redis_client.get(pull_state_key(job.id))
    return ended.decode() if ended else "open"


def pull_states(redis_client, jobs: list[Job]) -> dict[str, str]:
    """`pull_state` of every job that has a pull request, in one round trip."""
    with_pulls = [job for job in jobs if job.pr_number is not None]
    ended = redis_client.mget([pull_state_key(job.id) for job in with_pulls]) if with_pulls else []
    return {job.id: state.decode() if state else "open" for job, state in zip(with_pulls, ended, strict=True)}


def _delete_branch(bot: GitHubBot, project: Project, branch: str) -> None:
    try:
        bot.host.delete_branch(project, branch)
    except CodeHostError as exc:
        # Branch protection (or a rule set) may keep it; that is the repository's call, not an error.
        log.warning("kept branch %s of %s: %s", branch, project.repository, exc)
        return
    log.info("deleted branch %s of %s", branch, project.repository)
