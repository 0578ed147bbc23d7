"""Comparing two commits, `GET /repos/{owner}/{repo}/compare/{base}...{head}`: the JSON comparison, or with
`Accept: application/vnd.github.diff` (or `.patch`) a real `git diff` (or `git format-patch`) of the repository
from the two sides' merge base to the head, which is what GitHub's three-dot comparison shows."""

from flask import Blueprint, Response, jsonify, request

from tests.github_emulator.calls import GitHubError, emulator, not_found, repository
from tests.github_emulator.state import Repo

blueprint = Blueprint("compare", __name__)

DIFF = "application/vnd.github.diff"
PATCH = "application/vnd.github.patch"
# Without `page` or `per_page` GitHub lists the newest 250 commits of a comparison.
MAX_COMMITS = 250
# What GitHub's diff and patch show: git's own format, never a configured external or text-converted one.
PLAIN = ("--no-color", "--no-ext-diff", "--no-textconv")


@blueprint.get("/repos/<owner>/<name>/compare/<path:basehead>", endpoint="repos/compare-commits-with-basehead")
def compare(owner: str, name: str, basehead: str):
    token, repo = repository(owner, name)
    if token.permissions.get("contents") not in ("read", "write", "admin"):
        raise GitHubError(403, "Resource not accessible by integration")
    base_name, dots, head_name = basehead.partition("...")
    if not dots:
        raise not_found()
    base, head = _side(repo, base_name), _side(repo, head_name)
    state = emulator().state
    merge_base = state.merge_base(repo, base, head)
    if merge_base is None:
        raise GitHubError(404, f"No common ancestor between {base_name} and {head_name}.")
    wanted = media_type(request.headers.get("Accept", ""))
    if wanted == DIFF:
        return _text(state.git.run("diff", *PLAIN, merge_base, head, git_dir=repo.path).stdout, DIFF)
    if wanted == PATCH:
        return _text(
            state.git.run("format-patch", *PLAIN, "--stdout", f"{merge_base}..{head}", git_dir=repo.path).stdout, PATCH
        )
    commits = [state.commit(repo, sha) for sha in state.commits_between(repo, merge_base, head, MAX_COMMITS)]
    return jsonify(
        emulator().render.comparison(
            repo,
            basehead,
            base=state.commit(repo, base),
            head=head,
            merge_base=state.commit(repo, merge_base),
            commits=commits,
            ahead_by=state.count(repo, base, head),
            behind_by=state.count(repo, head, base),
        )
    )


def media_type(accept: str) -> str | None:
    """DIFF or PATCH when the Accept header asks for one (`vnd.github.v3.diff` is the older spelling), else None
    (JSON). The first of them listed wins."""
    for entry in accept.split(","):
        kind = entry.split(";", 1)[0].strip().lower().replace("vnd.github.v3.", "vnd.github.")
        if kind in (DIFF, PATCH):
            return kind
    return None


def _side(repo: Repo, name: str) -> str:
    """The commit one side of `base...head` names; `owner:branch` works for the repository's own owner only
    (the emulator has no forks)."""
    owner, colon, ref = name.rpartition(":")
    if colon and owner.lower() != repo.owner.lower():
        raise not_found()
    sha = emulator().state.resolve(repo, ref)
    if sha is None:
        raise not_found()
    return sha


def _text(body: bytes, kind: str) -> Response:
    return Response(body, status=200, content_type=f"{kind}; charset=utf-8")
