"""`POST /v2/agent/{projectId}/job` outside Flask: the request checked and read, the job handed to the intake, and
the headers of the answer. The Flask route and the hot path (service/api/hot_paths.py) both answer with it."""

from flask import Request

from service import intake
from service.api import body as bodies
from service.api.access import grant
from service.errors import InvalidRequest, ProjectNotFound
from service.intake import QuotaSpent
from service.services import Services
from service.store.ratelimit import Quota


def accept(services: Services, request: Request, project_id: str) -> intake.Accepted:
    """Two Redis round trips: the key check with the project read, and the create script (cap, idempotency,
    quota, writes, the event and the run's enqueue); a replay reads the earlier job, a third."""
    try:
        granted = grant(services, request.headers.get("Authorization"), request.method, project_id)
    except ProjectNotFound as exc:
        # The anchor service's description of create has no 404: an unknown project is a bad request there.
        raise InvalidRequest(f"{exc.detail} (or not one this key may use)", field="projectId") from None
    key, project = granted.key, granted.project
    intake.ensure_open(project)  # before the body is read, as the API always did
    body = bodies.read_object(request, services.settings.max_body_bytes)
    create = bodies.parse_create(body, services.settings)
    claim = bodies.idempotency_claim(request.headers.get("Idempotency-Key"), body, key.account, project.id)
    new = intake.NewJob(
        prompt=create.prompt,
        model=create.model,
        ref=create.ref or project.ref,
        as_draft=create.as_draft,
        max_tokens=create.max_tokens or project.max_tokens,
        key_id=key.id,
        idempotency=claim,
    )
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
