"""A project's webhook endpoints, for admins of its account: add (the secret shown once), delete, rotate the
secret, enable again, and each endpoint's delivery log with "send again"."""

import json

from flask import Blueprint, redirect, request

from bot.dashboard.views_jobs import visible_project
from bot.dashboard.web import dashboard, page, signed_in
from service.api.body import parse_webhook
from service.errors import InvalidRequest, WebhookLimitReached
from service.job_events import EventType
from service.models import DeliveryStatus, Project
from service.outbound import endpoints

# The new secret waits this long for the page that shows it; after that it is gone, and only a rotation helps.
SECRET_TTL_SECONDS = 600
_BADGES = {DeliveryStatus.SUCCEEDED: "ok", DeliveryStatus.FAILED: "bad", DeliveryStatus.PENDING: "warn"}


def register(bp: Blueprint) -> None:
    """Add the webhook pages to the dashboard's blueprint."""

    @bp.get("/projects/<project_id>/webhooks")
    def webhooks(project_id: str):
        return _list_page(administered_project(project_id))

    @bp.post("/projects/<project_id>/webhooks")
    def add_webhook(project_id: str):
        project = administered_project(project_id)
        form = request.form
        try:
            wanted = parse_webhook(
                {
                    "url": form.get("url", "").strip(),
                    "events": form.getlist("events"),
                    "description": form.get("description", "").strip(),
                }
            )
            # The same registration as the API's and the CLI's: the address guard applies exactly as there.
            endpoint, secret = endpoints.register(
                dashboard().services, project.id, url=wanted.url, events=wanted.events, description=wanted.description
            )
        except (InvalidRequest, WebhookLimitReached) as exc:
            return _list_page(project, error=exc.detail, status=409 if isinstance(exc, WebhookLimitReached) else 400)
        return _show_secret_once(project, endpoint.id, secret, "created")

    @bp.get("/projects/<project_id>/webhooks/secret")
    def new_secret(project_id: str):
        project = administered_project(project_id)
        shown = _take_secret(project)
        if shown is None:  # shown already (or never made here): the list, which never has secrets
            return redirect(_list_path(project), 303)
        endpoint = dashboard().services.webhooks.find(shown["endpoint"])
        return page(
            "webhook_secret.html", project=project, endpoint=endpoint, secret=shown["secret"], action=shown["action"]
        )

    @bp.post("/projects/<project_id>/webhooks/<webhook_id>/delete")
    def delete_webhook(project_id: str, webhook_id: str):
        project = administered_project(project_id)
        dashboard().services.webhooks.delete(project.id, webhook_id)
        return redirect(_list_path(project), 303)

    @bp.post("/projects/<project_id>/webhooks/<webhook_id>/rotate")
    def rotate_secret(project_id: str, webhook_id: str):
        project = administered_project(project_id)
        endpoint, secret = endpoints.rotate(dashboard().services, project.id, webhook_id)
        return _show_secret_once(project, endpoint.id, secret, "rotated")

    @bp.post("/projects/<project_id>/webhooks/<webhook_id>/enable")
    def enable_webhook(project_id: str, webhook_id: str):
        project = administered_project(project_id)
        dashboard().services.webhooks.enable(project.id, webhook_id)
        return redirect(_list_path(project), 303)

    @bp.get("/projects/<project_id>/webhooks/<webhook_id>")
    def deliveries(project_id: str, webhook_id: str):
        project = administered_project(project_id)
        services = dashboard().services
        endpoint = services.webhooks.get(project.id, webhook_id)
        return page(
            "webhook_deliveries.html",
            project=project,
            endpoint=endpoint,
            deliveries=services.webhooks.log(endpoint.id),
            badges=_BADGES,
            resent=request.args.get("resent", ""),
        )

    @bp.post("/projects/<project_id>/webhooks/<webhook_id>/deliveries/<delivery_id>/resend")
    def resend(project_id: str, webhook_id: str, delivery_id: str):
        project = administered_project(project_id)
        delivery = endpoints.resend(dashboard().services, project.id, webhook_id, delivery_id)
        return redirect(f"{_list_path(project)}/{delivery.endpoint_id}?resent={delivery.id}", 303)


def administered_project(project_id: str) -> Project:
    """The project, when the viewer administers its account: ProjectNotFound when they cannot see it (never
    revealed), NotAllowed (403) when they are only a member."""
    project = visible_project(project_id)
    signed_in().admin_of_project(project)
    return project


def _list_path(project: Project) -> str:
    return f"/dashboard/projects/{project.id}/webhooks"


def _list_page(project: Project, *, error: str | None = None, status: int = 200):
    form = request.form if request.method == "POST" else None
    return page(
        "webhooks.html",
        status,
        project=project,
        endpoints=dashboard().services.webhooks.of_project(project.id),
        event_types=[t.value for t in EventType],
        error=error,
        url=form.get("url", "") if form else "",
        description=form.get("description", "") if form else "",
        chosen=form.getlist("events") if form else [],
    )


# -- the secret, shown once ------------------------------------------------------------------------------------
# Post/redirect/get: the POST keeps the secret in the signed-in session's one-time values (sealed in Redis, as a
# new API key is) and redirects; the GET takes it out, so a reload or the back button never shows it again, and
# signing out drops it. It is never in a URL.


def _show_secret_once(project: Project, endpoint_id: str, secret: str, action: str):
    shown = json.dumps({"endpoint": endpoint_id, "action": action, "secret": secret})
    dashboard().sessions.keep_once(signed_in().session, _slot(project), shown, SECRET_TTL_SECONDS)
    return redirect(f"{_list_path(project)}/secret", 303)


def _take_secret(project: Project) -> dict | None:
    shown = dashboard().sessions.take_once(signed_in().session, _slot(project))
    return json.loads(shown) if shown else None


def _slot(project: Project) -> str:
    return f"webhook-secret:{project.id}"
