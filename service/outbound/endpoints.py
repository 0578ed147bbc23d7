"""Registering and rotating webhook endpoints (the URL guard and a fresh secret, shown once and kept sealed), and
sending a delivery again."""

from service.errors import InvalidRequest, RateLimited
from service.models import Delivery, WebhookEndpoint
from service.outbound import signing
from service.outbound.addresses import UnsafeUrl, check_url
from service.services import Services
from service.store.ratelimit import RateLimiter

RESEND_WINDOW_SECONDS = 60


def register(
    services: Services, project_id: str, *, url: str, events: list[str], description: str
) -> tuple[WebhookEndpoint, str]:
    """Add an endpoint to the project; returns it and its secret (never available again)."""
    try:
        check_url(url, allow_private=services.settings.webhook_allow_private)
    except UnsafeUrl as exc:
        raise InvalidRequest(f"`url` refused: {exc}", field="url") from None
    secret = signing.new_secret()
    endpoint = services.webhooks.add(
        project_id,
        url=url,
        sealed_secret=services.sender.seal(secret),
        description=description,
        events=events,
        limit=services.settings.webhook_max_endpoints,
    )
    return endpoint, secret


def rotate(services: Services, project_id: str, endpoint_id: str) -> tuple[WebhookEndpoint, str]:
    """Give the endpoint a new secret; returns it and the secret (never available again)."""
    secret = signing.new_secret()
    return services.webhooks.rotate(project_id, endpoint_id, services.sender.seal(secret)), secret


def resend(services: Services, project_id: str, endpoint_id: str, delivery_id: str) -> Delivery:
    """Queue one more attempt of an endpoint's delivery (made by a worker, without retries of its own); RateLimited
    past the endpoint's or its account's re-sends per minute."""
    delivery = services.webhooks.endpoint_delivery(services.webhooks.get(project_id, endpoint_id), delivery_id)
    project = services.projects.get(project_id)
    settings = services.settings
    for scope, limit in (
        (f"resend:endpoint:{endpoint_id}", settings.webhook_resends_per_endpoint),
        (f"resend:account:{project.host}:{project.account}", settings.webhook_resends_per_account),
    ):
        quota = RateLimiter(services.redis, limit=limit, window_seconds=RESEND_WINDOW_SECONDS).consume(scope)
        if not quota.allowed:
            raise RateLimited(
                f"{scope.split(':')[1]} re-sends are limited to {limit} a minute; try again in {quota.reset_seconds} s",
                retry_after=quota.reset_seconds,
            )
    # Never sent on the caller's request path: a receiver's slowness must not hold an API or dashboard thread.
    # Numbered apart from the attempts: taking `attempts + 1` would steal the claim of the retry due next.
    services.deliveries.now(delivery.id, services.webhooks.next_resend(delivery.id), manual=True)
    return delivery
