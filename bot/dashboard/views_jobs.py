"""A project's jobs, newest first, and the job page: conversation, usage, error, pull request and diff, follow-up,
archive and delete, and live progress while the job is active."""

from functools import partial

from flask import Blueprint, Response, current_app, redirect, request

from bot.dashboard.github_diff import ShownDiff
from bot.dashboard.jobrows import job_rows
from bot.dashboard.web import dashboard, page, signed_in
from bot.github.pulls import pull_state as github_pull_state
from service import intake
from service.api import streams
from service.api.body import parse_list_query
from service.codehost.local import HOST as LOCAL_HOST
from service.errors import InvalidRequest, JobNotFound, ProjectNotFound
from service.job_events import EventType
from service.models import Job, JobStatus, Message, Project
from service.store.job_events import check_event_id
from service.store.jobs import add_usage

PAGE_SIZE = 20


def register(bp: Blueprint) -> None:
    @bp.get("/projects/<project_id>/jobs")
    def jobs(project_id: str):
        project = visible_project(project_id)
        status = request.args.get("status", "")
        query = parse_list_query(
            {
                k: v
                for k, v in (("status", status), ("cursor", request.args.get("cursor")), ("limit", str(PAGE_SIZE)))
                if v
            }
        )
        found, cursor = dashboard().services.jobs.page(
            project.id, status=query.status, limit=query.limit, cursor=query.cursor
        )
        deps = dashboard()
        rows = job_rows(deps.services.jobs, deps.services.redis, deps.local, project, found)
        return page(
            "jobs.html",
            project=project,
            rows=rows,
            status_filter=status,
            next_cursor=cursor,
            statuses=[s.value for s in JobStatus],
        )

    @bp.get("/projects/<project_id>/jobs/<job_id>")
    def job(project_id: str, job_id: str):
        project, found = visible_job(project_id, job_id)
        # Where the page's event stream starts, and which events it listens to: the full page's alone, never
        # worked out again for the live part the page polls.
        return page(
            "job.html",
            **_job_context(project, found),
            last_event=dashboard().services.events.last_id(found.id) or "0",
            event_types=" ".join(t.value for t in EventType),
        )

    @bp.get("/projects/<project_id>/jobs/<job_id>/live")
    def live(project_id: str, job_id: str):
        # The part of the job page that changes while a run works; the page's script swaps it in. Nothing
        # (204) while the job has not changed since the version the page shows, so polling stays cheap.
        project, found = visible_job(project_id, job_id)
        if request.args.get("since") == found.updated_at and found.status is JobStatus.ACTIVE:
            return "", 204
        return page("job_live.html", **_job_context(project, found))

    @bp.get("/projects/<project_id>/jobs/<job_id>/events")
    def events(project_id: str, job_id: str):
        # The job's event stream for the page's EventSource, authorised by the session: a browser's EventSource
        # cannot send a bearer key. The page refetches its live part when an event comes.
        project, found = visible_job(project_id, job_id)
        services = dashboard().services
        after = check_event_id(request.headers.get("Last-Event-ID") or request.args.get("after") or "0", "after")
        if streams.nothing_left(services.jobs, services.events, found.id, after, False):
            return Response(status=204)  # tells a reconnecting EventSource to stop: the job is over
        session = signed_in().session
        holder = streams.StreamHolder(
            caller=f"session:{session.id_hash}", account=f"{project.host}:{project.account.lower()}"
        )
        slots: streams.StreamSlots = current_app.extensions["copydesk.streams"]
        slots.take(holder)
        # The session is checked again while the stream is open: signed out or expired, the stream ends.
        response = Response(
            streams.event_stream(
                services.jobs,
                services.events,
                found.id,
                after=after,
                keep_open=False,
                keepalive_seconds=services.settings.sse_keepalive_seconds,
                allowed=partial(dashboard().sessions.live, session),
            ),
            mimetype="text/event-stream",
        )
        response.call_on_close(partial(slots.give_back, holder))
        response.headers["X-Accel-Buffering"] = "no"
        return response

    @bp.post("/projects/<project_id>/jobs/<job_id>/message")
    def follow_up(project_id: str, job_id: str):
        project, found = visible_job(project_id, job_id)
        signed_in().admin_of_project(project)
        send_follow_up(project, found, request.form.get("prompt", ""), source="dashboard")
        return redirect(f"/dashboard/projects/{project.id}/jobs/{found.id}", 303)

    @bp.post("/projects/<project_id>/jobs/<job_id>/archive")
    def archive(project_id: str, job_id: str):
        project, found = visible_job(project_id, job_id)
        signed_in().admin_of_project(project)
        dashboard().services.jobs.archive(found.id)
        return redirect(f"/dashboard/projects/{project.id}/jobs/{found.id}", 303)

    @bp.post("/projects/<project_id>/jobs/<job_id>/cancel")
    def cancel(project_id: str, job_id: str):
        project, found = visible_job(project_id, job_id)
        signed_in().admin_of_project(project)
        dashboard().services.jobs.cancel(found.id)  # the API's cancel: JobNotActive gets its clear page
        return redirect(f"/dashboard/projects/{project.id}/jobs/{found.id}", 303)

    @bp.post("/projects/<project_id>/jobs/<job_id>/delete")
    def delete(project_id: str, job_id: str):
        project, found = visible_job(project_id, job_id)
        signed_in().admin_of_project(project)
        if request.form.get("confirm") != found.id:
            raise InvalidRequest(f"Tick the box to confirm that job {found.id} is to be deleted.", field="confirm")
        dashboard().services.jobs.delete(found.id)  # the API's delete: JobActive gets its clear page
        return redirect(f"/dashboard/projects/{project.id}/jobs", 303)


