"""Repositories and pull requests: get a repository, a collaborator's permission, list, open, read (as JSON or as
a diff) and update pull requests, delete a branch."""

from flask import Blueprint, Response, jsonify, request

from tests.github_emulator import routes_compare
from tests.github_emulator.calls import (
    GitHubError,
    created,
    custom,
    emulator,
    invalid,
    json_body,
    need,
    paginated,
    pull_of,
    repository,
)
from tests.github_emulator.state import Pull, Repo, Token, now

blueprint = Blueprint("pulls", __name__)


@blueprint.get("/repos/<owner>/<name>", endpoint="repos/get")
def get_repo(owner: str, name: str):
    return jsonify(emulator().render.repository(repository(owner, name)[1], full=True))


@blueprint.get(
    "/repos/<owner>/<name>/collaborators/<username>/permission", endpoint="repos/get-collaborator-permission-level"
)
def collaborator_permission(owner: str, name: str, username: str):
    _, repo = repository(owner, name)
    if username.lower() not in emulator().state.users:
        raise GitHubError(404, f"{username} is not a user")
    return jsonify(emulator().render.collaborator_permission(repo, username))


@blueprint.get("/repos/<owner>/<name>/pulls", endpoint="pulls/list")
def list_pulls(owner: str, name: str):
    _, repo = repository(owner, name)
    wanted = request.args.get("state", "open")
    if wanted not in ("open", "closed", "all"):
        raise invalid("PullRequest", "state")
    head, base = request.args.get("head"), request.args.get("base")
    pulls = [
        pull_of(repo, p.number)
        for p in emulator().state.pulls_of(repo.id)
        if wanted in ("all", p.state)
        and (base is None or p.base == base)
        and (head is None or f"{repo.owner}:{p.head}".lower() == head.lower())
    ]
    pulls.sort(key=lambda p: p.number, reverse=True)  # GitHub's default order: newest first
    return paginated([emulator().render.pull(p) for p in pulls])


@blueprint.post("/repos/<owner>/<name>/pulls", endpoint="pulls/create")
def create_pull(owner: str, name: str):
    token, repo = repository(owner, name)
    need(token, "pull_requests")
    emu, data = emulator(), json_body()
    for field in ("title", "head", "base"):
        if not data.get(field):
            raise invalid("PullRequest", field, "missing_field")
    head_owner, _, head = data["head"].rpartition(":")
    if head_owner and head_owner.lower() != repo.owner.lower():
        raise invalid("PullRequest", "head")
    with emu.state.lock:
        head_sha, base_sha = emu.state.branch_sha(repo, head), emu.state.branch_sha(repo, data["base"])
        if head_sha is None:
            raise invalid("PullRequest", "head")
        if base_sha is None:
            raise invalid("PullRequest", "base")
        if any(p.state == "open" and p.head == head and p.base == data["base"] for p in emu.state.pulls_of(repo.id)):
            raise custom("PullRequest", f"A pull request already exists for {repo.owner}:{head}.")
        if emu.state.is_ancestor(repo, head_sha, base_sha):
            raise custom("PullRequest", f"No commits between {data['base']} and {head}")
        pull = Pull(
            emu.state.new_id(),
            emu.state.next_number(repo),
            repo.id,
            data["title"],
            data.get("body"),
            head,
            data["base"],
            emu.app.bot_login,
            bool(data.get("draft")),
            now(),
            head_sha,
            base_sha,
        )
        emu.state.pulls[(repo.id, pull.number)] = pull
    shaped = emu.render.pull(pull)
    return created(shaped, shaped["url"])


@blueprint.get("/repos/<owner>/<name>/pulls/<int:number>", endpoint="pulls/get")
def get_pull(owner: str, name: str, number: int):
    token, repo = repository(owner, name)
    pull = pull_of(repo, number)
    if routes_compare.media_type(request.headers.get("Accept", "")) == routes_compare.DIFF:
        return pull_diff(token, repo, pull)
    return jsonify(emulator().render.pull(pull))


def pull_diff(token: Token, repo: Repo, pull: Pull) -> Response:
    """What the pull request changed, as `git diff` from where it left its base (the base it was merged into, once
    merged); refused with 406 when longer than GitHub shows (the emulator's `max_diff_lines` or `max_diff_files`)."""
    if token.permissions.get("pull_requests") not in ("read", "write", "admin"):
        raise GitHubError(403, "Resource not accessible by integration")
    emu = emulator()
    base = pull.base_sha if pull.state == "closed" else emu.state.branch_sha(repo, pull.base) or pull.base_sha
    merge_base = emu.state.merge_base(repo, base, pull.head_sha) or base
    git = emu.state.git
    files = git.out("diff", "--name-only", "-z", merge_base, pull.head_sha, git_dir=repo.path).count("\x00")
    diff = git.run("diff", *routes_compare.PLAIN, merge_base, pull.head_sha, git_dir=repo.path).stdout
    if files > emu.max_diff_files or diff.count(b"\n") > emu.max_diff_lines:
        limit = f"files ({emu.max_diff_files})" if files > emu.max_diff_files else f"lines ({emu.max_diff_lines})"
        raise GitHubError(
            406,
            f"Sorry, the diff exceeded the maximum number of {limit}. Consider using 'List "
            "pull requests files' API or locally cloning the repository instead.",
            [{"resource": "PullRequest", "field": "diff", "code": "too_large"}],
        )
    return Response(diff, status=200, content_type=f"{routes_compare.DIFF}; charset=utf-8")


@blueprint.patch("/repos/<owner>/<name>/pulls/<int:number>", endpoint="pulls/update")
def update_pull(owner: str, name: str, number: int):
    token, repo = repository(owner, name)
    need(token, "pull_requests")
    emu, pull, data = emulator(), pull_of(repo, number), json_body()
    if data.get("state") not in (None, "open", "closed"):
        raise invalid("PullRequest", "state")
    if data.get("base") is not None and emu.state.branch_sha(repo, data["base"]) is None:
        raise invalid("PullRequest", "base")
    with emu.state.lock:
        pull.title = data.get("title", pull.title)
        pull.body = data.get("body", pull.body)
        pull.base = data.get("base", pull.base)
        if data.get("state") and data["state"] != pull.state and pull.merged_at is None:
            pull.state = data["state"]
            pull.closed_at = now() if pull.state == "closed" else None
        pull.updated_at = now()
    return jsonify(emu.render.pull(pull))


@blueprint.delete("/repos/<owner>/<name>/git/refs/<path:ref>", endpoint="git/delete-ref")
def delete_ref(owner: str, name: str, ref: str):
    token, repo = repository(owner, name)
    need(token, "contents")
    emu, full_ref = emulator(), f"refs/{ref}"
    with emu.state.lock:
        exists = emu.state.git.run("rev-parse", "--verify", "-q", full_ref, git_dir=repo.path, check=False)
        if not ref.startswith(("heads/", "tags/")) or exists.returncode != 0:
            raise GitHubError(422, "Reference does not exist")
        emu.state.git.run("update-ref", "-d", full_ref, git_dir=repo.path)
    if ref.startswith("heads/"):
        emu.close_pulls_of_branch(repo, ref[len("heads/") :], emu.app.bot_login)
    return Response(status=204)
