"""The automations endpoints: `/v2/agent/{projectId}/automations` (manage, run now, history), the per-automation
webhook trigger, and the autopilot doors (`/v2/agent/{projectId}/autopilot`, Mintlify's
`/v2/autopilot/{projectId}/webhook`)."""

from flask import Blueprint, Response, jsonify, request

from service import intake
from service.api import body as bodies
from service.api.access import access, services
from service.api.problems import request_id
from service.automations import manage, outcomes
from service.automations.events import TriggerEvent
from service.automations.manage import run_api
from service.automations.model import Automation, AutomationRun, TriggerType
from service.automations.runs import fire
from service.automations.templates import TEMPLATES
from service.errors import InvalidRequest, PayloadTooLarge, Unauthorized
from service.intake import QuotaSpent
from service.services import Services

bp = Blueprint("automations_api", __name__)

PREFIX = "/v2/agent/<project_id>/automations"


@bp.post(PREFIX)
def create_automation(project_id: str) -> Response:
    svc = services()
    project = access(project_id).project
    automation, secret = manage.create(svc, project, bodies.read_object(request, svc.settings.max_body_bytes))
    response = jsonify(manage.automation_api(svc, automation, secret))
    response.status_code = 201
    response.headers["Location"] = f"/v2/agent/{project.id}/automations/{automation.id}"
    return response


@bp.get(PREFIX)
def list_automations(project_id: str) -> Response:
    svc = services()
    project = access(project_id).project
    return jsonify({"automations": [manage.automation_api(svc, a) for a in svc.automations.of_project(project.id)]})


@bp.get(f"{PREFIX}/<automation_id>")
def get_automation(project_id: str, automation_id: str) -> Response:
    svc = services()
    project = access(project_id).project
    return jsonify(manage.automation_api(svc, svc.automations.get(project.id, automation_id)))


@bp.patch(f"{PREFIX}/<automation_id>")
def update_automation(project_id: str, automation_id: str) -> Response:
    svc = services()
    project = access(project_id).project
    svc.automations.get(project.id, automation_id)  # a missing automation is a 404 before a bad body is a 400
    body = bodies.read_object(request, svc.settings.max_body_bytes)
    automation, secret = manage.update(svc, project, automation_id, body)
    return jsonify(manage.automation_api(svc, automation, secret))


@bp.delete(f"{PREFIX}/<automation_id>")
def delete_automation(project_id: str, automation_id: str) -> Response:
    project = access(project_id).project
    services().automations.delete(project.id, automation_id)
    return Response(status=204)


@bp.post(f"{PREFIX}/<automation_id>/rotate-secret")
def rotate_secret(project_id: str, automation_id: str) -> Response:
    svc = services()
    project = access(project_id).project
    automation, secret = svc.automations.rotate_secret(project.id, automation_id)
    return jsonify(manage.automation_api(svc, automation, secret))


@bp.post(f"{PREFIX}/<automation_id>/run")
def run_now(project_id: str, automation_id: str) -> Response:
    """Fire a "manual" event; an optional `{"note"}` is passed to the agent as context."""
    svc = services()
    project = access(project_id).project
    automation = svc.automations.get(project.id, automation_id)
    note = _note(bodies.read_object(request, svc.settings.max_body_bytes) if request.get_data(cache=True) else {})
    idem = bodies.idempotency_key(request.headers.get("Idempotency-Key"))
    return _fired_run(svc, manage.run_now(svc, automation, note, idempotency_key=idem))


@bp.get("/v2/agent/<project_id>/automation-templates")
def list_templates(project_id: str) -> Response:
    """The templates an automation can start from, with what each still needs on this project's code host."""
    project = access(project_id).project
    return jsonify({"templates": [manage.template_api(t, project.host) for t in TEMPLATES.values()]})


@bp.get(f"{PREFIX}/<automation_id>/runs")
def list_runs(project_id: str, automation_id: str) -> Response:
    svc = services()
    project = access(project_id).project
    automation = svc.automations.get(project.id, automation_id)
    query = bodies.parse_messages_query(request.args)
    runs, cursor = svc.automations.runs(automation.id, limit=min(query.limit, 50), cursor=query.cursor)
    return jsonify(
        {
            "runs": [run_api(svc, run) for run in runs],
            "nextCursor": cursor,
            "mergeRate": outcomes.merge_rate(svc, svc.automations.all_runs(automation.id)),
        }
    )


