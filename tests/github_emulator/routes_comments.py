"""Conversation comments, replies to line comments, and reactions; the App's own comments cause webhooks too."""

from flask import Blueprint, jsonify

from tests.github_emulator import payloads
from tests.github_emulator.calls import (
    GitHubError,
    created,
    emulator,
    invalid,
    json_body,
    need,
    not_found,
    paginated,
    pull_of,
    repository,
)
from tests.github_emulator.state import REACTIONS, Reaction, Repo, Review, now

blueprint = Blueprint("comments", __name__)


def comment_text(resource: str) -> str:
    text = json_body().get("body")
    if not isinstance(text, str) or not text:
        raise invalid(resource, "body", "missing_field")
    return text


@blueprint.get("/repos/<owner>/<name>/issues/<int:number>/comments", endpoint="issues/list-comments")
def list_comments(owner: str, name: str, number: int):
    _, repo = repository(owner, name)
    pull_of(repo, number)
    emu = emulator()
    return paginated([emu.render.issue_comment(c) for c in emu.state.comments_on(repo.id, number, "issue")])


@blueprint.post("/repos/<owner>/<name>/issues/<int:number>/comments", endpoint="issues/create-comment")
def create_comment(owner: str, name: str, number: int):
    token, repo = repository(owner, name)
    need(token, "issues", "pull_requests")
    emu, pull, text = emulator(), pull_of(repo, number), comment_text("IssueComment")
    comment = emu.add_comment(repo, pull, emu.app.bot_login, text, kind="issue", via_app=True)
    emu.emit("issue_comment", payloads.issue_comment(emu.render, repo, pull, comment), background=True)
    shaped = emu.render.issue_comment(comment)
    return created(shaped, shaped["url"])


@blueprint.patch("/repos/<owner>/<name>/issues/comments/<int:comment_id>", endpoint="issues/update-comment")
def update_comment(owner: str, name: str, comment_id: int):
    """Edit a conversation comment; an App edits only its own (people's are theirs)."""
    token, repo = repository(owner, name)
    need(token, "issues", "pull_requests")
    emu = emulator()
    comment = emu.state.comments.get(comment_id)
    if comment is None or comment.kind != "issue" or comment.repo_id != repo.id:
        raise not_found()
    if comment.user != emu.app.bot_login:
        raise GitHubError(403, "Resource not accessible by integration")
    text = comment_text("IssueComment")
    with emu.state.lock:
        old, comment.body, comment.updated_at = comment.body, text, now()
    pull = pull_of(repo, comment.number)
    emu.emit("issue_comment", payloads.issue_comment_edited(emu.render, repo, pull, comment, old), background=True)
    return jsonify(emu.render.issue_comment(comment))


@blueprint.post(
    "/repos/<owner>/<name>/pulls/<int:number>/comments/<int:comment_id>/replies",
    endpoint="pulls/create-reply-for-review-comment",
)
def reply(owner: str, name: str, number: int, comment_id: int):
    token, repo = repository(owner, name)
    need(token, "pull_requests")
    emu, pull = emulator(), pull_of(repo, number)
    parent = emu.state.comments.get(comment_id)
    if parent is None or parent.kind != "review" or parent.repo_id != repo.id or parent.number != number:
        raise not_found()
    comment = emu.add_comment(
        repo,
        pull,
        emu.app.bot_login,
        comment_text("PullRequestReviewComment"),
        kind="review",
        via_app=True,
        path=parent.path,
        line=parent.line,
        in_reply_to=parent.in_reply_to or parent.id,
    )
    emu.emit("pull_request_review_comment", payloads.review_comment(emu.render, repo, pull, comment), background=True)
    shaped = emu.render.review_comment(comment)
    return created(shaped, shaped["url"])


@blueprint.get("/repos/<owner>/<name>/pulls/<int:number>/comments", endpoint="pulls/list-review-comments")
def list_review_comments(owner: str, name: str, number: int):
    _, repo = repository(owner, name)
    pull_of(repo, number)
    emu = emulator()
    return paginated([emu.render.review_comment(c) for c in emu.state.comments_on(repo.id, number, "review")])


def review_of(repo: Repo, number: int, review_id: int) -> Review:
    review = emulator().state.reviews.get(review_id)
    if review is None or review.repo_id != repo.id or review.number != number:
        raise not_found()
    return review


@blueprint.get("/repos/<owner>/<name>/pulls/<int:number>/reviews/<int:review_id>", endpoint="pulls/get-review")
def get_review(owner: str, name: str, number: int, review_id: int):
    _, repo = repository(owner, name)
    pull_of(repo, number)
    return jsonify(emulator().render.review(review_of(repo, number, review_id), rest=True))


@blueprint.get(
    "/repos/<owner>/<name>/pulls/<int:number>/reviews/<int:review_id>/comments",
    endpoint="pulls/list-comments-for-review",
)
def list_comments_for_review(owner: str, name: str, number: int, review_id: int):
    _, repo = repository(owner, name)
    pull_of(repo, number)
    review_of(repo, number, review_id)
    emu = emulator()
    return paginated(
        [
            emu.render.review_comment(c)
            for c in emu.state.comments_on(repo.id, number, "review")
            if c.review_id == review_id
        ]
    )


def react(owner: str, name: str, subject_of):
    """201 with a new reaction, or 200 with the one the App already left (GitHub's idempotent create)."""
    token, repo = repository(owner, name)
    need(token, "issues", "pull_requests")
    emu, subject = emulator(), subject_of(repo)
    content = json_body().get("content")
    if content not in REACTIONS:
        raise invalid("Reaction", "content")
    with emu.state.lock:
        existing = next(
            (
                r
                for r in emu.state.reactions
                if r.subject == subject and r.content == content and r.user == emu.app.bot_login
            ),
            None,
        )
        if existing is None:
            reaction = Reaction(emu.state.new_id(), subject, emu.app.bot_login, content, now())
            emu.state.reactions.append(reaction)
    if existing is not None:
        return emu.render.reaction(existing)
    return created(emu.render.reaction(reaction))


def comment_subject(kind: str, comment_id: int):
    def find(repo: Repo) -> tuple:
        comment = emulator().state.comments.get(comment_id)
        if comment is None or comment.repo_id != repo.id or comment.kind != kind:
            raise not_found()
        return (f"{kind}_comment", comment_id)

    return find


@blueprint.post(
    "/repos/<owner>/<name>/issues/comments/<int:comment_id>/reactions", endpoint="reactions/create-for-issue-comment"
)
def react_issue_comment(owner: str, name: str, comment_id: int):
    return react(owner, name, comment_subject("issue", comment_id))


@blueprint.post(
    "/repos/<owner>/<name>/pulls/comments/<int:comment_id>/reactions",
    endpoint="reactions/create-for-pull-request-review-comment",
)
def react_review_comment(owner: str, name: str, comment_id: int):
    return react(owner, name, comment_subject("review", comment_id))


@blueprint.post("/repos/<owner>/<name>/issues/<int:number>/reactions", endpoint="reactions/create-for-issue")
def react_issue(owner: str, name: str, number: int):
    return react(owner, name, lambda repo: ("issue", pull_of(repo, number).id))
