"""The GitHub App manifest: `app.yml`, rendered for the address this Copydesk is served at."""

from pathlib import Path
from urllib.parse import urlsplit

import yaml

# Package data, installed with the code (the repository's top-level `app.yml` is a link to it).
DEFAULT_PATH = Path(__file__).resolve().parent / "app.yml"
# GitHub sends these to every App whatever it subscribes to; a manifest may not list them.
ALWAYS_DELIVERED = frozenset({"installation", "installation_repositories"})
_URL_FIELDS = ("redirect_url", "setup_url")


class ManifestError(ValueError):
    """`app.yml` is missing or lacks a field the registration needs."""


def load_manifest(path: Path = DEFAULT_PATH) -> dict:
    """The manifest as written in `app.yml`."""
    try:
        manifest = yaml.safe_load(path.read_text("utf-8"))
    except OSError as exc:
        raise ManifestError(f"cannot read the App manifest {path} ({exc.strerror})") from None
    if not isinstance(manifest, dict) or not manifest.get("name"):
        raise ManifestError(f"{path} is not an App manifest (no `name`)")
    for name in ("hook_attributes", *_URL_FIELDS):
        if not manifest.get(name):
            raise ManifestError(f"{path} has no `{name}`")
    return manifest


def hook_path(manifest: dict) -> str:
    """The path of the webhook URL, e.g. `/github/webhooks`."""
    return urlsplit(manifest["hook_attributes"]["url"]).path


def subscribed_events(manifest: dict) -> frozenset[str]:
    """The events the App receives once registered from `manifest`."""
    return frozenset(manifest.get("default_events") or ()) | ALWAYS_DELIVERED


def render_manifest(manifest: dict, base_url: str) -> dict:
    """The manifest to post to GitHub: its URLs moved onto `base_url`, keeping their paths."""
    base = base_url.rstrip("/")
    rendered = {
        **manifest,
        "url": base,
        "hook_attributes": {**manifest["hook_attributes"], "url": base + hook_path(manifest)},
    }
    for name in _URL_FIELDS:
        rendered[name] = base + urlsplit(manifest[name]).path
    if manifest.get("callback_urls"):
        rendered["callback_urls"] = [base + urlsplit(url).path for url in manifest["callback_urls"]]
    return rendered
