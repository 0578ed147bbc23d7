"""What every `/v2/agent` endpoint does first: the services, the calling key, and the project and job it may see."""

from flask import current_app, request

from service.errors import Forbidden, JobNotFound, ProjectDisabled, ProjectNotFound
from service.models import ApiKey, Job, Project
from service.services import Services


def services() -> Services:
    return current_app.extensions["copydesk"]


def caller() -> ApiKey:
    """The request's API key; a read-only key may only read (GET), whatever the endpoint."""
    key = services().keys.authenticate(request.headers.get("Authorization"))
    if request.method not in ("GET", "HEAD") and not key.writes:
        raise Forbidden(f"API key {key.id} is read-only: it may read jobs but not create, message or archive them")
    return key


def project_for(project_id: str, key: ApiKey) -> Project:
    """The project, if the key may act on it; one outside its scope answers exactly like one that does not exist."""
    project = services().projects.find(project_id) if project_id.startswith("prj_") else None
    if project is None or not key.allows(project):
        raise ProjectNotFound(f"no project {project_id}")
    return project


def job_for(project: Project, job_id: str) -> Job:
    job = services().jobs.find(job_id)
    if job is None or job.project_id != project.id:
        raise JobNotFound(f"no job {job_id} in project {project.id}")
    return job


def writable(project: Project) -> None:
    if not project.enabled:
        raise ProjectDisabled(f"project {project.id} is disabled: its repository is no longer reachable")
