"""The GitHub App as the rest of `bot` uses it: App and installation clients, tokens, and the App's slug."""

import time
from collections.abc import Callable
from typing import Any

import redis
import requests

from bot.github.auth import InstallationTokens, app_jwt
from bot.github.client import DEFAULT_TIMEOUT, GitHubClient
from bot.github.settings import GitHubSettings

SLUG_TTL = 24 * 3600  # the slug changes only when an owner renames the App


class GitHubApp:
    """Builds GitHub clients that authenticate as the App or as one of its installations."""

    def __init__(
        self,
        settings: GitHubSettings,
        client: redis.Redis,
        session: requests.Session,
        *,
        requester: str = "copydesk",
        sleep: Callable[[float], None] = time.sleep,
        max_wait: float = 60,
        retries: int = 3,
        backoff: float = 1.0,
        timeout: float | tuple[float, float] = DEFAULT_TIMEOUT,
    ) -> None:
        """`max_wait`, `retries`, `backoff` and `timeout` bound every client it builds (see GitHubClient)."""
        self.settings = settings
        self.redis = client
        self.session = session
        self._options: dict[str, Any] = {
            "requester": requester,
            "sleep": sleep,
            "max_wait": max_wait,
            "retries": retries,
            "backoff": backoff,
            "timeout": timeout,
        }
        self.tokens = InstallationTokens(client, settings, self.app_client)

    def app_client(self) -> GitHubClient:
        """A client that authenticates as the App (a fresh JWT for every request)."""
        return self._client(lambda: f"bearer {app_jwt(self.settings)}")

    def installation_client(
        self, installation_id: int, repository: str | None = None, repository_id: int | None = None
    ) -> GitHubClient:
        """A client that acts as the installation, with a token limited to the repository when given (by its id
        when known, as a rename keeps it).

        The token cache is read before every request, so a token that expires during a long job is replaced;
        a token GitHub refuses (401, e.g. revoked) is dropped from the cache and the request tried once more.
        """
        return self._client(
            lambda: f"token {self.tokens.token(installation_id, repository, repository_id)}",
            on_unauthorized=lambda: self.tokens.invalidate(installation_id, repository, repository_id),
        )

    def slug(self) -> str:
        """The App's slug (what people @mention), from GITHUB_APP_SLUG or GitHub, cached in Redis."""
        if self.settings.app_slug:
            return self.settings.app_slug
        key = f"cd:gh:app-slug:{self.settings.app_id}"
        cached = self.redis.get(key)
        if cached:
            return cached.decode() if isinstance(cached, bytes) else cached
        slug = self.app_client().getitem("/app")["slug"]
        self.redis.set(key, slug, ex=SLUG_TTL)
        return slug

    def _client(self, auth: Callable[[], str], *, on_unauthorized: Callable[[], None] | None = None) -> GitHubClient:
        return GitHubClient(
            self.session, api_url=self.settings.api_url, auth=auth, on_unauthorized=on_unauthorized, **self._options
        )

    def __repr__(self) -> str:
        return f"GitHubApp(app_id={self.settings.app_id!r}, api_url={self.settings.api_url!r})"
