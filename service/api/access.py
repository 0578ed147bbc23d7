"""What every `/v2/agent` endpoint does first: the services, the calling key, and the project and job it may see."""

from dataclasses import dataclass

from flask import current_app, request

from service.errors import Forbidden, JobNotFound, ProjectNotFound
from service.models import ApiKey, Job, Project
from service.services import Services
from service.store.jobkeys import job_key
from service.store.jobs import is_job_id
from service.store.projects import project_key


@dataclass(frozen=True)
class Access:
    """The request's key with the project (and job) it names, read together with the key check."""

    key: ApiKey
    project: Project
    job: Job | None


def services() -> Services:
    return current_app.extensions["copydesk"]


def caller() -> ApiKey:
    """The request's API key; a read-only key may only read (GET), whatever the endpoint."""
    return _checked(services().keys.authenticate(request.headers.get("Authorization")), request.method)


def access(project_id: str, job_id: str | None = None) -> Access:
    """The key, the project it may act on and (given `job_id`) the project's job, in one Redis round trip."""
    return grant(services(), request.headers.get("Authorization"), request.method, project_id, job_id)


def grant(
    services: Services, authorization: str | None, method: str, project_id: str, job_id: str | None = None
) -> Access:
    """`access` for a request given by its `Authorization` header and method, outside Flask: the key check, its
    use count and both reads are one script. A project or job the key may not see answers exactly like one that
    does not exist."""
    reads = [project_key(project_id)] if project_id.startswith("prj_") else []
    if reads and job_id is not None and is_job_id(job_id):
        reads.append(job_key(job_id))
    key, records = services.keys.authorize(authorization, reads)
    _checked(key, method)
    project = Project.from_dict(records[0]) if records and records[0] is not None else None
    if project is None or not key.allows(project):
        raise ProjectNotFound(f"no project {project_id}")
    if job_id is None:
        return Access(key, project, None)
    job = Job.from_dict(records[1]) if len(records) > 1 and records[1] is not None else None
    if job is None or job.project_id != project.id:
        raise JobNotFound(f"no job {job_id} in project {project.id}")
    return Access(key, project, job)


def _checked(key: ApiKey, method: str) -> ApiKey:
    if method not in ("GET", "HEAD") and not key.writes:
        raise Forbidden(f"API key {key.id} is read-only: it may read jobs but not create, message or archive them")
    return key
