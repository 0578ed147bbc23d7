"""`GET /metrics`: Prometheus's text format for a scraper that holds COPYDESK_METRICS_TOKEN; 404 without a token."""

import hmac

from flask import Blueprint, Response, abort, request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from service import metrics
from service.api import problems
from service.queues import worker_queues
from service.services import Services
from service.store_metrics import StoreCollector


def create_blueprint(services: Services) -> Blueprint:
    """The metrics endpoint: every process's values on this host, plus the counts read from Redis at scrape."""
    settings = services.settings
    bp = Blueprint("metrics", __name__)
    store = StoreCollector(services.redis, services.projects, services.jobs, worker_queues(settings.queue_name))

    @bp.get("/metrics")
    def scrape():
        token = settings.metrics_token
        if token is None:
            abort(404)  # metrics are off until the operator sets a token: say nothing about them
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return problems.problem("unauthorized", "send `Authorization: Bearer <COPYDESK_METRICS_TOKEN>`")
        body = generate_latest(metrics.registry(settings.metrics_dir, [store]))
        return Response(body, content_type=CONTENT_TYPE_LATEST)

    return bp
