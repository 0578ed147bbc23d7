"""The projects page of an account: ids to hand to API callers, state and job counts; admins switch projects
on and off, and the operator adds local projects."""

from pathlib import Path

from flask import Blueprint, redirect, request

from bot.dashboard.sessions import OPERATOR
from bot.dashboard.views_jobs import visible_project
from bot.dashboard.web import dashboard, page, signed_in
from service.codehost.base import CodeHostError
from service.errors import ProjectDisabled, ProjectNotFound
from service.models import Project

# Why a project is disabled, in the words the page shows (keys: the project's `disabled_reason`).
_REASONS = {"installation_removed": "the GitHub App was uninstalled or lost this repository",
            "installation_suspended": "the GitHub App installation is suspended",
            ProjectDisabled.code: "an admin switched it off"}


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
        if action == "enable" and not switchable(project):
            return _projects_page(account, error=f"Project {project.id} was disabled by its code host "
                                  f"({_REASONS.get(project.disabled_reason or '', project.disabled_reason)}), not by "
                                  "an admin; it comes back when its installation is restored.", status=409)
        # Disabling an already disabled project would replace the code host's reason with the admin's own.
        if project.enabled or action == "enable":
            services.projects.set_enabled(project.id, action == "enable")
        return redirect(f"/dashboard/accounts/{admin.login}/projects", 303)

    @bp.post("/accounts/<account>/projects")
    def add_local(account: str):
        viewer = signed_in()
        admin = viewer.admin_of(account)
        if viewer.session.source != OPERATOR:
            return _projects_page(account, error="Only the operator (signed in with the server's login link) can "
                                  "add local projects.", status=403)
        deps = dashboard()
        form = request.form
        try:
            if not form.get("repository", "").strip() or not form.get("ref", "").strip():
                raise CodeHostError("give the bare repository's path on the server and its base branch")
            deps.local.register(deps.services.projects, path=Path(form["repository"].strip()),
                                ref=form["ref"].strip(), account=admin.login,
                                docs_root=form.get("docs_root", "").strip())
        except CodeHostError as exc:
            return _projects_page(account, error=str(exc), status=400)
        return redirect(f"/dashboard/accounts/{admin.login}/projects", 303)


def switchable(project: Project) -> bool:
    """Whether an admin may switch the project on or off: not while its code host (GitHub) has it disabled."""
    # No reason at all: a project disabled before reasons were kept; only admins and the operator disabled then.
    return project.enabled or project.disabled_reason in (None, ProjectDisabled.code)


def _projects_page(account: str, *, error: str | None = None, status: int = 200):
    viewer = signed_in()
    shown = viewer.account(account)
    services = dashboard().services
    projects = [p for p in services.projects.all() if shown.owns(p)]
    return page("projects.html", status, account=shown, projects=projects,
                counts={p.id: services.jobs.counts(p.id) for p in projects},
                operator=viewer.session.source == OPERATOR, error=error, reasons=_REASONS,
                switchable={p.id: switchable(p) for p in projects},
                form=request.form if request.method == "POST" else {})
