"""Web pages of the local code host: a repository's pull requests, and each one with its diff."""

from flask import Blueprint, abort, render_template

from service.codehost.local import LocalCodeHost
from service.store.projects import ProjectStore


def create_blueprint(host: LocalCodeHost, projects: ProjectStore) -> Blueprint:
    """Pages at `/local/<project id>` and `/local/<project id>/pulls/<number>`."""
    bp = Blueprint("local_pages", __name__, template_folder="templates", url_prefix="/local")

    def local_project(project_id: str):
        project = projects.find(project_id) if project_id.startswith("prj_") else None
        if project is None or project.host != host.name:
            abort(404, description="no such local project")
        return project

    @bp.get("/<project_id>")
    def repository(project_id: str):
        project = local_project(project_id)
        return render_template("local_repository.html", project=project, pulls=host.pulls(project.id),
                               url_for_pull=lambda n: host.pull_url(project.id, n))

    @bp.get("/<project_id>/pulls/<int:number>")
    def pull(project_id: str, number: int):
        project = local_project(project_id)
        found = host.pull(project.id, number)
        if found is None:
            abort(404, description="no such pull request")
        return render_template("local_pull.html", project=project, pull=found, diff=host.diff(project, found))

    return bp
