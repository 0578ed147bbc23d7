"""`POST /v2/agent/{projectId}/job` outside Flask: the request checked and read, the job handed to the intake, and
the headers of the answer. The Flask route and the hot path (service/api/hot_paths.py) both answer with it."""

from dataclasses import replace

from flask import Request

from service import intake
from service.api import body as bodies
from service.api.access import Access, grant
from service.apikeys import Seen
from service.errors import InvalidRequest, ProjectNotFound
from service.intake import QuotaSpent
from service.models import ApiKey, Project
from service.services import Services
from service.store.codec import load
from service.store.projects import project_key
from service.store.ratelimit import Quota


def accept(services: Services, request: Request, project_id: str) -> intake.Accepted:
    """One Redis round trip once this process has read the key and the project: the create script checks the key
    and that neither record changed (intake.NewJob.guard) before the cap, idempotency, quota, writes, event and
    enqueue. The first create of a key and project reads them first: two; the first after either changed finds
    the change in the script, then checks the key and the project as every other request does: three; a replay
    reads the earlier job: one more."""
    if project_id.startswith("prj_"):
        seen = services.keys.guarded(request.headers.get("Authorization"), project_key(project_id))
        if seen is not None and (accepted := _guarded(services, request, project_id, seen)) is not None:
            return accepted
    access = _authorized(services, request, project_id)
    return _admitted(services, access.project, _new_job(services, request, access.key, access.project))


def _guarded(services: Services, request: Request, project_id: str, seen: Seen) -> intake.Accepted | None:
    """The create, its key checked in its script against the records as `seen`. None where those records fail a
    check or changed since: the checks then answer in the API's order from the records as they are now."""
    key, project = seen.key, load(Project, seen.record)
    if project is None or not key.writes or not key.allows(project) or not project.enabled:
        return None
    try:
        new = _new_job(services, request, key, project)
    except Exception:
        _authorized(services, request, project_id)  # a refused key or project is answered before the body
        raise
    try:
        return _admitted(services, project, replace(new, guard=seen.guard))
    except intake.GuardFailed as exc:
        services.keys.saw(seen.guard, exc.records)
        return None


def _authorized(services: Services, request: Request, project_id: str) -> Access:
    """The key check with the project read (a round trip), and the project open for work."""
    try:
        granted = grant(services, request.headers.get("Authorization"), request.method, project_id)
    except ProjectNotFound as exc:
        # The anchor service's description of create has no 404: an unknown project is a bad request there.
        raise InvalidRequest(f"{exc.detail} (or not one this key may use)", field="projectId") from None
    intake.ensure_open(granted.project)  # before the body is read, as the API always did
    return granted


def _new_job(services: Services, request: Request, key: ApiKey, project: Project) -> intake.NewJob:
    """The job the request's body asks for."""
    body = bodies.read_object(request, services.settings.max_body_bytes)
    create = bodies.parse_create(body, services.settings)
    return intake.NewJob(
        prompt=create.prompt,
        model=create.model,
        ref=create.ref or project.ref,
        as_draft=create.as_draft,
        max_tokens=create.max_tokens or project.max_tokens,
        key_id=key.id,
        idempotency=bodies.idempotency_claim(request.headers.get("Idempotency-Key"), body, key.account, project.id),
    )


def _admitted(services: Services, project: Project, new: intake.NewJob) -> intake.Accepted:
    try:
        return intake.create(services, project, new)
    except QuotaSpent as exc:
        raise with_quota(exc) from None


def created_headers(accepted: intake.Accepted) -> dict[str, str]:
    """The headers of a create's 201 besides its type and length: where the job is, and the hourly quota left."""
    job = accepted.job
    return {"Location": f"/v2/agent/{job.project_id}/job/{job.id}", **quota_headers(accepted.quota)}


def quota_headers(quota: Quota | None) -> dict[str, str]:
    """The RateLimit-* headers of the project's hourly quota; none for a replay, which used none."""
    if quota is None:
        return {}
    return {
        "RateLimit-Limit": str(quota.limit),
        "RateLimit-Remaining": str(quota.remaining),
        "RateLimit-Reset": str(quota.reset_seconds),
    }


def with_quota(exc: QuotaSpent) -> QuotaSpent:
    """`exc` with the quota's headers, which its 429 carries."""
    exc.headers.update(quota_headers(exc.quota))
    return exc
