"""The GitHub App's webhook events: every handler module's router combined once, run by the worker."""

import logging

from gidgethub.sansio import Event

from bot.github import checks, comments, installations, pulls, repositories, sources
from bot.github.bot import GitHubBot
from bot.github.routing import Router
from service import logcontext

log = logging.getLogger(__name__)

# A new handler module registers its handlers on its own `router`, and is added here.
ROUTER = Router(
    installations.router,
    comments.router,
    pulls.router,
    sources.router,
    checks.router,
    repositories.router,
)

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
