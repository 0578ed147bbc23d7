"""The webhook endpoint: check GitHub's signature, drop redeliveries and replays, queue the work, answer at once."""

import hashlib
import logging
import re

import redis
import rq
from flask import Blueprint, Response, jsonify, request
from gidgethub import BadRequest, ValidationFailure
from gidgethub.sansio import Event, validate_event

from bot.github import events
from service.api import problems
from service.api.body import check_json_depth, check_texts
from service.errors import InvalidJson, InvalidRequest
from service.queues import GITHUB_EVENT_TASK, github_events_queue

log = logging.getLogger(__name__)

HOOK_PATH = "/github/webhooks"  # the path of app.yml's `hook_attributes.url`
DELIVERY_TTL_SECONDS = 7 * 24 * 3600  # longer than GitHub keeps deliveries for redelivery (3 days)
MAX_PAYLOAD_BYTES = 25 * 1024 * 1024  # GitHub caps a webhook payload at 25 MB
JOB_TIMEOUT_SECONDS = 300
# A failed handler is run again at once (the worker has no RQ scheduler, so retries take no interval);
# handlers are safe to repeat. The GitHub client's own retries cover short outages first.
RETRY = rq.Retry(max=3)
_DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,100}$")
SIGNATURE_PREFIX = "sha256="
_SIGNATURE_HEADERS = ("x-hub-signature-256", "x-hub-signature")
_MEDIA_TYPES = ("application/json", "application/x-www-form-urlencoded")  # the two gidgethub decodes


def create_blueprint(*, secret: str, redis_client: redis.Redis, queue_name: str) -> Blueprint:
    """The `POST /github/webhooks` endpoint, verifying deliveries with the App's webhook `secret`; they are
    queued on `github_events_queue(queue_name)`."""
    if not secret:
        # Without a secret gidgethub would accept unsigned deliveries: refuse to serve at all.
        raise ValueError("the webhook endpoint needs the App's webhook secret (GITHUB_WEBHOOK_SECRET)")
    bp = Blueprint("github_webhooks", __name__)
    queue = rq.Queue(github_events_queue(queue_name), connection=redis_client)

    @bp.post(HOOK_PATH)
    def receive() -> Response:
        # Only the SHA-256 signature counts; gidgethub would fall back to the SHA-1 one. Without one, the body is
        # not even read.
        signature = request.headers.get("X-Hub-Signature-256", "")
        if not signature.startswith(SIGNATURE_PREFIX):
            return _unsigned()
        if (request.content_length or 0) > MAX_PAYLOAD_BYTES:
            return _too_large()
        request.max_content_length = MAX_PAYLOAD_BYTES + 1  # the API's limit is for API calls; +1 as in bot.app
        body = request.get_data(cache=False)
        if len(body) > MAX_PAYLOAD_BYTES:
            return _too_large()
        try:
            # Before anything looks inside the body: an unsigned one costs one HMAC over at most 25 MB, no parsing.
            validate_event(body, signature=signature, secret=secret)
        except ValidationFailure:
            return _unsigned()
        event = _parsed_event(body)
        if isinstance(event, Response):
            return event
        if event.event == "ping":
            return jsonify({"status": "pong"})
        action = event.data.get("action")
        if not events.handles(event.event, action):
            return Response(status=204)
        return _queue_once(queue, redis_client, event, action, hashlib.sha256(body).hexdigest())

    return bp


