"""What every GitHub webhook handler works with: the service, the App and the `github` code host."""

from dataclasses import dataclass

from bot.github.apps import GitHubApp
from bot.github.codehost import GitHubCodeHost
from service.services import Services


@dataclass
class GitHubBot:
    """The service, the App (its clients and slug) and the `github` code host, the one way handlers reach GitHub."""

    services: Services
    app: GitHubApp
    host: GitHubCodeHost