@bp.post("/v2/automations/<automation_id>/webhook")
def webhook_trigger(automation_id: str) -> Response:
    """A webhook trigger's URL: the automation's own secret as a bearer token, the body (any text) as context.
    One request is one event, keyed by its `Idempotency-Key` (or `webhook-id`) so a re-delivery is one run."""
    svc = services()
    if request.content_length is not None and request.content_length > svc.settings.max_body_bytes:
        raise PayloadTooLarge(f"the body is larger than {svc.settings.max_body_bytes} bytes")
    automation = svc.automations.find(automation_id)
    given = _bearer(request.headers.get("Authorization"))
    if (
        automation is None
        or automation.trigger.type is not TriggerType.WEBHOOK
        or not svc.automations.secret_matches(automation, given)
    ):
        raise Unauthorized("send the automation's webhook secret as `Authorization: Bearer cdah_...`")
    raw = request.get_data(cache=True)
    if len(raw) > svc.settings.max_body_bytes:
        raise PayloadTooLarge(f"the body is larger than {svc.settings.max_body_bytes} bytes")
    delivery = request.headers.get("Idempotency-Key") or request.headers.get("webhook-id")
    delivery = bodies.idempotency_key(delivery) if delivery else request_id()
    context = raw.decode("utf-8", errors="replace") or None
    return _fired(svc, automation, TriggerEvent(kind="webhook", key=f"hook:{delivery}", context=context))


@bp.post("/v2/agent/<project_id>/autopilot")
def autopilot(project_id: str) -> Response:
    """Start a job with `{"prompt"}` (an API key with write access): 202 and the job."""
    return _autopilot(project_id)


@bp.post("/v2/autopilot/<project_id>/webhook")
def autopilot_webhook(project_id: str) -> Response:
    """Mintlify's path for the same, so its CI recipes work unchanged."""
    return _autopilot(project_id)


def _autopilot(project_id: str) -> Response:
    svc = services()
    granted = access(project_id)
    key, project = granted.key, granted.project
    intake.ensure_open(project)
    body = bodies.read_object(request, svc.settings.max_body_bytes)
    prompt = bodies.parse_prompt(body, svc.settings)
    claim = bodies.idempotency_claim(request.headers.get("Idempotency-Key"), body, key.account, project.id, "autopilot")
    new = intake.NewJob(
        prompt=prompt,
        model=svc.settings.model,
        ref=project.ref,
        max_tokens=project.max_tokens,
        source="autopilot",
        key_id=key.id,
        idempotency=claim,
    )
    try:
        accepted = intake.create(svc, project, new)
    except QuotaSpent as exc:
        exc.headers.update(_quota_headers(exc.quota))
        raise
    response = jsonify(accepted.job.to_api())
    response.status_code = 202
    response.headers["Location"] = f"/v2/agent/{project.id}/job/{accepted.job.id}"
    if accepted.quota is not None:
        response.headers.update(_quota_headers(accepted.quota))
    return response


def _quota_headers(quota) -> dict[str, str]:
    return {
        "RateLimit-Limit": str(quota.limit),
        "RateLimit-Remaining": str(quota.remaining),
        "RateLimit-Reset": str(quota.reset_seconds),
    }


def _fired(svc: Services, automation: Automation, event: TriggerEvent) -> Response:
    return _fired_run(svc, fire(svc, automation, event))


def _fired_run(svc: Services, run: AutomationRun) -> Response:
    job = svc.jobs.find(run.job_id) if run.job_id else None
    response = jsonify({"run": run_api(svc, run), "job": None if job is None else job.to_api()})
    response.status_code = 202
    return response


def _note(body: dict) -> str | None:
    for name in body:
        if name != "note":
            raise InvalidRequest(f"unknown field `{name}`; allowed: note", field=name)
    return body.get("note")


def _bearer(header: str | None) -> str:
    scheme, _, token = (header or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""
