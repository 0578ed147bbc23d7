"""Who may review: whether a person is a collaborator of a repository, and review requests on a pull request with
GitHub's refusals (the pull request's author, someone who is not a collaborator)."""

from flask import Blueprint, Response

from tests.github_emulator import payloads
from tests.github_emulator.calls import (
    GitHubError,
    created,
    emulator,
    invalid,
    json_body,
    need,
    not_found,
    pull_of,
    repository,
)
from tests.github_emulator.state import now

blueprint = Blueprint("reviewers", __name__)

AUTHOR = "Review cannot be requested from pull request author."
NOT_COLLABORATOR = (
    "Reviews may only be requested from collaborators. One or more of the users or teams you "
    "specified is not a collaborator of the {repo} repository."
)


@blueprint.get("/repos/<owner>/<name>/collaborators/<username>", endpoint="repos/check-collaborator")
def check_collaborator(owner: str, name: str, username: str):
    _, repo = repository(owner, name)
    if not emulator().state.is_collaborator(repo, username):
        raise not_found()
    return Response(status=204)


@blueprint.post("/repos/<owner>/<name>/pulls/<int:number>/requested_reviewers", endpoint="pulls/request-reviewers")
def request_reviewers(owner: str, name: str, number: int):
    """All or nothing, as on GitHub: one login that may not review refuses the whole request."""
    token, repo = repository(owner, name)
    need(token, "pull_requests")
    emu, pull, data = emulator(), pull_of(repo, number), json_body()
    reviewers, teams = data.get("reviewers", []), data.get("team_reviewers", [])
    for field, value in (("reviewers", reviewers), ("team_reviewers", teams)):
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise invalid("PullRequest", field)
    if any(login.lower() == pull.user.lower() for login in reviewers):
        raise GitHubError(422, AUTHOR)
    # The emulator has no teams: a team named is never one of the repository's collaborators. Only people review:
    # a bot or an organization with access is refused like someone without.
    if teams or not all(
        login.lower() in emu.state.users
        and emu.state.users[login.lower()].type == "User"
        and emu.state.is_collaborator(repo, login)
        for login in reviewers
    ):
        raise GitHubError(422, NOT_COLLABORATOR.format(repo=repo.full_name))
    added = []
    with emu.state.lock:
        for login in reviewers:
            person = emu.state.users[login.lower()].login
            if person.lower() not in {r.lower() for r in pull.requested_reviewers}:
                pull.requested_reviewers.append(person)
                added.append(person)
        pull.updated_at = now()
    for person in added:
        emu.emit(
            "pull_request",
            payloads.review_requested(emu.render, repo, pull, person, emu.app.bot_login),
            background=True,
        )
    shaped = emu.render.pull(pull)
    return created(shaped, shaped["url"])
