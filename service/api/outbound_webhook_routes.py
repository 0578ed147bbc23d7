"""The `/v2/agent/{projectId}/webhooks` endpoints: register, list, delete, rotate; delivery log and re-send."""

from flask import Blueprint, Response, jsonify, request

from service.api import body as bodies
from service.api.access import access, services
from service.outbound import endpoints

bp = Blueprint("webhooks_api", __name__, url_prefix="/v2/agent/<project_id>/webhooks")


@bp.post("")
def add_webhook(project_id: str) -> Response:
    svc = services()
    project = access(project_id).project
    wanted = bodies.parse_webhook(bodies.read_object(request, svc.settings.max_body_bytes))
    endpoint, secret = endpoints.register(
        svc, project.id, url=wanted.url, events=wanted.events, description=wanted.description
    )
    response = jsonify({**endpoint.to_api(), "secret": secret})  # the only time the secret is shown
    response.status_code = 201
    response.headers["Location"] = f"/v2/agent/{project.id}/webhooks/{endpoint.id}"
    return response


@bp.get("")
def list_webhooks(project_id: str) -> Response:
    project = access(project_id).project
    return jsonify({"webhooks": [e.to_api() for e in services().webhooks.of_project(project.id)]})


@bp.get("/<webhook_id>")
def get_webhook(project_id: str, webhook_id: str) -> Response:
    project = access(project_id).project
    return jsonify(services().webhooks.get(project.id, webhook_id).to_api())


@bp.delete("/<webhook_id>")
def delete_webhook(project_id: str, webhook_id: str) -> Response:
    project = access(project_id).project
    services().webhooks.delete(project.id, webhook_id)
    return Response(status=204)


@bp.post("/<webhook_id>/rotate")
def rotate_secret(project_id: str, webhook_id: str) -> Response:
    project = access(project_id).project
    endpoint, secret = endpoints.rotate(services(), project.id, webhook_id)
    return jsonify({**endpoint.to_api(), "secret": secret})


@bp.post("/<webhook_id>/enable")
def enable_webhook(project_id: str, webhook_id: str) -> Response:
    project = access(project_id).project
    return jsonify(services().webhooks.enable(project.id, webhook_id).to_api())


@bp.get("/<webhook_id>/deliveries")
def deliveries(project_id: str, webhook_id: str) -> Response:
    svc = services()
    project = access(project_id).project
    endpoint = svc.webhooks.get(project.id, webhook_id)
    return jsonify({"deliveries": [d.to_api() for d in svc.webhooks.log(endpoint.id)]})


@bp.post("/<webhook_id>/deliveries/<delivery_id>/resend")
def resend(project_id: str, webhook_id: str, delivery_id: str) -> Response:
    project = access(project_id).project
    delivery = endpoints.resend(services(), project.id, webhook_id, delivery_id)
    response = jsonify(delivery.to_api())
    response.status_code = 202
    return response
