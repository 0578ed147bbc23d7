"""The operator's one-time sign-in link (`copydesk dashboard login-link`): admin over the local accounts."""

import hashlib
import secrets

import redis

from bot.dashboard.sessions import LOCAL_KIND, Account
from service.codehost.local import HOST as LOCAL_HOST
from service.store.projects import ProjectStore

LINK_TTL_SECONDS = 15 * 60
LOGIN_LINK_COMMAND = "copydesk dashboard login-link"
LOCAL_ACCOUNT = "local"


def issue_login_link(redis_client: redis.Redis, base_url: str) -> str:
    """A new one-time sign-in link, valid for LINK_TTL_SECONDS; Redis keeps only the token's SHA-256."""
    token = secrets.token_urlsafe(32)
    redis_client.set(_key(token), "1", ex=LINK_TTL_SECONDS)
    return f"{base_url.rstrip('/')}/dashboard/login/link?token={token}"


def use_login_token(redis_client: redis.Redis, token: str) -> bool:
    """Use up a login token: True exactly once per issued token (one atomic command, so two tabs race safely)."""
    return bool(token) and len(token) <= 100 and bool(redis_client.delete(_key(token)))


def local_accounts(projects: ProjectStore) -> list[Account]:
    """The accounts the operator administers: `local` and every account that owns a local project."""
    names = {LOCAL_ACCOUNT} | {p.account for p in projects.all() if p.host == LOCAL_HOST}
    return [Account(login=name, kind=LOCAL_KIND, admin=True) for name in sorted(names)]


def _key(token: str) -> str:
    return f"cd:dash:login-link:{hashlib.sha256(token.encode()).hexdigest()}"
