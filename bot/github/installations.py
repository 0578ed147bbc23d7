"""Projects follow the App's installations: one per repository, disabled (jobs kept) when access ends, purged
some days after the App is uninstalled."""

from __future__ import annotations

import logging

from gidgethub import BadRequest
from gidgethub.sansio import Event

from bot.github.bot import GitHubBot
from bot.github.codehost import HOST
from bot.github.routing import Router
from service.models import Project
from service.projectstate import DisabledReason
from service.purge import AccountPurges

log = logging.getLogger(__name__)
router = Router()


@router.register("installation", action="created")
def installation_created(bot: GitHubBot, event: Event) -> None:
    """The App was installed: every repository it can see becomes a project (or is enabled again), and a purge of
    the account's data, due since an earlier uninstall, is called off."""
    AccountPurges(bot.services).cancel(HOST, event.data["installation"]["account"]["login"])
    _ensure_projects(bot, event.data["installation"], event.data.get("repositories") or [])


@router.register("installation_repositories", action="added")
def repositories_added(bot: GitHubBot, event: Event) -> None:
    """Repositories were added to an installation: each becomes a project (or is enabled again)."""
    _ensure_projects(bot, event.data["installation"], event.data.get("repositories_added") or [])


@router.register("installation_repositories", action="removed")
def repositories_removed(bot: GitHubBot, event: Event) -> None:
    """Repositories were taken out of an installation: their projects are disabled, their jobs kept."""
    for repository in event.data.get("repositories_removed") or []:
        project = bot.services.projects.find_by_repository(HOST, repository["full_name"])
        if project is not None:
            _disable(bot, project, DisabledReason.INSTALLATION_REMOVED)


@router.register("installation", action="deleted")
def installation_deleted(bot: GitHubBot, event: Event) -> None:
    """The App was uninstalled: every project of the installation is disabled, and the account's data is purged
    after COPYDESK_PURGE_DAYS unless it installs the App again before."""
    for project in _projects_of(bot, event.data["installation"]["id"]):
        _disable(bot, project, DisabledReason.INSTALLATION_REMOVED)
    AccountPurges(bot.services).schedule(HOST, event.data["installation"]["account"]["login"])


@router.register("installation", action="suspend")
def installation_suspended(bot: GitHubBot, event: Event) -> None:
    """The installation was suspended: its projects are disabled until it is unsuspended."""
    for project in _projects_of(bot, event.data["installation"]["id"]):
        _disable(bot, project, DisabledReason.INSTALLATION_SUSPENDED)


@router.register("installation", action="unsuspend")
def installation_unsuspended(bot: GitHubBot, event: Event) -> None:
    """The installation was unsuspended: the projects its suspension disabled take work again (unless an admin
    switched them off too; a repository removed from the installation stays disabled)."""
    for project in _projects_of(bot, event.data["installation"]["id"]):
        if project.disabled_reason == DisabledReason.INSTALLATION_SUSPENDED:
            project = bot.services.projects.enable(project.id, by_host=True)
            log.info(
                "project %s (%s) unsuspended: %s",
                project.id,
                project.repository,
                "enabled again" if project.enabled else "still disabled by an admin",
            )


def _ensure_projects(bot: GitHubBot, installation: dict, repositories: list[dict]) -> None:
    # One client for all repositories: a token per repository would cost a round trip each.
    client = bot.app.installation_client(installation["id"])
    account = installation["account"]["login"]
    for listed in repositories:
        owner, _, name = listed["full_name"].partition("/")
        try:
            repository = client.getitem("/repos/{owner}/{repo}", {"owner": owner, "repo": name})
        except BadRequest as exc:
            # Deleted or renamed since the delivery was sent; a later event will bring the new name.
            log.warning(
                "installation %s: repository %s is not readable (%s); no project for it",
                installation["id"],
                listed["full_name"],
                exc.status_code,
            )
            continue
        project, created = bot.services.projects.ensure(
            account=account,
            host=HOST,
            repository=repository["full_name"],
            web_url=repository["html_url"],
            ref=repository["default_branch"],
            host_data={"installation_id": installation["id"], "repository_id": repository["id"]},
        )
        log.info(
            "project %s for %s %s",
            project.id,
            project.repository,
            "created" if created else "enabled" if project.enabled else "updated (still disabled by an admin)",
        )


def _projects_of(bot: GitHubBot, installation_id: int) -> list[Project]:
    return [
        p
        for p in bot.services.projects.all()
        if p.host == HOST and p.host_data.get("installation_id") == installation_id
    ]


def _disable(bot: GitHubBot, project: Project, reason: DisabledReason) -> None:
    changed = bot.services.projects.disable(project.id, reason)
    log.info("project %s (%s) disabled: %s", project.id, project.repository, changed.disabled_reason)
