"""Who a request is: the App (an RS256 JWT checked like GitHub checks it) or an installation (a token)."""

import base64
import binascii
import time

import jwt

from tests.github_emulator.app import TestApp
from tests.github_emulator.state import Repo, State, Token

MAX_JWT_LIFETIME = 600  # GitHub refuses an App JWT whose exp is more than 10 minutes after iat
CLOCK_SKEW = 60


class AuthError(Exception):
    """The request's credentials are missing or not accepted; carries GitHub's status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def credentials(header: str | None) -> tuple[str | None, str]:
    """(kind, secret) from an Authorization header: kind is "bearer", "token", "basic" or None."""
    if not header or " " not in header:
        return None, ""
    scheme, _, value = header.partition(" ")
    scheme = scheme.lower()
    if scheme == "basic":
        try:
            user, _, password = base64.b64decode(value.strip()).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return "basic", ""
        return "basic", password if user == "x-access-token" else ""
    return (scheme, value.strip()) if scheme in ("bearer", "token") else (None, "")


def is_jwt(secret: str) -> bool:
    return secret.count(".") == 2 and not secret.startswith("ghs_")


def verify_app_jwt(token: str, app: TestApp) -> None:
    """Accept `token` as the App's JWT or raise AuthError with GitHub's wording."""
    try:
        claims = jwt.decode(
            token,
            app.public_key_pem,
            algorithms=["RS256"],
            leeway=CLOCK_SKEW,
            options={"require": ["iat", "exp", "iss"]},
        )
    except jwt.ExpiredSignatureError:
        raise AuthError(
            401,
            "'Expiration time' claim ('exp') must be a numeric value representing the future "
            "time at which the assertion expires",
        ) from None
    except jwt.ImmatureSignatureError:
        raise AuthError(
            401, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
        ) from None
    except jwt.PyJWTError:
        raise AuthError(401, "A JSON web token could not be decoded") from None
    if claims["exp"] - claims["iat"] > MAX_JWT_LIFETIME or claims["exp"] > time.time() + MAX_JWT_LIFETIME + CLOCK_SKEW:
        raise AuthError(401, "'Expiration time' claim ('exp') is too far in the future")
    if str(claims["iss"]) not in (str(app.id), app.client_id):
        # GitHub checks the signature against the key of the App that `iss` names, so a foreign iss reads as a bad JWT.
        raise AuthError(401, "A JSON web token could not be decoded")


def installation_token(state: State, secret: str) -> Token:
    """The live token `secret` names, or AuthError 401 Bad credentials (unknown, expired or revoked)."""
    token = state.tokens.get(secret)
    if token is None or token.expires_at <= state.token_now():
        raise AuthError(401, "Bad credentials")
    return token


def can_see(state: State, token: Token, repo: Repo) -> bool:
    """Whether the token reaches `repo`: the installation holds it and the token was not narrowed away."""
    installation = state.installations.get(token.installation_id)
    if installation is None or repo.id not in installation.repo_ids:
        return False
    return token.repo_ids is None or repo.id in token.repo_ids
