"""The local code host's pull-request pages, behind sign-in for people of the project's account: the
description as sanitised Markdown, state, diff, comments, and a comment box whose text becomes a follow-up."""

from flask import Blueprint, redirect, request

from bot.dashboard.views_jobs import send_follow_up, visible_project
from bot.dashboard.web import dashboard, page, register_handlers, signed_in
from service.codehost.local import HOST as LOCAL_HOST
from service.errors import ProjectNotFound
from service.models import JobStatus


def create_blueprint() -> Blueprint:
    """Pages at `/local/<project id>` and `/local/<project id>/pulls/<number>` (the jobs' `prLink`)."""
    bp = Blueprint("local_pages", __name__, url_prefix="/local", template_folder="templates", static_folder=None)
    register_handlers(bp)

    def local_project(project_id: str):
        project = visible_project(project_id)
        if project.host != LOCAL_HOST:
            raise ProjectNotFound(f"There is no local project {project_id} in your accounts.")
        return project

    def local_pull(project, number: int):
        found = dashboard().local.pull(project.id, number)
        if found is None:
            raise ProjectNotFound(f"Project {project.id} has no pull request #{number}.")
        return found

    @bp.get("/<project_id>")
    def repository(project_id: str):
        project = local_project(project_id)
        return page("local_repository.html", project=project, pulls=dashboard().local.pulls(project.id))

    @bp.get("/<project_id>/pulls/<int:number>")
    def pull(project_id: str, number: int):
        project = local_project(project_id)
        found = local_pull(project, number)
        deps = dashboard()
        job = deps.services.jobs.find(found.job_id)
        return page(
            "local_pull.html",
            project=project,
            pull=found,
            job=job,
            diff=deps.local.diff(project, found),
            archived=job is not None and job.status is JobStatus.ARCHIVED,
            can_write=signed_in().owner_of(project).admin,
        )

    @bp.post("/<project_id>/pulls/<int:number>/comments")
    def comment(project_id: str, number: int):
        project = local_project(project_id)
        signed_in().admin_of_project(project)
        found = local_pull(project, number)
        body = request.form.get("body", "")
        deps = dashboard()
        job = deps.services.jobs.get(found.job_id)
        send_follow_up(project, job, body, source="local")
        deps.local.comment(project, number, f"@{signed_in().login}: {body.strip()}")
        return redirect(f"/local/{project.id}/pulls/{number}", 303)

    return bp
