"""The webhook payloads GitHub sends for the events Copydesk routes, built from the emulator's records."""

from tests.github_emulator.render import Renderer, node_id
from tests.github_emulator.state import Comment, Installation, Pull, Repo, Review, iso, now

ZEN = "Design for failure."


def repository_event(render: Renderer, repo: Repo, action: str, sender: str, **objects) -> dict:
    """A repository event: the objects, the repository, the sender, and the installation and organization."""
    payload = {"action": action, **objects, "repository": render.repository(repo), "sender": render.user(sender)}
    installation = render.state.installation_of(repo)
    if installation is not None:
        payload["installation"] = {"id": installation.id, "node_id": node_id("Installation", installation.id)}
    if render.state.user(repo.owner).type == "Organization":
        payload["organization"] = render.organization(repo.owner)
    return payload


def issue_comment(render: Renderer, repo: Repo, pull: Pull, comment: Comment) -> dict:
    return repository_event(
        render, repo, "created", comment.user, issue=render.pull_as_issue(pull), comment=render.issue_comment(comment)
    )


def issue_comment_edited(render: Renderer, repo: Repo, pull: Pull, comment: Comment, old_body: str) -> dict:
    return repository_event(
        render,
        repo,
        "edited",
        comment.user,
        changes={"body": {"from": old_body}},
        issue=render.pull_as_issue(pull),
        comment=render.issue_comment(comment),
    )


def review_comment(render: Renderer, repo: Repo, pull: Pull, comment: Comment) -> dict:
    return repository_event(
        render, repo, "created", comment.user, comment=render.review_comment(comment), pull_request=render.pull(pull)
    )


def review(render: Renderer, repo: Repo, pull: Pull, submitted: Review) -> dict:
    return repository_event(
        render, repo, "submitted", submitted.user, review=render.review(submitted), pull_request=render.pull(pull)
    )


def pull_request(render: Renderer, repo: Repo, pull: Pull, action: str, sender: str) -> dict:
    return repository_event(render, repo, action, sender, number=pull.number, pull_request=render.pull(pull))


def review_requested(render: Renderer, repo: Repo, pull: Pull, reviewer: str, sender: str) -> dict:
    """`pull_request.review_requested`: GitHub sends one for each person a review is requested from."""
    payload = pull_request(render, repo, pull, "review_requested", sender)
    return {**payload, "requested_reviewer": render.user(reviewer)}


def installation(render: Renderer, inst: Installation, action: str, sender: str) -> dict:
    repos = [render.state.repo_by_id(repo_id) for repo_id in inst.repo_ids]
    return {
        "action": action,
        "installation": render.installation(inst),
        "repositories": [render.repository_brief(repo) for repo in repos],
        "requester": None,
        "sender": render.user(sender),
    }


def installation_repositories(
    render: Renderer, inst: Installation, action: str, sender: str, changed: list[Repo]
) -> dict:
    briefs = [render.repository_brief(repo) for repo in changed]
    return {
        "action": action,
        "installation": render.installation(inst),
        "repository_selection": inst.selection,
        "repositories_added": briefs if action == "added" else [],
        "repositories_removed": briefs if action == "removed" else [],
        "requester": None,
        "sender": render.user(sender),
    }


def ping(render: Renderer, hook_id: int, url: str) -> dict:
    """The ping GitHub sends to an App's webhook when the App is created."""
    stamp = iso(now())
    hook = {
        "type": "App",
        "id": hook_id,
        "name": "web",
        "active": True,
        "events": list(render.app.events),
        "config": {"content_type": "json", "insecure_ssl": "0", "url": url, "secret": "********"},
        "updated_at": stamp,
        "created_at": stamp,
        "app_id": render.app.id,
        "deliveries_url": f"{render.base}/app/hook/deliveries",
    }
    return {"zen": ZEN, "hook_id": hook_id, "hook": hook}
