"""Which handler runs for which webhook event: a router each handler module registers its handlers on.

Shaped like gidgethub's `routing.Router` (`@router.register("pull_request", action="closed")`, and
`Router(*routers)` to combine the modules' routers once), but synchronous: gidgethub's router dispatches with
`await`, while our handlers run in an RQ worker on the blocking `requests` client and Redis, and the webhook
endpoint must also ask whether a delivery has any handler before it queues it, which gidgethub's router does not
answer.
"""

from collections.abc import Callable

from gidgethub.sansio import Event

from bot.github.bot import GitHubBot

Handler = Callable[[GitHubBot, Event], None]


class Router:
    """Handlers by event name and action; `Router(a, b)` holds the routes of `a` then those of `b`."""

    def __init__(self, *others: "Router") -> None:
        self._routes: dict[tuple[str, str | None], list[Handler]] = {}
        for other in others:
            for key, handlers in other._routes.items():
                self._routes.setdefault(key, []).extend(handlers)

    def register(self, event: str, *, action: str | None = None) -> Callable[[Handler], Handler]:
        """A decorator: run the handler for `event` (only with this `action` when one is given)."""

        def add(handler: Handler) -> Handler:
            self._routes.setdefault((event, action), []).append(handler)
            return handler

        return add

    def handlers(self, event: str, action: str | None) -> list[Handler]:
        """The handlers for one delivery, those for any action first."""
        found = list(self._routes.get((event, None), []))
        if action is not None:
            found += self._routes.get((event, action), [])
        return found

    def routes(self) -> list[tuple[str, str | None, Handler]]:
        """Every (event, action, handler) registered, in order."""
        return [(event, action, handler) for (event, action), handlers in self._routes.items() for handler in handlers]

    @property
    def events(self) -> frozenset[str]:
        """Every event some handler is registered for (what the App must subscribe to)."""
        return frozenset(event for event, _action in self._routes)
