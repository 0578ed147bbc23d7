"""Check runs (with their suites and annotations), commit statuses and file contents: their REST answers and the
JSON shapes of their webhooks."""

import base64

from flask import Blueprint, jsonify, request

from tests.github_emulator.calls import emulator, not_found, paginated, repository
from tests.github_emulator.payloads import repository_event
from tests.github_emulator.render import Renderer, node_id
from tests.github_emulator.state import CheckRun, CheckSuite, CommitStatus, Repo, iso

blueprint = Blueprint("checks", __name__)


def check_suite(render: Renderer, suite: CheckSuite, *, webhook: bool = False) -> dict:
    """`simple-check-suite`; `webhook` adds what the `check_suite` event's object has besides."""
    repo = render.state.repo_by_id(suite.repo_id)
    runs = [r for r in render.state.check_runs.values() if r.suite_id == suite.id]
    conclusion = worst([r.conclusion for r in runs])
    api = f"{render.base}/repos/{repo.full_name}"
    shape = {
        "id": suite.id,
        "node_id": node_id("CheckSuite", suite.id),
        "head_branch": suite.head_branch,
        "head_sha": suite.head_sha,
        "status": "completed",
        "conclusion": conclusion,
        "url": f"{api}/check-suites/{suite.id}",
        "before": None,
        "after": suite.head_sha,
        "pull_requests": pull_requests_minimal(render, repo, suite.head_branch),
        "app": render.app_json(),
        "created_at": iso(suite.created_at),
        "updated_at": iso(suite.created_at),
    }
    if webhook:
        commit = render.state.commit(repo, suite.head_sha)
        shape.update(
            latest_check_runs_count=len(runs),
            check_runs_url=f"{api}/check-suites/{suite.id}/check-runs",
            rerequestable=True,
            runs_rerequestable=True,
            head_commit={
                "id": commit.sha,
                "tree_id": commit.tree,
                "message": commit.message,
                "timestamp": iso(suite.created_at),
                "author": {"name": commit.author_name, "email": commit.author_email},
                "committer": {"name": commit.committer_name, "email": commit.committer_email},
            },
        )
    return shape


def check_run(render: Renderer, run: CheckRun) -> dict:
    """`check-run` (and the webhook's `check-run-with-simple-check-suite`)."""
    repo = render.state.repo_by_id(run.repo_id)
    suite = render.state.check_suites[run.suite_id]
    api, html = f"{render.base}/repos/{repo.full_name}", f"{render.base}/{repo.full_name}"
    return {
        "id": run.id,
        "node_id": node_id("CheckRun", run.id),
        "head_sha": run.head_sha,
        "external_id": str(run.id),
        "url": f"{api}/check-runs/{run.id}",
        "html_url": f"{html}/runs/{run.id}",
        "details_url": f"{html}/runs/{run.id}",
        "status": "completed",
        "conclusion": run.conclusion,
        "started_at": iso(run.completed_at),
        "completed_at": iso(run.completed_at),
        "name": run.name,
        "output": {
            "title": run.title,
            "summary": run.summary,
            "text": run.text,
            "annotations_count": len(run.annotations),
            "annotations_url": f"{api}/check-runs/{run.id}/annotations",
        },
        "check_suite": check_suite(render, suite),
        "app": render.app_json(),
        "pull_requests": pull_requests_minimal(render, repo, suite.head_branch),
    }


def annotation(render: Renderer, repo: Repo, run: CheckRun, item: tuple) -> dict:
    path, line, message = item
    return {
        "path": path,
        "blob_href": f"{render.base}/{repo.full_name}/blob/{run.head_sha}/{path}",
        "start_line": line,
        "end_line": line,
        "start_column": None,
        "end_column": None,
        "annotation_level": "failure",
        "title": run.name,
        "message": message,
        "raw_details": None,
    }


def status_shape(render: Renderer, status: CommitStatus) -> dict:
    repo = render.state.repo_by_id(status.repo_id)
    return {
        "url": f"{render.base}/repos/{repo.full_name}/statuses/{status.sha}",
        "id": status.id,
        "node_id": node_id("StatusContext", status.id),
        "state": status.state,
        "description": status.description,
        "target_url": status.target_url,
        "context": status.context,
        "avatar_url": f"{render.base}/avatars/u/1?v=4",
        "created_at": iso(status.created_at),
        "updated_at": iso(status.created_at),
    }


def status_event(render: Renderer, status: CommitStatus, sender: str) -> dict:
    """The `status` webhook: the status, its commit and the branches whose head it is."""
    repo = render.state.repo_by_id(status.repo_id)
    commit = render.commit(repo, render.state.commit(repo, status.sha))
    branches = [
        {
            "name": name,
            "commit": {"sha": status.sha, "url": f"{render.base}/repos/{repo.full_name}/commits/{status.sha}"},
            "protected": False,
        }
        for name in render.state.branches_at(repo, status.sha)
    ]
    shape = status_shape(render, status)
    payload = repository_event(
        render,
        repo,
        "",
        sender,
        **{
            "id": status.id,
            "sha": status.sha,
            "name": repo.full_name,
            "target_url": status.target_url,
            "context": status.context,
            "description": status.description,
            "state": status.state,
            "commit": commit,
            "branches": branches,
            "created_at": shape["created_at"],
            "updated_at": shape["updated_at"],
            "avatar_url": shape["avatar_url"],
        },
    )
    del payload["action"]  # the one event with no action
    return payload


