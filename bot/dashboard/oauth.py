"""Sign-in with GitHub through the App's OAuth web flow, and what the user-to-server token may be asked.

The token is used only for `GET /user`, `GET /user/installations` and the user's org membership (their role);
it stays sealed in the session and is never logged.
"""

import json
import logging
import secrets
from typing import NamedTuple
from urllib.parse import urlencode

import redis
import requests
from gidgethub import BadRequest, HTTPException

from bot.dashboard.sessions import Account
from bot.github.client import GitHubClient, GitHubUnavailable
from bot.github.settings import GitHubSettings

log = logging.getLogger(__name__)

STATE_TTL_SECONDS = 600
CALLBACK_PATH = "/dashboard/login/github/callback"


class SignInFailed(Exception):
    """GitHub did not complete the sign-in; `title` and `detail` are shown to the person."""

    def __init__(self, title: str, detail: str, status: int = 400) -> None:
        super().__init__(detail)
        self.title, self.detail, self.status = title, detail, status


class AuthorizationRevoked(SignInFailed):
    """GitHub refused the user-to-server token: the person revoked Copydesk's authorization, or it expired."""

    def __init__(self) -> None:
        super().__init__(
            "Your GitHub authorization ended",
            "GitHub no longer accepts Copydesk's authorization for your account (it was revoked or "
            "it expired). Sign in again to continue.",
            401,
        )


class Grant(NamedTuple):
    """A finished sign-in: the user-to-server token, the page to return to, and the token's lifetime in seconds
    (None when GitHub gave none: an App whose user tokens do not expire)."""

    token: str
    next_path: str
    expires_in: int | None


class GitHubSignIn:
    """The OAuth web flow for the App's client, and the user-token calls the dashboard makes."""

    def __init__(
        self,
        settings: GitHubSettings,
        redis_client: redis.Redis,
        base_url: str,
        session: requests.Session | None = None,
    ) -> None:
        self._settings = settings
        self._redis = redis_client
        self._http = session or requests.Session()
        self.redirect_uri = base_url.rstrip("/") + CALLBACK_PATH

    # -- the web flow ----------------------------------------------------------------------------

    def start(self, browser_nonce: str, next_path: str) -> str:
        """A new `state`, bound to this browser's nonce cookie and the page to return to; returns GitHub's
        authorize URL."""
        state = secrets.token_urlsafe(24)
        self._redis.set(_state_key(state), json.dumps([browser_nonce, next_path]), ex=STATE_TTL_SECONDS)
        query = urlencode(
            {
                "client_id": self._settings.client_id,
                "redirect_uri": self.redirect_uri,
                "state": state,
                "allow_signup": "false",
            }
        )
        return f"{self._settings.web_url}/login/oauth/authorize?{query}"

    def finish(self, *, state: str, code: str, browser_nonce: str) -> Grant:
        """Check `state` (once, for this browser) and exchange `code` for a user-to-server token; returns the
        token, how long it lasts and the page to return to."""
        stored = self._redis.getdel(_state_key(state)) if state and len(state) <= 100 else None
        expected, next_path = json.loads(stored) if stored else ("", "")
        if not expected or not browser_nonce or not secrets.compare_digest(expected, browser_nonce):
            raise SignInFailed(
                "Sign-in link expired",
                "This sign-in did not start here, was used already or took longer than "
                f"{STATE_TTL_SECONDS // 60} minutes. Start again from the sign-in page.",
            )
        if not code or len(code) > 200:
            raise SignInFailed("Sign-in not finished", "GitHub sent no authorization code. Start again.")
        try:
            response = self._http.post(
                f"{self._settings.web_url}/login/oauth/access_token",
                timeout=(5, 15),
                headers={"Accept": "application/json"},
                data={
                    "client_id": self._settings.client_id,
                    "client_secret": self._settings.client_secret,
                    "code": code,
                    "redirect_uri": self.redirect_uri,
                },
            )
            answer = response.json() if response.ok else {}
        except (requests.RequestException, ValueError) as exc:
            log.warning("GitHub's token exchange failed: %s", exc.__class__.__name__)
            raise SignInFailed(
                "GitHub did not answer",
                "Copydesk could not reach GitHub to finish the sign-in. Try again in a moment.",
                502,
            ) from None
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            log.info("GitHub refused the sign-in code: %s", answer.get("error") or f"HTTP {response.status_code}")
            raise SignInFailed(
                "GitHub refused the sign-in",
                "GitHub did not accept the sign-in code (it works once, for a few minutes). "
                "Start again from the sign-in page.",
            )
        return Grant(token, next_path, _lifetime(answer.get("expires_in")))

    # -- what the token is used for ---------------------------------------------------------------

    def user_login(self, token: str) -> str:
        """The signed-in person's login (`GET /user`)."""
        return self._call(token, lambda client: client.getitem("/user"))["login"]

    def accounts(self, token: str, login: str) -> list[Account]:
        """The accounts whose installations of the App the user can access, each with whether they are its admin:
        their own user account, or an org where their membership is active with the role admin."""

        def fetch(client: GitHubClient) -> list[Account]:
            found = []
            for inst in client.getiter("/user/installations", iterable_key="installations"):
                if str(self._settings.app_id).isdigit() and str(inst.get("app_id")) != str(self._settings.app_id):
                    continue  # another App's installation: GitHub lists only ours, but never trust that
                owner = inst["account"]
                kind = owner.get("type", "User")
                admin = (
                    owner["login"].lower() == login.lower() if kind == "User" else _org_admin(client, owner["login"])
                )
                found.append(Account(login=owner["login"], kind=kind, admin=admin, installation_id=inst["id"]))
            return found

        return self._call(token, fetch)

    def _call(self, token: str, work):
        client = GitHubClient(
            self._http,
            api_url=self._settings.api_url,
            auth=lambda: f"Bearer {token}",
            retries=1,
            max_wait=5,
            backoff=0.2,
            timeout=(5, 15),
        )
        try:
            return work(client)
        except BadRequest as exc:
            if exc.status_code == 401:
                raise AuthorizationRevoked() from None
            log.warning("GitHub refused a sign-in call (HTTP %s)", exc.status_code)
            raise SignInFailed(
                "GitHub refused",
                "GitHub refused to tell who you are or which accounts you can see "
                f"(HTTP {exc.status_code}). Try again, or ask the App's owner.",
                502,
            ) from None
        except (GitHubUnavailable, HTTPException, requests.RequestException, KeyError, TypeError) as exc:
            log.warning("a sign-in call to GitHub failed: %s", exc.__class__.__name__)
            raise SignInFailed(
                "GitHub did not answer",
                "Copydesk could not check your accounts with GitHub. Try again in a moment.",
                502,
            ) from None


def _org_admin(client: GitHubClient, org: str) -> bool:
    """Whether the user is an active admin of `org`; anything else, a refusal included, is no (fail closed)."""
    try:
        membership = client.getitem("/user/memberships/orgs/{org}", {"org": org})
    except BadRequest as exc:
        if exc.status_code == 401:
            raise
        return False
    return membership.get("state") == "active" and membership.get("role") == "admin"


def _lifetime(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _state_key(state: str) -> str:
    return f"cd:dash:oauth-state:{state}"