def visible_project(project_id: str) -> Project:
    """The project, when the viewer can see its account; else ProjectNotFound (never revealed)."""
    viewer = signed_in()
    project = dashboard().services.projects.find(project_id) if project_id.startswith("prj_") else None
    if project is None or not viewer.sees(project):
        raise ProjectNotFound(f"There is no project {project_id} in your accounts.")
    return project


def visible_job(project_id: str, job_id: str) -> tuple[Project, Job]:
    project = visible_project(project_id)
    job = dashboard().services.jobs.find(job_id)
    if job is None or job.project_id != project.id:
        raise JobNotFound(f"Project {project.id} has no job {job_id}.")
    return project, job


def send_follow_up(project: Project, job: Job, text: str, *, source: str) -> None:
    """Queue a follow-up message through the intake, as the API does: the same rules and refusals."""
    # A form's text area adds line breaks at the ends; what is left must pass the intake's prompt rules.
    intake.follow_up(dashboard().services, project, job, text.strip(), source=source, author=signed_in().login)


def pull_state(project: Project, job: Job) -> str | None:
    """open, merged or closed for the job's pull request on its code host; None when it has none."""
    if job.pr_number is None:
        return None
    if project.host != LOCAL_HOST:
        return github_pull_state(dashboard().services.redis, job)
    pull = dashboard().local.pull(project.id, job.pr_number)
    return pull.state if pull else None


def _diff(project: Project, job: Job, conversation: list[Message]) -> ShownDiff:
    """The diff of the job's pull request: the local code host's own, or GitHub's (or why GitHub gave none)."""
    deps = dashboard()
    if job.pr_number is None:
        return ShownDiff(None)
    if project.host != LOCAL_HOST:
        head = next((m.commit for m in reversed(conversation) if m.commit), None)
        return deps.github_diffs.for_job(project, job, head)
    pull = deps.local.pull(project.id, job.pr_number)
    return ShownDiff(deps.local.diff(project, pull) if pull else None)


def _job_context(project: Project, job: Job) -> dict:
    """What the job page and its polled live part (job_live.html) both show."""
    deps = dashboard()
    conversation = deps.services.jobs.conversation(job.id)
    diff = _diff(project, job, conversation)
    viewer = signed_in()
    return {
        "project": project,
        "job": job,
        "conversation": conversation,
        "usage": add_usage({}, job.usage),
        "pr_state": pull_state(project, job),
        "diff": diff.text,
        "diff_truncated": diff.truncated,
        "diff_problem": diff.problem,
        "diff_cap_kib": deps.github_diffs.max_bytes // 1024,
        "can_write": viewer.owner_of(project).admin,
        "active": job.status is JobStatus.ACTIVE,
    }
