"""The `/v2/agent` endpoints: create, message, get, list, conversation, archive, cancel, delete and follow jobs;
usage."""

from functools import partial

from flask import Blueprint, Response, current_app, jsonify, request

from service import intake
from service.api import body as bodies
from service.api import create, streams
from service.api.access import Access
from service.api.access import access as _access
from service.api.access import caller as _caller
from service.api.access import services as _services
from service.intake import QuotaSpent
from service.models import Job
from service.store.jobs import add_usage, remaining_budget
from service.store.usage import hosts_of

bp = Blueprint("agent_api", __name__, url_prefix="/v2/agent")


@bp.post("/<project_id>/job")
def create_job(project_id: str) -> Response:
    accepted = create.accept(_services(), request, project_id)
    response = jsonify(accepted.job.to_api())
    response.status_code = 201
    response.headers.update(create.created_headers(accepted))
    return response


def _job_of(granted: Access) -> Job:
    assert granted.job is not None  # access() was given a job id
    return granted.job


@bp.post("/<project_id>/job/<job_id>/message")
def send_message(project_id: str, job_id: str) -> Response:
    services = _services()
    granted = _access(project_id, job_id)
    key, project, job = granted.key, granted.project, _job_of(granted)
    body = bodies.read_object(request, services.settings.max_body_bytes)
    prompt, interrupt = bodies.parse_message(body, services.settings)
    try:
        accepted = intake.follow_up(services, project, job, prompt, key_id=key.id, interrupt=interrupt)
    except QuotaSpent as exc:
        raise create.with_quota(exc) from None
    response = jsonify(accepted.job.to_api())
    response.headers.update(create.quota_headers(accepted.quota))
    return response


@bp.get("/<project_id>/job/<job_id>")
def get_job(project_id: str, job_id: str) -> Response:
    return jsonify(_job_of(_access(project_id, job_id)).to_api())


@bp.get("/<project_id>/jobs")
def list_jobs(project_id: str) -> Response:
    project = _access(project_id).project
    query = bodies.parse_list_query(request.args)
    jobs, cursor = _services().jobs.page(project.id, status=query.status, limit=query.limit, cursor=query.cursor)
    return jsonify({"jobs": [job.to_api() for job in jobs], "nextCursor": cursor})


@bp.get("/<project_id>/job/<job_id>/messages")
def conversation(project_id: str, job_id: str) -> Response:
    job = _job_of(_access(project_id, job_id))
    query = bodies.parse_messages_query(request.args)
    page, cursor = _services().jobs.conversation_page(job.id, limit=query.limit, cursor=query.cursor)
    messages = [m.to_api() for m in page]
    used = add_usage({}, job.usage)
    left = remaining_budget(job)
    remaining = None if left is None else max(0, left)
    return jsonify(
        {
            "messages": messages,
            "nextCursor": cursor,
            "usage": {**used, "maxTokens": job.max_tokens, "remainingTokens": remaining},
        }
    )


@bp.post("/<project_id>/job/<job_id>/archive")
def archive_job(project_id: str, job_id: str) -> Response:
    job = _job_of(_access(project_id, job_id))
    return jsonify(_services().jobs.archive(job.id).to_api())


@bp.delete("/<project_id>/job/<job_id>")
def delete_job(project_id: str, job_id: str) -> Response:
    job = _services().jobs.delete(_job_of(_access(project_id, job_id)).id)
    # The branch and pull request are the repository's: Copydesk leaves them on the code host.
    return jsonify(
        {
            "deleted": True,
            "id": job.id,
            "kept": {
                "branch": job.branch,
                "prLink": job.pr_link,
                "note": "the branch and pull request stay on the code host; delete them there",
            },
        }
    )


@bp.post("/<project_id>/job/<job_id>/cancel")
def cancel_job(project_id: str, job_id: str) -> Response:
    job = _job_of(_access(project_id, job_id))
    return jsonify(_services().jobs.cancel(job.id).to_api())


@bp.get("/<project_id>/job/<job_id>/events")
def job_events(project_id: str, job_id: str) -> Response:
    services = _services()
    granted = _access(project_id, job_id)
    key, project, job = granted.key, granted.project, _job_of(granted)
    query = bodies.parse_events_query(request.args, request.headers.get("Last-Event-ID"))
    if query.as_json:
        events = services.events.after(job.id, query.after, count=bodies.EVENTS_PAGE)
        return jsonify(
            {
                "events": [e.to_api() for e in events],
                "lastEventId": events[-1].id if events else (None if query.after == "0" else query.after),
            }
        )
    if query.resumed and streams.nothing_left(services.jobs, services.events, job.id, query.after, query.follow):
        return Response(status=204)  # tells an EventSource that reconnected to stop: the job is over
    holder = streams.StreamHolder(caller=f"key:{key.id}", account=f"{project.host}:{project.account.lower()}")
    slots: streams.StreamSlots = current_app.extensions["copydesk.streams"]
    slots.take(holder)
    # The key is checked again while the stream is open: revoked or expired, the stream ends.
    response = Response(
        streams.event_stream(
            services.jobs,
            services.events,
            job.id,
            after=query.after,
            keep_open=query.follow,
            keepalive_seconds=services.settings.sse_keepalive_seconds,
            allowed=partial(services.keys.live, key.id),
        ),
        mimetype="text/event-stream",
    )
    response.call_on_close(partial(slots.give_back, holder))
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"  # proxies must pass events on at once
    return response


@bp.get("/usage")
def usage() -> Response:
    key = _caller()
    month = bodies.parse_month(request.args)
    services = _services()
    ledger = services.usage
    # A key made before keys recorded their host: its account's projects tell (local when they cannot).
    found = hosts_of(key.account, services.projects.all()) if key.code_host is None else set()
    host = key.code_host or (found.pop() if len(found) == 1 else "local")
    account = ledger.account(host, key.account, month)
    return jsonify(
        {
            "month": account.month,
            "account": {"name": key.account, **account.to_api(), "monthlyCap": ledger.cap(host, key.account)},
            "key": {"id": key.id, **ledger.key(key.id, month).to_api()},
        }
    )
