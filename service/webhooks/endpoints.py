"""Registering and rotating webhook endpoints: the URL guard and a fresh secret, shown once and kept sealed."""

from service.errors import InvalidRequest
from service.models import WebhookEndpoint
from service.services import Services
from service.webhooks import signing
from service.webhooks.addresses import UnsafeUrl, check_url


def register(services: Services, project_id: str, *, url: str, events: list[str],
             description: str) -> tuple[WebhookEndpoint, str]:
    """Add an endpoint to the project; returns it and its secret (never available again)."""
    try:
        check_url(url, allow_private=services.settings.webhook_allow_private)
    except UnsafeUrl as exc:
        raise InvalidRequest(f"`url` refused: {exc}", field="url") from None
    secret = signing.new_secret()
    endpoint = services.webhooks.add(project_id, url=url, sealed_secret=services.sender.seal(secret),
                                     description=description, events=events)
    return endpoint, secret


def rotate(services: Services, project_id: str, endpoint_id: str) -> tuple[WebhookEndpoint, str]:
    """Give the endpoint a new secret; returns it and the secret (never available again)."""
    secret = signing.new_secret()
    return services.webhooks.rotate(project_id, endpoint_id, services.sender.seal(secret)), secret