def _queue_once(queue: rq.Queue, client: redis.Redis, event: Event, action: str | None, digest: str) -> Response:
    """Queue the delivery for the worker unless its id, or its signed body under any id, was seen before."""
    # The delivery id header is not signed: a captured body sent again under a new id is a replay. The body is
    # what the signature covers, and GitHub's payloads differ from one event to the next (ids, timestamps).
    signed = f"cd:gh:delivery-body:{digest}"
    if not client.set(signed, event.delivery_id, nx=True, ex=DELIVERY_TTL_SECONDS):
        log.warning(
            "delivery %s (%s.%s) repeats a body already handled: ignored", event.delivery_id, event.event, action
        )
        return jsonify({"status": "duplicate"})
    seen = f"cd:gh:delivery:{event.delivery_id}"
    if not client.set(seen, "1", nx=True, ex=DELIVERY_TTL_SECONDS):
        log.info("delivery %s (%s.%s) seen already: ignored", event.delivery_id, event.event, action)
        return jsonify({"status": "duplicate"})
    # The delivery id is marked seen now, so GitHub's redelivery will not bring it back: RQ retries a failed
    # handler instead, and one that fails every time stays in RQ's failed-job registry for the operator.
    try:
        queue.enqueue(
            GITHUB_EVENT_TASK,
            event.event,
            event.delivery_id,
            event.data,
            job_timeout=JOB_TIMEOUT_SECONDS,
            retry=RETRY,
            result_ttl=3600,
            failure_ttl=DELIVERY_TTL_SECONDS,
            description=f"github {event.event}.{action} {event.delivery_id}",
        )
    except redis.RedisError:
        log.warning("delivery %s could not be queued", event.delivery_id, exc_info=True)
        _forget(client, seen, signed)
        return problems.problem("unavailable", "the work queue is unreachable; redeliver this later")
    log.info("delivery %s (%s.%s) queued", event.delivery_id, event.event, action)
    accepted = jsonify({"status": "queued"})
    accepted.status_code = 202
    return accepted


def _too_large() -> Response:
    return problems.problem("payload_too_large", f"a delivery is at most {MAX_PAYLOAD_BYTES} bytes")


def _unsigned() -> Response:
    log.warning(
        "webhook refused: missing or wrong X-Hub-Signature-256 (delivery %s)",
        request.headers.get("X-GitHub-Delivery", "?")[:100],
    )
    return problems.problem("unauthorized", "the X-Hub-Signature-256 signature is missing or wrong")


def _parsed_event(body: bytes) -> Event | Response:
    """The delivery, whose signature was checked, as a gidgethub Event, or the problem response that refuses it."""
    # The signature headers are left out: checked already, they would make gidgethub hash the body again.
    headers = {k.lower(): v for k, v in request.headers.items() if k.lower() not in _SIGNATURE_HEADERS}
    if request.mimetype not in _MEDIA_TYPES:
        return problems.problem("unsupported_media_type", "a delivery's body must be JSON sent as application/json")
    try:
        check_json_depth(body)  # before gidgethub's json.loads, which a deep body drives past the recursion limit
        event = Event.from_http(headers, body, secret=None)
    except InvalidJson as exc:
        return problems.problem("invalid_json", exc.detail)
    except RecursionError:
        # A form-encoded delivery (`payload=...`) hides its brackets from the depth check until gidgethub decodes it.
        return problems.problem("invalid_json", "the payload nests arrays and objects too deeply")
    except BadRequest:  # the media type is one gidgethub reads: the body did not decode
        return problems.problem("invalid_json", "the delivery's body is not valid JSON")
    except KeyError:
        return problems.problem("invalid_request", "X-GitHub-Event and X-GitHub-Delivery headers are required")
    if not isinstance(event.data, dict) or not _DELIVERY_ID.match(event.delivery_id):
        return problems.problem("invalid_request", "a delivery needs a JSON object and a delivery id")
    try:
        check_texts(event.data)  # comments become prompts: text that cannot be shown stops here, as on the API
    except InvalidRequest as exc:
        return problems.problem("invalid_request", exc.detail, field=exc.field)
    return event


def _forget(client: redis.Redis, *keys: str) -> None:
    """Release a delivery's de-duplication marks so GitHub's redelivery of it is taken."""
    try:
        client.delete(*keys)
    except redis.RedisError:
        log.warning(
            "could not release %s; a redelivery within %d s will be ignored", ", ".join(keys), DELIVERY_TTL_SECONDS
        )
