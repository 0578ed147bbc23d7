"""GitHub App authentication: the App's JWT, and installation tokens cached in Redis for every process."""

import logging
import time
from collections.abc import Callable
from datetime import datetime

import redis
from gidgethub import BadRequest
from gidgethub.apps import get_jwt

from bot.github.client import GitHubClient
from bot.github.secretbox import SecretBox
from bot.github.settings import GitHubSettings
from service.settings import SettingsError

log = logging.getLogger(__name__)

# GitHub refuses a JWT whose `exp` is more than 10 minutes ahead. gidgethub backdates `iat` by 60 s
# for clock drift and sets `exp = iat + expiration`, so 10 minutes of lifetime end 9 minutes from now.
JWT_LIFETIME = 10 * 60
# A cached token is dropped this long before GitHub's `expires_at`, so a job never starts a git push
# with a token about to lapse; tokens that live under TOKEN_SHORT_LIFE are kept half their life instead.
TOKEN_MARGIN = 5 * 60
TOKEN_SHORT_LIFE = 10 * 60


class InstallationGone(Exception):
    """The App's installation was removed (404) or suspended (403): no token can be minted for it."""

    def __init__(self, installation_id: int, reason: str) -> None:
        super().__init__(f"GitHub App installation {installation_id} is {reason}")
        self.installation_id = installation_id
        self.reason = reason


class RepositoryNotGranted(InstallationGone):
    """The installation does not give the App access to the repository a token was asked for (never given, taken
    out of the installation, or deleted)."""


def app_jwt(settings: GitHubSettings) -> str:
    """A fresh RS256 JWT that authenticates as the App (iat backdated 60 s, exp 9 minutes from now).

    gidgethub reads the clock itself, so no `now` can be passed in; its claims are what GitHub asks for.
    """
    if not (settings.app_id and settings.private_key):
        raise SettingsError("GITHUB_APP_ID and GITHUB_PRIVATE_KEY (or GITHUB_PRIVATE_KEY_PATH) must be set")
    return get_jwt(app_id=settings.app_id, private_key=settings.private_key, expiration=JWT_LIFETIME)


class InstallationTokens:
    """Installation access tokens, minted on demand and cached (encrypted) in Redis for web and workers."""

    def __init__(
        self,
        client: redis.Redis,
        settings: GitHubSettings,
        client_factory: Callable[[], GitHubClient],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not settings.private_key:
            raise SettingsError("GITHUB_PRIVATE_KEY (or GITHUB_PRIVATE_KEY_PATH) must be set")
        self._redis = client
        self._app_client = client_factory  # an App-authenticated (JWT) client
        self._clock = clock
        self._box = SecretBox(settings.private_key)

    def token(
        self,
        installation_id: int,
        repository: str | None = None,
        repository_id: int | None = None,
        *,
        read_only: bool = False,
    ) -> str:
        """A valid token for the installation, limited to the repository with `repository_id` when given (a
        rename does not change it), else to `repository` ("owner/name") when given; with `read_only`, it may
        only read the repository's contents (a round's source repository)."""
        key = self._key(installation_id, repository, repository_id) + (":ro" if read_only else "")
        sealed = self._redis.get(key)
        token = self._box.unseal(sealed) if sealed else None
        if token:
            return token
        token, expires_at = self._mint(installation_id, repository, repository_id, read_only)
        ttl = _cache_seconds(expires_at - self._clock())
        if ttl > 0:
            self._redis.set(key, self._box.seal(token), px=max(1, int(ttl * 1000)))
        return token

    def invalidate(self, installation_id: int, repository: str | None = None, repository_id: int | None = None) -> None:
        """Forget the cached token (e.g. after GitHub refused it), so the next call mints a new one."""
        self._redis.delete(self._key(installation_id, repository, repository_id))

    def _mint(
        self, installation_id: int, repository: str | None, repository_id: int | None, read_only: bool = False
    ) -> tuple[str, float]:
        # Limited to one repository: a token that leaks from a job reaches only that job's repository.
        body: dict = (
            {"repository_ids": [int(repository_id)]}
            if repository_id is not None
            else {"repositories": [repository.rsplit("/", 1)[-1]]}
            if repository
            else {}
        )
        if read_only:
            body["permissions"] = {"contents": "read", "metadata": "read"}
        try:
            # Idempotent: a second mint after a lost answer only leaves an unused token to expire.
            answer = self._app_client().post(
                "/app/installations/{installation_id}/access_tokens",
                {"installation_id": installation_id},
                data=body,
                idempotent=True,
            )
        except BadRequest as exc:
            if exc.status_code == 404:
                raise InstallationGone(installation_id, "gone (the App was uninstalled)") from exc
            if exc.status_code == 403 and "suspended" in str(exc).lower():
                raise InstallationGone(installation_id, "suspended") from exc
            if exc.status_code == 422 and (repository or repository_id is not None):
                # The repository was taken out of the installation (or deleted): no token can reach it.
                raise RepositoryNotGranted(installation_id, f"no longer given access to {repository}") from exc
            raise
        log.info(
            "minted a token for installation %s%s",
            installation_id,
            f" limited to {repository or f'repository {repository_id}'}" if repository or repository_id else "",
        )
        return answer["token"], datetime.fromisoformat(answer["expires_at"]).timestamp()

    @staticmethod
    def _key(installation_id: int, repository: str | None, repository_id: int | None = None) -> str:
        if repository_id is not None:
            scope = f"#{int(repository_id)}"
        else:
            scope = repository.lower() if repository else "*"  # GitHub names are case-insensitive
        return f"cd:gh:token:{int(installation_id)}:{scope}"


def _cache_seconds(lifetime: float) -> float:
    """How long a token with `lifetime` seconds left stays in the cache."""
    if lifetime < TOKEN_SHORT_LIFE:
        return lifetime / 2
    return lifetime - TOKEN_MARGIN