def check_events(render: Renderer, run: CheckRun, sender: str) -> list[tuple[str, dict]]:
    """What GitHub sends when a check run completes: `check_run.completed`, then `check_suite.completed`."""
    repo = render.state.repo_by_id(run.repo_id)
    suite = render.state.check_suites[run.suite_id]
    return [
        ("check_run", repository_event(render, repo, "completed", sender, check_run=check_run(render, run))),
        (
            "check_suite",
            repository_event(render, repo, "completed", sender, check_suite=check_suite(render, suite, webhook=True)),
        ),
    ]


def pull_requests_minimal(render: Renderer, repo: Repo, branch: str | None) -> list[dict]:
    """The open pull requests of the repository whose head is `branch` (GitHub lists only those)."""
    found = []
    for pull in render.state.pulls_of(repo.id):
        if pull.state != "open" or pull.head != branch:
            continue
        side = {"id": repo.id, "url": f"{render.base}/repos/{repo.full_name}", "name": repo.name}
        found.append(
            {
                "id": pull.id,
                "number": pull.number,
                "url": f"{render.base}/repos/{repo.full_name}/pulls/{pull.number}",
                "head": {"ref": pull.head, "sha": pull.head_sha, "repo": side},
                "base": {"ref": pull.base, "sha": pull.base_sha, "repo": side},
            }
        )
    return found


def worst(conclusions: list[str]) -> str:
    for bad in ("failure", "timed_out", "cancelled", "action_required"):
        if bad in conclusions:
            return bad
    return "success"


@blueprint.get("/repos/<owner>/<name>/commits/<path:ref>/check-runs", endpoint="checks/list-for-ref")
def list_for_ref(owner: str, name: str, ref: str):
    _, repo = repository(owner, name)
    emu = emulator()
    sha = emu.state.resolve(repo, ref)
    if sha is None:
        raise not_found()
    runs = [
        check_run(emu.render, r)
        for r in list(emu.state.check_runs.values())
        if r.repo_id == repo.id and r.head_sha == sha
    ]
    return jsonify({"total_count": len(runs), "check_runs": runs})


@blueprint.get("/repos/<owner>/<name>/check-runs/<int:run_id>/annotations", endpoint="checks/list-annotations")
def list_annotations(owner: str, name: str, run_id: int):
    _, repo = repository(owner, name)
    emu = emulator()
    run = emu.state.check_runs.get(run_id)
    if run is None or run.repo_id != repo.id:
        raise not_found()
    return paginated([annotation(emu.render, repo, run, item) for item in run.annotations])


@blueprint.get("/repos/<owner>/<name>/commits/<path:ref>/status", endpoint="repos/get-combined-status-for-ref")
def combined_status(owner: str, name: str, ref: str):
    _, repo = repository(owner, name)
    emu = emulator()
    sha = emu.state.resolve(repo, ref)
    if sha is None:
        raise not_found()
    latest: dict[str, CommitStatus] = {}
    for status in list(emu.state.statuses):  # the newest status of each context counts
        if status.repo_id == repo.id and status.sha == sha:
            latest[status.context] = status
    states = [s.state for s in latest.values()]
    state = (
        "failure"
        if {"failure", "error"} & set(states)
        else "pending"
        if "pending" in states or not states
        else "success"
    )
    api = f"{emu.render.base}/repos/{repo.full_name}"
    return jsonify(
        {
            "state": state,
            "sha": sha,
            "total_count": len(latest),
            "statuses": [status_shape(emu.render, s) for s in latest.values()],
            "repository": emu.render.repository(repo),
            "commit_url": f"{api}/commits/{sha}",
            "url": f"{api}/commits/{sha}/status",
        }
    )


@blueprint.get("/repos/<owner>/<name>/contents/<path:path>", endpoint="repos/get-content")
def get_content(owner: str, name: str, path: str):
    """A file's content at `ref` (default branch by default); directories and symlinks are not emulated."""
    _, repo = repository(owner, name)
    emu = emulator()
    ref = request.args.get("ref") or repo.default_branch
    sha = emu.state.resolve(repo, ref)
    if sha is None or path.startswith("-"):
        raise not_found()
    found = emu.state.git.run("rev-parse", "--verify", "-q", f"{sha}:{path}", git_dir=repo.path, check=False)
    blob = found.stdout.decode().strip()
    kind = (
        emu.state.git.run("cat-file", "-t", blob, git_dir=repo.path, check=False).stdout.decode().strip()
        if blob
        else ""
    )
    if kind != "blob":
        raise not_found()
    data = emu.state.git.run("cat-file", "blob", blob, git_dir=repo.path).stdout
    api, html = f"{emu.render.base}/repos/{repo.full_name}", f"{emu.render.base}/{repo.full_name}"
    links = {
        "self": f"{api}/contents/{path}?ref={ref}",
        "git": f"{api}/git/blobs/{blob}",
        "html": f"{html}/blob/{ref}/{path}",
    }
    return jsonify(
        {
            "type": "file",
            "encoding": "base64",
            "size": len(data),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "content": base64.b64encode(data).decode(),
            "sha": blob,
            "url": links["self"],
            "git_url": links["git"],
            "html_url": links["html"],
            "download_url": f"{emu.render.base}/raw/{repo.full_name}/{ref}/{path}",
            "_links": links,
        }
    )
