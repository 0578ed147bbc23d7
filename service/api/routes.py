"""The `/v2/agent` endpoints: create, message, get, list, conversation and archive jobs."""

import hashlib

from flask import Blueprint, Response, current_app, jsonify, request

from service.api import body as bodies
from service.errors import JobArchived, JobNotFound, ProjectDisabled, ProjectNotFound, RateLimited
from service.models import ApiKey, Job, JobStatus, Project
from service.services import Services
from service.store.jobs import IdempotencyClaim, add_usage

bp = Blueprint("agent_api", __name__, url_prefix="/v2/agent")


def _services() -> Services:
    return current_app.extensions["copydesk"]


def _caller() -> ApiKey:
    return _services().keys.authenticate(request.headers.get("Authorization"))


def _project(project_id: str, key: ApiKey) -> Project:
    # A project outside the key's scope answers exactly like one that does not exist.
    project = _services().projects.find(project_id) if project_id.startswith("prj_") else None
    if project is None or not key.allows(project):
        raise ProjectNotFound(f"no project {project_id}")
    return project


def _job(project: Project, job_id: str) -> Job:
    job = _services().jobs.find(job_id)
    if job is None or job.project_id != project.id:
        raise JobNotFound(f"no job {job_id} in project {project.id}")
    return job


def _writable(project: Project) -> None:
    if not project.enabled:
        raise ProjectDisabled(f"project {project.id} is disabled: its repository is no longer reachable")


def _spend_quota(project: Project) -> dict[str, str]:
    quota = _services().limiter.consume(project.id)
    headers = {"RateLimit-Limit": str(quota.limit), "RateLimit-Remaining": str(quota.remaining),
               "RateLimit-Reset": str(quota.reset_seconds)}
    if not quota.allowed:
        raise RateLimited(f"project {project.id} may create {quota.limit} jobs or messages per hour; "
                          f"try again in {quota.reset_seconds} s", retry_after=quota.reset_seconds, headers=headers)
    return headers


@bp.post("/<project_id>/job")
def create_job(project_id: str) -> Response:
    services = _services()
    key = _caller()
    project = _project(project_id, key)
    _writable(project)
    body = bodies.read_object(request, services.settings.max_body_bytes)
    create = bodies.parse_create(body, services.settings)
    idem = bodies.idempotency_key(request.headers.get("Idempotency-Key"))
    claim = None
    if idem is not None:
        scope = hashlib.sha256(f"{key.account}\0{project.id}\0{idem}".encode()).hexdigest()
        claim = IdempotencyClaim(scope=scope, body_hash=bodies.body_hash(body))
        # A retry of a create that already happened must not use up quota.
        earlier = services.jobs.replay(claim)
        if earlier is not None:
            return _created(earlier, {})
    headers = _spend_quota(project)
    job, created = services.jobs.create(project, prompt=create.prompt, model=create.model,
                                        ref=create.ref or project.ref, as_draft=create.as_draft,
                                        idempotency=claim)
    if created:
        services.dispatcher.try_kick(job.id)
    return _created(job, headers)


def _created(job: Job, headers: dict[str, str]) -> Response:
    response = jsonify(job.to_api())
    response.status_code = 201
    response.headers["Location"] = f"/v2/agent/{job.project_id}/job/{job.id}"
    response.headers.update(headers)
    return response


@bp.post("/<project_id>/job/<job_id>/message")
def send_message(project_id: str, job_id: str) -> Response:
    services = _services()
    project = _project(project_id, _caller())
    job = _job(project, job_id)
    body = bodies.read_object(request, services.settings.max_body_bytes)
    prompt = bodies.parse_prompt(body, services.settings)
    _writable(project)
    if job.status is JobStatus.ARCHIVED:  # refused before it can use up quota; the store re-checks
        raise JobArchived(f"job {job.id} is archived and takes no more messages")
    headers = _spend_quota(project)
    job, _message = services.jobs.add_message(job.id, prompt=prompt)
    services.dispatcher.try_kick(job.id)
    response = jsonify(job.to_api())
    response.headers.update(headers)
    return response


@bp.get("/<project_id>/job/<job_id>")
def get_job(project_id: str, job_id: str) -> Response:
    project = _project(project_id, _caller())
    return jsonify(_job(project, job_id).to_api())


@bp.get("/<project_id>/jobs")
def list_jobs(project_id: str) -> Response:
    project = _project(project_id, _caller())
    query = bodies.parse_list_query(request.args)
    jobs, cursor = _services().jobs.page(project.id, status=query.status, limit=query.limit,
                                         cursor=query.cursor)
    return jsonify({"jobs": [job.to_api() for job in jobs], "nextCursor": cursor})


@bp.get("/<project_id>/job/<job_id>/messages")
def conversation(project_id: str, job_id: str) -> Response:
    project = _project(project_id, _caller())
    job = _job(project, job_id)
    messages = [m.to_api() for m in _services().jobs.conversation(job.id)]
    return jsonify({"messages": messages, "usage": add_usage({}, job.usage)})


@bp.post("/<project_id>/job/<job_id>/archive")
def archive_job(project_id: str, job_id: str) -> Response:
    project = _project(project_id, _caller())
    job = _job(project, job_id)
    return jsonify(_services().jobs.archive(job.id).to_api())
