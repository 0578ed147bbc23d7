"""Which handler runs for which webhook event: the routing table of the GitHub App, run by the worker."""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from gidgethub.sansio import Event

from bot.github import checks, comments, installations, pulls, repositories, sources
from bot.github.apps import GitHubApp
from bot.github.codehost import GitHubCodeHost
from service import logcontext
from service.services import Services

log = logging.getLogger(__name__)


@dataclass
class GitHubBot:
    """What a handler works with: the service, the App (its clients and slug) and the `github` code host."""

    services: Services
    app: GitHubApp
    host: GitHubCodeHost
    # What a pull request merged in a watched source repository starts: the automations watching it.
    on_source_change: sources.SourceChangeHook = field(default=sources.fire_automations)


Handler = Callable[[GitHubBot, Event], None]


class Router:
    """Handlers by event name and action; gidgethub's Router is the model, but it dispatches with `await`."""

    def __init__(self) -> None:
        self._routes: dict[tuple[str, str | None], list[Handler]] = {}

    def add(self, handler: Handler, event: str, action: str | None = None) -> None:
        """Run `handler` for `event` (only with this `action` when one is given)."""
        self._routes.setdefault((event, action), []).append(handler)

    def handlers(self, event: str, action: str | None) -> list[Handler]:
        """The handlers for one delivery, those for any action first."""
        found = list(self._routes.get((event, None), []))
        if action is not None:
            found += self._routes.get((event, action), [])
        return found

    @property
    def events(self) -> frozenset[str]:
        return frozenset(event for event, _action in self._routes)


ROUTER = Router()
ROUTER.add(installations.installation_created, "installation", "created")
ROUTER.add(installations.installation_deleted, "installation", "deleted")
ROUTER.add(installations.installation_suspended, "installation", "suspend")
ROUTER.add(installations.installation_unsuspended, "installation", "unsuspend")
ROUTER.add(installations.repositories_added, "installation_repositories", "added")
ROUTER.add(installations.repositories_removed, "installation_repositories", "removed")
ROUTER.add(comments.issue_comment_created, "issue_comment", "created")
ROUTER.add(comments.review_comment_created, "pull_request_review_comment", "created")
ROUTER.add(comments.review_submitted, "pull_request_review", "submitted")
ROUTER.add(pulls.pull_closed, "pull_request", "closed")
ROUTER.add(sources.source_pull_merged, "pull_request", "closed")
ROUTER.add(checks.check_run_completed, "check_run", "completed")
ROUTER.add(checks.check_suite_completed, "check_suite", "completed")
ROUTER.add(checks.status_changed, "status")
ROUTER.add(repositories.repository_moved, "repository", "renamed")
ROUTER.add(repositories.repository_moved, "repository", "transferred")

HANDLED_EVENTS = ROUTER.events


def handles(event: str, action: str | None) -> bool:
    """Whether a delivery of `event` with `action` has work to do (the webhook endpoint asks before queueing)."""
    return bool(ROUTER.handlers(event, action))


def handle(bot: GitHubBot, event_name: str, delivery_id: str, payload: dict) -> None:
    """Run the handlers of one webhook delivery (in the worker, after the endpoint queued it)."""
    event = Event(payload, event=event_name, delivery_id=delivery_id)
    action = payload.get("action")
    # The delivery id tags the handlers' log lines the way a request id tags an API call's.
    logcontext.set_request(f"gh_{delivery_id}")
    try:
        for handler in ROUTER.handlers(event_name, action):
            log.info("delivery %s: %s.%s -> %s", delivery_id, event_name, action, handler.__name__)
            handler(bot, event)
    finally:
        logcontext.set_request(None)
