"""Copydesk's pull requests: which job one belongs to, and the job's end when it is merged or closed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from gidgethub.sansio import Event

from bot.github.codehost import HOST
from service.codehost.base import CodeHostError
from service.models import Job, Project
from service.store.pullstates import pull_state, pull_states, record_pull_state

__all__ = ["job_of_pull", "pull_closed", "pull_state", "pull_states", "record_pull_state"]

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


def _delete_branch(bot: GitHubBot, project: Project, branch: str) -> None:
    try:
        bot.host.delete_branch(project, branch)
    except CodeHostError as exc:
        # Branch protection (or a rule set) may keep it; that is the repository's call, not an error.
        log.warning("kept branch %s of %s: %s", branch, project.repository, exc)
        return
    log.info("deleted branch %s of %s", branch, project.repository)
