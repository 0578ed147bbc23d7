"""A repository renamed or transferred keeps its project: projects are found by the repository's GitHub id, and
their name, owner and jobs' `source.repository` follow the new one."""

from __future__ import annotations

import logging

from gidgethub.sansio import Event

from bot.github.bot import GitHubBot
from bot.github.codehost import HOST
from bot.github.routing import Router

log = logging.getLogger(__name__)
router = Router()


@router.register("repository", action="renamed")
@router.register("repository", action="transferred")
def repository_moved(bot: GitHubBot, event: Event) -> None:
    """`repository.renamed` or `repository.transferred`: the same project under the repository's new name."""
    repository = event.data["repository"]
    project = bot.services.projects.find_by_repository_id(HOST, repository["id"])
    if project is None:
        return
    installation = event.data.get("installation") or {}
    host_data = {"repository_id": repository["id"]}
    if installation.get("id"):
        host_data["installation_id"] = installation["id"]
    moved = bot.services.projects.move(
        project.id,
        repository=repository["full_name"],
        web_url=repository["html_url"],
        account=repository["owner"]["login"],
        host_data=host_data,
    )
    jobs = bot.services.jobs.move_repository(project.id, moved.web_url)
    log.info("project %s: %s is now %s (%s job(s) follow)", project.id, project.repository, moved.repository, jobs)
