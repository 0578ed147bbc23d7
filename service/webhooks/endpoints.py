"""Registering and rotating webhook endpoints (the URL guard and a fresh secret, shown once and kept sealed), and
sending a delivery again."""

from service.errors import InvalidRequest
from service.models import Delivery, WebhookEndpoint
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


def resend(services: Services, project_id: str, endpoint_id: str, delivery_id: str) -> Delivery:
    """Queue one more attempt of an endpoint's delivery (made by a worker, without retries of its own)."""
    delivery = services.webhooks.endpoint_delivery(services.webhooks.get(project_id, endpoint_id), delivery_id)
    # Never sent on the caller's request path: a receiver's slowness must not hold an API or dashboard thread.
    # Numbered apart from the attempts: taking `attempts + 1` would steal the claim of the retry due next.
    services.deliveries.now(delivery.id, services.webhooks.next_resend(delivery.id), manual=True)
    return delivery
