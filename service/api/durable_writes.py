"""Writes answered as done only once Redis's replicas hold them (COPYDESK_REDIS_MIN_REPLICAS), for every door of
the web process: the API, the dashboard's forms and the webhook endpoints."""

import logging

import redis
from flask import Flask, Response, request

from service.api import problems
from service.errors import WriteNotReplicated
from service.replication import Durability

log = logging.getLogger(__name__)

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def register(app: Flask, durability: Durability) -> None:
    """After a successful write request, wait for the replicas; answer `503 unavailable` (with Retry-After)
    instead of the success when they do not confirm in time. Register it last, so that it runs first."""
    if durability.min_replicas <= 0:
        return

    @app.after_request
    def confirm_write(response: Response) -> Response:
        if request.method not in WRITE_METHODS or not 200 <= response.status_code < 400:
            return response
        try:
            durability.confirm()
        except WriteNotReplicated as exc:
            log.warning("%s %s: %s", request.method, request.path, exc.detail)
            return problems.problem("unavailable", exc.detail)
        except redis.RedisError as exc:
            log.warning(
                "%s %s: the replicas could not be asked to confirm the write: %s", request.method, request.path, exc
            )
            return problems.problem("unavailable", "the job store could not confirm the write; try again shortly")
        return response
