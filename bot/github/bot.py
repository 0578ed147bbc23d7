"""What every GitHub webhook handler works with: the service, the App and the `github` code host."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.github.apps import GitHubApp
from bot.github.codehost import GitHubCodeHost
from service.automations.events import TriggerEvent
from service.services import Services

# What a pull request merged in a source repository starts: (bot, installation id, event, delivery id).
SourceChangeHook = Callable[["GitHubBot", int, TriggerEvent, str], None]


@dataclass
class GitHubBot:
    """The service, the App (its clients and slug) and the `github` code host, the one way handlers reach GitHub."""

    services: Services
    app: GitHubApp
    host: GitHubCodeHost
    # What a merged source pull request starts; None: the automations watching its repository run on it
    # (bot.github.sources.fire_automations).
    on_source_change: SourceChangeHook | None = None
