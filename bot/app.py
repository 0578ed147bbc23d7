"""The Flask application factory: API, GitHub webhooks and registration, the dashboard (with the local
pull-request pages), health checks."""

import redis
from flask import Flask, jsonify

from bot import context, dashboard, edge, metrics_route
from bot.door_limits import DoorLimits
from bot.github import inbound, registration
from service.api import durable_writes, hot_paths, problems
from service.api.automation_routes import bp as automations_api
from service.api.json_provider import FastJSONProvider
from service.api.openapi import openapi_document
from service.api.outbound_webhook_routes import bp as webhooks_api
from service.api.routes import bp as agent_api
from service.api.streams import StreamSlots
from service.preflight import FirstContactChecks, RedisRefused, Status
from service.replication import NotWritable
from service.settings import Settings
from service.store import schema


def create_app(settings: Settings | None = None, ctx: context.Context | None = None) -> Flask:
    """Build the web application; `settings` default to the environment's."""
    settings = settings or Settings.from_env()
    ctx = ctx or context.build(settings)
    app = Flask(__name__)
    # Werkzeug enforces this while reading, so an oversized body is refused without buffering it. One byte more
    # than allowed: a body sent without a length (chunked) is cut silently at the limit, and the byte past it is
    # what tells service.api.body a cut body from one that fits.
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes + 1
    app.json = FastJSONProvider(app)
    app.extensions["copydesk"] = ctx.services
    app.extensions["copydesk.context"] = ctx
    app.extensions["copydesk.streams"] = StreamSlots(
        settings.max_streams,
        per_caller=settings.max_streams_per_key,
        per_account=settings.max_streams_per_account,
        retry_after=settings.sse_keepalive_seconds,
    )
    problems.register(app)
    hot_paths.install(app, ctx.services)  # before the Edge, which must see every response
    github = ctx.github_settings
    # The registration page posts its manifest to GitHub, the one other place a form here may go.
    edge.install(app, form_targets=(github.web_url,))
    app.register_blueprint(agent_api)
    app.register_blueprint(webhooks_api)
    app.register_blueprint(automations_api)
    app.register_blueprint(metrics_route.create_blueprint(ctx.services))
    doors = DoorLimits(ctx.services.redis, per_minute=settings.anonymous_per_minute)
    dashboard.register(app, dashboard.build(ctx.services, ctx.local, ctx.github_settings, doors))
    if github.configured:
        assert github.webhook_secret is not None  # configured means the App id, private key and secret are set
        app.register_blueprint(
            inbound.create_blueprint(
                secret=github.webhook_secret, redis_client=ctx.services.redis, queue_name=settings.queue_name
            )
        )
    app.register_blueprint(
        registration.create_blueprint(
            ctx.services.redis,
            doors,
            base_url=settings.base_url,
            data_dir=settings.data_dir,
            web_url=github.web_url,
            api_url=github.api_url,
            configured_app_id=github.app_id,
        )
    )

    document = openapi_document(
        settings.base_url,
        settings.allowed_models,
        rate_limit=settings.rate_limit_per_hour,
        max_prompt_chars=settings.max_prompt_chars,
        max_body_bytes=settings.max_body_bytes,
    )

    @app.get("/v2/openapi.json")
    def openapi():
        return jsonify(document)

    @app.get("/healthz")
    def healthz():
        return jsonify({"status": "ok"})

    # Checked at the first contact with Redis too: if it was down when `copydesk web` started, its start-up
    # checks could not look at its eviction policy.
    redis_settings = FirstContactChecks(ctx.services.redis, allow_eviction=settings.allow_redis_eviction)

    @app.get("/readyz")
    def readyz():
        try:
            ctx.services.redis.ping()
            redis_settings.require()
            # A replica, or a primary short of replicas, would fail every write: no traffic for this process. Asked
            # before the schema check, which stamps an empty Redis (a write).
            ctx.services.durability.writable()
            schema.require_current(ctx.services.redis)
        except redis.RedisError:
            return problems.problem("unavailable", "Redis is not reachable")
        except RedisRefused as refused:
            return problems.problem("redis_evicts_keys", _refusal(refused))
        except schema.SchemaMismatch as mismatch:
            return problems.problem("schema_mismatch", str(mismatch))
        except NotWritable as refusal:
            return problems.problem("unavailable", str(refusal))
        return jsonify({"status": "ready"})

    durable_writes.register(app, ctx.services.durability)  # last: it must run before the other after-request hooks
    return app


def _refusal(refused: RedisRefused) -> str:
    errors = [check for check in refused.checks if check.status is Status.ERROR]
    return "; ".join(f"{check.detail}; fix: {check.fix}" for check in errors)
