"""The projects page of an account: ids to hand to API callers, state and job counts; admins switch projects
on and off, and the operator adds local projects."""

from pathlib import Path

from flask import Blueprint, redirect, request

from bot.dashboard.sessions import OPERATOR
from bot.dashboard.views_jobs import visible_project
from bot.dashboard.web import dashboard, page, signed_in
from service.codehost.base import CodeHostError
from service.errors import HostDisabledProject, ProjectNotFound
from service.models import Project
from service.projectstate import DisabledReason
from service.store.projects import state_of


def register(bp: Blueprint) -> None:
    @bp.get("/accounts/<account>/projects")
    def projects(account: str):
        return _projects_page(account)

    @bp.post("/accounts/<account>/projects/<project_id>/<action>")
    def switch(account: str, project_id: str, action: str):
        admin = signed_in().admin_of(account)
        services = dashboard().services
        project = visible_project(project_id)
        if not admin.owns(project) or action not in ("enable", "disable"):
            raise ProjectNotFound(f"{admin.login} has no project {project_id}")
        try:
            if action == "enable":
                services.projects.enable(project.id)
            else:
                services.projects.disable(project.id, DisabledReason.ADMIN)
        except HostDisabledProject as refused:
            return _projects_page(account, error=f"{refused.detail}.", status=409)
        return redirect(f"/dashboard/accounts/{admin.login}/projects", 303)

    @bp.post("/accounts/<account>/projects")
    def add_local(account: str):
        viewer = signed_in()
        admin = viewer.admin_of(account)
        if viewer.session.source != OPERATOR:
            return _projects_page(
                account,
                error="Only the operator (signed in with the server's login link) can add local projects.",
                status=403,
            )
        deps = dashboard()
        form = request.form
        try:
            if not form.get("repository", "").strip() or not form.get("ref", "").strip():
                raise CodeHostError("give the bare repository's path on the server and its base branch")
            deps.local.register(
                deps.services.projects,
                path=Path(form["repository"].strip()),
                ref=form["ref"].strip(),
                account=admin.login,
                docs_root=form.get("docs_root", "").strip(),
            )
        except CodeHostError as exc:
            return _projects_page(account, error=str(exc), status=400)
        return redirect(f"/dashboard/accounts/{admin.login}/projects", 303)


def switchable(project: Project) -> bool:
    """Whether an admin may switch the project on or off: not while its code host (GitHub) has it disabled."""
    return state_of(project).host is None


def why_disabled(project: Project) -> str:
    """Who switched the project off, in the page's words."""
    state = state_of(project)
    if state.reason is None:
        return ""
    return state.reason.label + ("; an admin switched it off too" if state.host and state.admin else "")


def _projects_page(account: str, *, error: str | None = None, status: int = 200):
    viewer = signed_in()
    shown = viewer.account(account)
    services = dashboard().services
    projects = [p for p in services.projects.all() if shown.owns(p)]
    return page(
        "projects.html",
        status,
        account=shown,
        projects=projects,
        counts={p.id: services.jobs.counts(p.id) for p in projects},
        operator=viewer.session.source == OPERATOR,
        error=error,
        reasons={p.id: why_disabled(p) for p in projects},
        switchable={p.id: switchable(p) for p in projects},
        form=request.form if request.method == "POST" else {},
    )
