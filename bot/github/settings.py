"""The GitHub App's configuration, read once from `GITHUB_*` environment variables."""

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from bot.github import privatekey
from service.settings import SettingsError

DEFAULT_API_URL = "https://api.github.com"

# GitHub accepts the numeric App ID or the App's client ID ("Iv1.…", "Iv23…") as the JWT issuer.
_APP_ID = re.compile(r"\d+|Iv[0-9A-Za-z.]+")


@dataclass(frozen=True)
class GitHubSettings:
    app_id: str | None = None
    private_key: str | None = field(default=None, repr=False)  # PEM text
    webhook_secret: str | None = field(default=None, repr=False)
    api_url: str = DEFAULT_API_URL
    web_url: str = ""  # empty: derived from api_url (see web_url_for)
    app_slug: str | None = None
    # The App's OAuth client, for the dashboard's sign-in with GitHub.
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # Frozen, so normalised through object.__setattr__; tests build settings directly with an emulator URL.
        object.__setattr__(self, "api_url", self.api_url.rstrip("/"))
        object.__setattr__(self, "web_url", (self.web_url or web_url_for(self.api_url)).rstrip("/"))

    @property
    def configured(self) -> bool:
        """True when the App can authenticate and verify webhooks (id, private key and secret are set)."""
        return bool(self.app_id and self.private_key and self.webhook_secret)

    @property
    def sign_in(self) -> bool:
        """True when people can sign in to the dashboard with GitHub (the App and its OAuth client are set)."""
        return self.configured and bool(self.client_id and self.client_secret)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "GitHubSettings":
        """Read the `GITHUB_*` variables; a value that cannot work raises SettingsError naming the variable."""
        env = os.environ if environ is None else environ
        return cls(
            app_id=_app_id(env),
            private_key=_private_key(env),
            webhook_secret=env.get("GITHUB_WEBHOOK_SECRET") or None,
            api_url=_url(env, "GITHUB_API_URL", DEFAULT_API_URL),
            web_url=_url(env, "GITHUB_WEB_URL", ""),
            app_slug=(env.get("GITHUB_APP_SLUG") or "").strip() or None,
            client_id=(env.get("GITHUB_CLIENT_ID") or "").strip() or None,
            client_secret=(env.get("GITHUB_CLIENT_SECRET") or "").strip() or None,
        )


def web_url_for(api_url: str) -> str:
    """The web address that goes with an API address: github.com, a GHE.com tenant, or GitHub Enterprise Server.

    `https://api.github.com` -> `https://github.com`, `https://HOST/api/v3` -> `https://HOST`; any other
    address (an emulator) serves both from one origin.
    """
    parts = urlsplit(api_url)
    if parts.path.rstrip("/") == "/api/v3":
        return urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    if parts.hostname and parts.hostname.startswith("api.") and parts.path in ("", "/"):
        return urlunsplit((parts.scheme, parts.netloc[len("api.") :], "", "", ""))
    return api_url


def _url(env: Mapping[str, str], name: str, default: str) -> str:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SettingsError(f"{name} must be an http(s) URL, not {raw!r}")
    return raw.rstrip("/")


def _app_id(env: Mapping[str, str]) -> str | None:
    raw = (env.get("GITHUB_APP_ID") or "").strip()
    if not raw:
        return None
    if not _APP_ID.fullmatch(raw):
        raise SettingsError(f"GITHUB_APP_ID must be the App's numeric ID or its client ID, not {raw!r}")
    return raw


def _private_key(env: Mapping[str, str]) -> str | None:
    inline, path = env.get("GITHUB_PRIVATE_KEY") or "", env.get("GITHUB_PRIVATE_KEY_PATH") or ""
    if inline.strip() and path.strip():
        raise SettingsError("set GITHUB_PRIVATE_KEY or GITHUB_PRIVATE_KEY_PATH, not both")
    if inline.strip():
        # .env files and CI secrets often carry the PEM on one line with literal "\n" escapes.
        return _checked_key(inline.replace("\\n", "\n").strip() + "\n", "GITHUB_PRIVATE_KEY")
    if path.strip():
        try:
            text = Path(path.strip()).expanduser().read_text("ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(
                f"GITHUB_PRIVATE_KEY_PATH: cannot read {path.strip()!r} "
                f"({getattr(exc, 'strerror', None) or exc.__class__.__name__})"
            ) from None
        return _checked_key(text, "GITHUB_PRIVATE_KEY_PATH")
    return None


def _checked_key(pem: str, name: str) -> str:
    # The parser's message is left out on purpose: it may quote part of the key.
    try:
        key = privatekey.load(pem.encode("ascii"))
    except (ValueError, TypeError, UnicodeEncodeError):
        raise SettingsError(
            f"{name} is not an unencrypted PEM private key (download a new one from the App's settings page)"
        ) from None
    if not isinstance(key, RSAPrivateKey):
        raise SettingsError(f"{name} must be an RSA private key, the kind GitHub issues for Apps")
    return pem
