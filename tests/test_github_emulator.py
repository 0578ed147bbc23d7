"""The GitHub emulator is honest: its answers match GitHub's published schemas, it refuses what GitHub refuses,
git works over smart HTTP with installation tokens, and its webhooks look and verify like GitHub's."""

import base64
import json
import time

import pytest
import requests
from flask import Flask, request
from gidgethub import ValidationFailure
from gidgethub.sansio import Event, validate_event
from werkzeug.datastructures import Headers

from tests.github_emulator import MergeConflict, TestApp
from tests.github_schemas import (
    GitHubSchemaError,
    document,
    operation_for,
    validate_request,
    validate_response,
    validate_webhook,
    webhook_examples,
)
from tests.harness import LiveServer

FILES = {"README.md": "# Docs\n", "docs/index.md": "# Index\n\nHello.\n"}
DIFF = "application/vnd.github.diff"


class GitHubSession(requests.Session):
    """Plain requests to the emulator; every answer to an extracted operation is checked against its schema."""

    def __init__(self, base_url: str, authorization: str | None = None) -> None:
        super().__init__()
        self.base_url = base_url
        if authorization:
            self.headers["Authorization"] = authorization

    def request(self, method, url, *args, **kwargs):
        kwargs.setdefault("timeout", 10)
        response = super().request(method, url if url.startswith("http") else self.base_url + url, *args, **kwargs)
        path = response.request.path_url
        if operation_for(method, path) is None:
            return response
        media = response.headers.get("Content-Type", "").split(";", 1)[0].strip()
        if response.content and media != "application/json":  # a diff or a patch: checked as the text it is
            validate_response(method, path, response.status_code, response.text, media_type=media)
        else:
            validate_response(method, path, response.status_code, response.json() if response.content else None)
        return response


@pytest.fixture
def world(github):
    """Two repositories of the organization acme, both in one installation."""
    github.add_repo("acme/docs", FILES)
    github.add_repo("acme/site", {"index.md": "# Site\n"})
    installation = github.add_installation("acme", ["acme/docs", "acme/site"])
    return github, installation


def as_app(github, jwt: str | None = None) -> GitHubSession:
    return GitHubSession(github.url, f"Bearer {jwt or github.app.jwt()}")


def token(github, installation: int, **body) -> str:
    response = as_app(github).post(f"/app/installations/{installation}/access_tokens", json=body)
    assert response.status_code == 201, response.text
    return response.json()["token"]


def as_installation(github, installation: int, **body) -> GitHubSession:
    return GitHubSession(github.url, f"token {token(github, installation, **body)}")


def open_pr(api: GitHubSession, github, branch: str = "copydesk/job_1", repo: str = "acme/docs", **fields) -> dict:
    github.push(repo, {f"docs/{branch.replace('/', '-')}.md": "new\n"}, branch=branch)
    response = api.post(f"/repos/{repo}/pulls", json={"title": "Docs", "head": branch, "base": "main", **fields})
    assert response.status_code == 201, response.text
    return response.json()


def git_cli(tmp_path, *args, token_value: str | None = None, check: bool = True, input: bytes | None = None):
    """Run the git CLI as Copydesk does: credentials in a per-command header, nothing on disk."""
    import subprocess

    from service.workspace.git import Git

    git = Git()
    config = []
    if token_value is not None:
        basic = base64.b64encode(f"x-access-token:{token_value}".encode()).decode()
        config = ["-c", f"http.extraHeader=Authorization: Basic {basic}"]
    env = git.env(
        extra={
            "GIT_AUTHOR_NAME": "Bot",
            "GIT_AUTHOR_EMAIL": "bot@example.com",
            "GIT_COMMITTER_NAME": "Bot",
            "GIT_COMMITTER_EMAIL": "bot@example.com",
        }
    )
    proc = subprocess.run(["git", *config, *args], cwd=tmp_path, capture_output=True, env=env, timeout=60, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr.decode())
    return proc


# -- the extracted schemas themselves ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, path, operation",
    [
        ("GET", "/app", "apps/get-authenticated"),
        ("POST", "/app/installations/7/access_tokens", "apps/create-installation-access-token"),
        ("GET", "/installation/repositories?per_page=2", "apps/list-repos-accessible-to-installation"),
        ("POST", "/app-manifests/abc/conversions", "apps/create-from-manifest"),
        ("GET", "/repos/acme/docs", "repos/get"),
        ("GET", "/repos/acme/docs/pulls", "pulls/list"),
        ("PATCH", "/repos/acme/docs/pulls/3", "pulls/update"),
        ("POST", "/repos/acme/docs/pulls/3/comments/9/replies", "pulls/create-reply-for-review-comment"),
        ("PATCH", "/repos/acme/docs/issues/comments/9", "issues/update-comment"),
        ("GET", "/repos/acme/docs/pulls/3/comments", "pulls/list-review-comments"),
        ("GET", "/repos/acme/docs/pulls/3/reviews/9", "pulls/get-review"),
        ("GET", "/repos/acme/docs/pulls/3/reviews/9/comments", "pulls/list-comments-for-review"),
        ("GET", "/repos/acme/docs/commits/abc123/check-runs", "checks/list-for-ref"),
        ("GET", "/repos/acme/docs/check-runs/9/annotations", "checks/list-annotations"),
        ("GET", "/repos/acme/docs/commits/abc123/status", "repos/get-combined-status-for-ref"),
        ("POST", "/repos/acme/docs/pulls/comments/9/reactions", "reactions/create-for-pull-request-review-comment"),
        ("POST", "/repos/acme/docs/issues/comments/9/reactions", "reactions/create-for-issue-comment"),
        ("POST", "/repos/acme/docs/issues/3/reactions", "reactions/create-for-issue"),
        ("GET", "/repos/acme/docs/collaborators/alice/permission", "repos/get-collaborator-permission-level"),
        ("DELETE", "/repos/acme/docs/git/refs/heads/copydesk/job_1", "git/delete-ref"),
        ("GET", "/repos/acme/docs/compare/main...copydesk/job_1", "repos/compare-commits-with-basehead"),
        ("GET", "/repos/acme/docs/contents/.copydesk/config.yml", "repos/get-content"),
        ("GET", "/repos/acme/docs/git/trees/main", None),
    ],
)
def test_concrete_paths_map_to_github_operations(method, path, operation):
    assert operation_for(method, path) == operation


def test_schemas_catch_what_github_would_not_send():
    with pytest.raises(GitHubSchemaError, match="permission"):
        validate_response(
            "GET", "/repos/acme/docs/collaborators/alice/permission", 200, {"role_name": "write", "user": None}
        )
    with pytest.raises(GitHubSchemaError):
        validate_request("pulls/create", {"title": "T", "head": "x", "base": "main", "draft": "yes"})
    with pytest.raises(GitHubSchemaError):
        validate_webhook("issue_comment", "created", {"action": "created"})
    with pytest.raises(GitHubSchemaError, match="not documented"):
        validate_response("GET", "/repos/acme/docs", 202, {})
    # A diff is checked against the media type GitHub documents for it: text, and only where it is documented.
    validate_response("GET", "/repos/acme/docs/compare/main...x", 200, "diff --git a/x b/x\n", media_type=DIFF)
    with pytest.raises(GitHubSchemaError, match="string"):
        validate_response("GET", "/repos/acme/docs/compare/main...x", 200, {"diff": "x"}, media_type=DIFF)
    with pytest.raises(GitHubSchemaError, match="documents no such answer"):
        validate_response("GET", "/repos/acme/docs/pulls", 200, "diff --git a/x b/x\n", media_type=DIFF)
    # OpenAPI 3.0's `nullable: true` became a JSON Schema null type, so GitHub's nulls validate.
    assert document()["components"]["schemas"]["nullable-simple-user"]["type"] == ["object", "null"]
    validate_response(
        "GET",
        "/repos/acme/docs/collaborators/alice/permission",
        200,
        {"permission": "none", "role_name": "none", "user": None},
    )


def test_real_examples_cover_every_extracted_webhook():
    for key in document()["webhooks"]:
        event, _, action = key.partition(".")
        assert webhook_examples(event, action or None), key


# -- the App: JWT and installation tokens ------------------------------------------------------------------


def test_app_tokens_and_manifest_conversion(world):
    github, installation = world
    app = as_app(github).get("/app")
    assert app.status_code == 200 and app.json()["slug"] == "copydesk-test"

    body = {"repositories": ["docs"], "permissions": {"contents": "write", "pull_requests": "write"}}
    validate_request("apps/create-installation-access-token", body)
    minted = as_app(github).post(f"/app/installations/{installation}/access_tokens", json=body)
    assert minted.status_code == 201
    shaped = minted.json()
    assert shaped["token"].startswith("ghs_") and shaped["expires_at"].endswith("Z")
    assert shaped["repository_selection"] == "selected"
    assert [r["full_name"] for r in shaped["repositories"]] == ["acme/docs"]
    assert shaped["permissions"] == body["permissions"]

    everything = as_app(github).post(f"/app/installations/{installation}/access_tokens").json()
    assert "repositories" not in everything and everything["permissions"] == github.app.permissions
    for scheme in ("token", "Bearer"):  # GitHub takes an installation token under either scheme
        api = GitHubSession(github.url, f"{scheme} {everything['token']}")
        assert api.get("/repos/acme/site").status_code == 200

    code = github.add_manifest_code()
    converted = GitHubSession(github.url).post(f"/app-manifests/{code}/conversions")
    assert converted.status_code == 201
    assert converted.json()["pem"] == github.app.private_key_pem
    assert converted.json()["webhook_secret"] == github.app.webhook_secret
    assert GitHubSession(github.url).post(f"/app-manifests/{code}/conversions").status_code == 404
    assert GitHubSession(github.url).post("/app-manifests/never-issued/conversions").status_code == 404


def test_bad_app_jwts_are_refused(world):
    github, installation = world
    now = time.time()
    cases = [
        (github.app.jwt(key_pem=TestApp.generate().private_key_pem), "could not be decoded"),  # another key
        (github.app.jwt(iat=now - 900, exp=now - 300), "'Expiration time'"),  # expired
        (github.app.jwt(iat=now - 30, exp=now + 600), "too far in the future"),  # exp - iat > 10 minutes
        (github.app.jwt(iss="1"), "could not be decoded"),  # another App's id
        ("not-a-jwt.at.all", "could not be decoded"),
    ]
    for jwt, message in cases:
        for path, method in (("/app", "GET"), (f"/app/installations/{installation}/access_tokens", "POST")):
            response = as_app(github, jwt).request(method, path)
            assert response.status_code == 401 and message in response.json()["message"], (message, path)


def test_app_endpoints_need_the_jwt_and_tokens_need_a_live_installation(world):
    github, installation = world
    installation_api = as_installation(github, installation)
    assert installation_api.get("/app").status_code == 401
    assert as_app(github).get("/repos/acme/docs").status_code == 401
    assert as_app(github).post("/app/installations/999999/access_tokens").status_code == 404
    refused = as_app(github).post(
        f"/app/installations/{installation}/access_tokens", json={"repositories": ["not-installed"]}
    )
    assert refused.status_code == 422
    assert (
        as_app(github)
        .post(f"/app/installations/{installation}/access_tokens", json={"permissions": {"administration": "write"}})
        .status_code
        == 422
    )
    github.suspend(installation)
    assert installation_api.get("/repos/acme/docs").status_code == 401  # suspension revokes tokens
    assert as_app(github).post(f"/app/installations/{installation}/access_tokens").status_code == 403


def test_bad_or_expired_tokens_get_bad_credentials(world):
    github, installation = world
    github.token_ttl = 0.3
    api = as_installation(github, installation)
    assert api.get("/repos/acme/docs").status_code == 200
    github.state.pass_time(0.4)
    expired = api.get("/repos/acme/docs")
    assert expired.status_code == 401
    assert expired.json()["message"] == "Bad credentials" and expired.json()["documentation_url"]
    assert GitHubSession(github.url, "token ghs_madeup").get("/repos/acme/docs").status_code == 401
    assert GitHubSession(github.url).get("/repos/acme/docs").json()["message"] == "Requires authentication"


def test_tokens_are_scoped_to_their_repositories_and_permissions(world, github_app):
    github, installation = world
    github.add_repo("acme/private")  # not in the installation
    docs_only = as_installation(github, installation, repositories=["docs"])
    assert docs_only.get("/repos/acme/docs").status_code == 200
    assert docs_only.get("/repos/acme/site").status_code == 404
    assert docs_only.get("/repos/acme/private").status_code == 404
    listed = docs_only.get("/installation/repositories").json()
    assert [r["full_name"] for r in listed["repositories"]] == ["acme/docs"] and listed["total_count"] == 1

    read_only = as_installation(github, installation, permissions={"contents": "read", "pull_requests": "read"})
    github.push("acme/docs", {"a.md": "a\n"}, branch="feature")
    refused = read_only.post("/repos/acme/docs/pulls", json={"title": "T", "head": "feature", "base": "main"})
    assert refused.status_code == 403 and refused.json()["message"] == "Resource not accessible by integration"

    whole = as_installation(github, installation)
    github.remove_repos_from_installation(installation, ["acme/site"])
    assert whole.get("/repos/acme/site").status_code == 404


# -- repositories, pull requests, comments, reactions ------------------------------------------------------


def test_pull_request_lifecycle(world, tmp_path):
    github, installation = world
    api = as_installation(github, installation)
    assert api.get("/repos/acme/docs").json()["default_branch"] == "main"

    pr = open_pr(api, github, draft=True, body="Made by Copydesk")
    assert pr["draft"] is True and pr["state"] == "open" and pr["user"]["login"] == "copydesk-test[bot]"
    assert pr["head"]["sha"] == github.branch_sha("acme/docs", "copydesk/job_1")

    again = api.post("/repos/acme/docs/pulls", json={"title": "Docs", "head": "acme:copydesk/job_1", "base": "main"})
    assert again.status_code == 422
    assert again.json()["errors"][0]["message"] == "A pull request already exists for acme:copydesk/job_1."
    missing = api.post("/repos/acme/docs/pulls", json={"title": "T", "head": "no-such-branch", "base": "main"})
    assert missing.status_code == 422 and missing.json()["errors"][0]["field"] == "head"
    git_cli(tmp_path, f"--git-dir={github.repo_path('acme/docs')}", "branch", "empty", "main")
    empty = api.post("/repos/acme/docs/pulls", json={"title": "T", "head": "empty", "base": "main"})
    assert empty.status_code == 422 and "No commits between" in empty.json()["errors"][0]["message"]

    found = api.get("/repos/acme/docs/pulls", params={"head": "acme:copydesk/job_1", "state": "open"}).json()
    assert [p["number"] for p in found] == [pr["number"]]
    assert api.get("/repos/acme/docs/pulls", params={"head": "acme:other"}).json() == []

    pushed = github.push("acme/docs", {"docs/more.md": "more\n"}, branch="copydesk/job_1")
    assert api.get(f"/repos/acme/docs/pulls/{pr['number']}").json()["head"]["sha"] == pushed

    update = {"title": "Better docs", "body": "Now with more", "state": "closed"}
    validate_request("pulls/update", update)
    closed = api.patch(f"/repos/acme/docs/pulls/{pr['number']}", json=update).json()
    assert (closed["title"], closed["state"], closed["merged"]) == ("Better docs", "closed", False)
    assert api.get("/repos/acme/docs/pulls", params={"state": "closed"}).json()[0]["number"] == pr["number"]
    assert api.get(f"/repos/acme/docs/pulls/{pr['number'] + 100}").status_code == 404


def test_compare_answers_json_a_real_git_diff_and_a_patch(world, tmp_path):
    github, installation = world
    api = as_installation(github, installation)
    pr = open_pr(api, github)
    head = github.push("acme/docs", {"docs/index.md": "# Index\n\nHello, world.\n"}, branch="copydesk/job_1")
    github.push("acme/docs", {"NEWS.md": "news\n"})  # the base moves on: the two sides diverge
    path = "/repos/acme/docs/compare/main...copydesk/job_1"

    comparison = api.get(path).json()
    assert (comparison["status"], comparison["ahead_by"], comparison["behind_by"]) == ("diverged", 2, 1)
    assert [c["sha"] for c in comparison["commits"]][-1] == head != comparison["base_commit"]["sha"]
    merge_base = comparison["merge_base_commit"]["sha"]

    diff = api.get(path, headers={"Accept": DIFF})
    assert diff.headers["Content-Type"] == f"{DIFF}; charset=utf-8"
    # What `git diff` from the merge base says: the branch's own changes, not the base's newer NEWS.md.
    expected = git_cli(tmp_path, f"--git-dir={github.repo_path('acme/docs')}", "diff", merge_base, head).stdout
    assert diff.content == expected and "+Hello, world." in diff.text and "NEWS.md" not in diff.text
    assert "diff --git a/docs/copydesk-job_1.md b/docs/copydesk-job_1.md" in diff.text
    by_sha = api.get(
        f"/repos/acme/docs/compare/{pr['base']['sha'][:7]}...{head}",
        headers={"Accept": "application/vnd.github.v3.diff"},
    )
    assert by_sha.content == expected
    patch = api.get(path, headers={"Accept": "application/vnd.github.patch"})
    assert patch.text.startswith("From ") and patch.text.count("\nSubject: ") == 2

    assert api.get("/repos/acme/docs/compare/main...nope", headers={"Accept": DIFF}).status_code == 404
    assert api.get("/repos/acme/docs/compare/main..copydesk/job_1").status_code == 404
    assert api.get("/repos/acme/docs/compare/--output=x...main").status_code == 404
    github.inject("server", match="/compare/")
    assert api.get(path, headers={"Accept": DIFF}).status_code == 500  # a JSON error body, checked as such


def test_comments_replies_and_reactions(world):
    github, installation = world
    api = as_installation(github, installation)
    pr = open_pr(api, github)
    number = pr["number"]

    comment = api.post(f"/repos/acme/docs/issues/{number}/comments", json={"body": "Working on it"})
    assert comment.status_code == 201
    assert comment.json()["performed_via_github_app"]["slug"] == "copydesk-test"
    assert api.post(f"/repos/acme/docs/issues/{number}/comments", json={}).status_code == 422
    listed = api.get(f"/repos/acme/docs/issues/{number}/comments").json()
    assert [c["body"] for c in listed] == ["Working on it"]
    edited = api.patch(f"/repos/acme/docs/issues/comments/{comment.json()['id']}", json={"body": "Done"})
    assert edited.status_code == 200 and edited.json()["body"] == "Done"
    assert api.patch(f"/repos/acme/docs/issues/comments/{comment.json()['id']}", json={}).status_code == 422
    assert api.patch("/repos/acme/docs/issues/comments/999999", json={"body": "x"}).status_code == 404
    assert [c["body"] for c in api.get(f"/repos/acme/docs/issues/{number}/comments").json()] == ["Done"]

    person = github.comment("acme/docs", number, "alice", "@copydesk-test fix it")["comment"]
    first = api.post(f"/repos/acme/docs/issues/comments/{person['id']}/reactions", json={"content": "eyes"})
    same = api.post(f"/repos/acme/docs/issues/comments/{person['id']}/reactions", json={"content": "eyes"})
    assert (first.status_code, same.status_code) == (201, 200) and first.json()["id"] == same.json()["id"]
    assert (
        api.post(f"/repos/acme/docs/issues/comments/{person['id']}/reactions", json={"content": "thumbs"}).status_code
        == 422
    )
    assert api.post(f"/repos/acme/docs/issues/{number}/reactions", json={"content": "rocket"}).status_code == 201
    assert github.reactions(person["id"]) == [("copydesk-test[bot]", "eyes")]
    # An App edits its own comments, not people's.
    assert api.patch(f"/repos/acme/docs/issues/comments/{person['id']}", json={"body": "x"}).status_code == 403

    line = github.review_comment("acme/docs", number, "bob", "@copydesk-test reword", "docs/index.md", 3)["comment"]
    reply = api.post(f"/repos/acme/docs/pulls/{number}/comments/{line['id']}/replies", json={"body": "Done"})
    assert reply.status_code == 201 and reply.json()["in_reply_to_id"] == line["id"]
    assert reply.json()["path"] == "docs/index.md"
    assert (
        api.post(f"/repos/acme/docs/pulls/{number}/comments/{person['id']}/replies", json={"body": "x"}).status_code
        == 404
    )
    assert (
        api.post(f"/repos/acme/docs/pulls/comments/{line['id']}/reactions", json={"content": "eyes"}).status_code == 201
    )


def test_a_review_with_line_comments(world, receiver):
    github, installation = world
    url, received = receiver
    github.deliver_to(url)
    api = as_installation(github, installation)
    number = open_pr(api, github)["number"]
    received.clear()
    payload = github.submit_review(
        "acme/docs",
        number,
        "alice",
        "@copydesk-test see below",
        [("docs/index.md", 1, "Shorter"), ("README.md", 1, "Louder")],
        "changes_requested",
    )
    events = [(headers["X-Github-Event"], json.loads(body)) for headers, body in received]
    assert [e for e, _ in events] == ["pull_request_review_comment"] * 2 + ["pull_request_review"]
    for event, body in events:
        validate_webhook(event, body["action"], body)
        assert_like_real_examples(event, body["action"], body)
    review_id = payload["review"]["id"]
    assert {body["comment"]["pull_request_review_id"] for _, body in events[:2]} == {review_id}

    review = api.get(f"/repos/acme/docs/pulls/{number}/reviews/{review_id}")
    assert review.status_code == 200 and review.json()["state"] == "CHANGES_REQUESTED"
    assert api.get(f"/repos/acme/docs/pulls/{number}/reviews/999999").status_code == 404
    listed = api.get(f"/repos/acme/docs/pulls/{number}/reviews/{review_id}/comments").json()
    assert [(c["path"], c["body"]) for c in listed] == [("docs/index.md", "Shorter"), ("README.md", "Louder")]
    # A line comment on its own is a review of one comment, as on GitHub.
    single = github.review_comment("acme/docs", number, "bob", "Typo", "docs/index.md", 2)["comment"]
    alone = api.get(f"/repos/acme/docs/pulls/{number}/reviews/{single['pull_request_review_id']}/comments").json()
    assert [c["id"] for c in alone] == [single["id"]]
    api.post(f"/repos/acme/docs/pulls/{number}/comments/{single['id']}/replies", json={"body": "Fixed"})
    every = api.get(f"/repos/acme/docs/pulls/{number}/comments").json()
    assert [c["body"] for c in every] == ["Shorter", "Louder", "Typo", "Fixed"]


def test_check_runs_statuses_and_contents(world, receiver):
    github, installation = world
    url, received = receiver
    github.deliver_to(url)
    api = as_installation(github, installation)
    pr = open_pr(api, github)
    sha = pr["head"]["sha"]
    received.clear()
    github.check_run(
        "acme/docs",
        sha,
        "vale",
        "failure",
        title="2 errors",
        summary="Vale found 2 errors",
        text="docs/index.md:3 Use 'e.g.'",
        annotations=[("docs/index.md", 3, "Use 'e.g.'")],
    )
    github.set_status("acme/docs", sha, "failure", "ci/build", description="The site did not build")
    events = [(headers["X-Github-Event"], json.loads(body)) for headers, body in received]
    assert [e for e, _ in events] == ["check_run", "check_suite", "status"]
    for event, body in events:
        validate_webhook(event, body.get("action"), body)
        assert_like_real_examples(event, body.get("action"), body)
    run = events[0][1]["check_run"]
    assert run["conclusion"] == "failure" and run["pull_requests"][0]["number"] == pr["number"]
    assert events[1][1]["check_suite"]["head_branch"] == "copydesk/job_1"
    assert events[2][1]["branches"][0]["name"] == "copydesk/job_1"

    runs = api.get(f"/repos/acme/docs/commits/{sha}/check-runs").json()
    assert [r["name"] for r in runs["check_runs"]] == ["vale"] and runs["total_count"] == 1
    notes = api.get(f"/repos/acme/docs/check-runs/{run['id']}/annotations").json()
    assert [(n["path"], n["start_line"], n["message"]) for n in notes] == [("docs/index.md", 3, "Use 'e.g.'")]
    combined = api.get(f"/repos/acme/docs/commits/{sha}/status").json()
    assert combined["state"] == "failure" and combined["statuses"][0]["context"] == "ci/build"
    assert api.get("/repos/acme/docs/check-runs/1/annotations").status_code == 404

    github.push("acme/docs", {".copydesk/config.yml": "ci_fix: false\n"})
    found = api.get("/repos/acme/docs/contents/.copydesk/config.yml", params={"ref": "main"})
    assert base64.b64decode(found.json()["content"]) == b"ci_fix: false\n"
    assert api.get("/repos/acme/docs/contents/nothing.yml").status_code == 404
    assert api.get("/repos/acme/docs/contents/docs").status_code == 404  # a folder is not emulated


def test_rename_and_transfer_keep_the_repository_id_and_git(world, receiver, tmp_path):
    github, installation = world
    url, received = receiver
    github.deliver_to(url)
    before = github.state.repo("acme/docs").id
    renamed = github.rename_repo("acme/docs", "handbook")
    other = github.add_installation("newco", [], selection="all")
    moved = github.transfer_repo("acme/handbook", "newco")
    for payload, action in ((renamed, "renamed"), (moved, "transferred")):
        validate_webhook("repository", action, payload)
        assert_like_real_examples("repository", action, payload)
    assert renamed["changes"] == {"repository": {"name": {"from": "docs"}}}
    assert moved["repository"]["full_name"] == "newco/handbook" and moved["repository"]["id"] == before
    assert moved["installation"]["id"] == other and moved["changes"]["owner"]["from"]["organization"]["login"] == "acme"
    assert as_installation(github, installation).get("/repos/acme/docs").status_code == 404
    api = as_installation(github, other, repository_ids=[before])
    assert api.get("/repos/newco/handbook").json()["id"] == before
    cloned = git_cli(
        tmp_path,
        "clone",
        "-q",
        f"{github.url}/newco/handbook.git",
        "h",
        token_value=token(github, other, repository_ids=[before]),
    )
    assert cloned.returncode == 0 and (tmp_path / "h" / "docs" / "index.md").exists()


def test_collaborator_permission(world):
    github, installation = world
    api = as_installation(github, installation)
    for login, role, permission in (
        ("alice", "write", "write"),
        ("mo", "maintain", "write"),
        ("tri", "triage", "read"),
        ("root", "admin", "admin"),
    ):
        github.set_permission("acme/docs", login, role)
        shaped = api.get(f"/repos/acme/docs/collaborators/{login}/permission").json()
        assert (shaped["permission"], shaped["role_name"], shaped["user"]["login"]) == (permission, role, login)
    github.add_user("stranger")
    assert api.get("/repos/acme/docs/collaborators/stranger/permission").json()["permission"] == "none"
    assert api.get("/repos/acme/docs/collaborators/nobody-at-all/permission").status_code == 404


def test_delete_ref_and_the_pull_request_it_closes(world):
    github, installation = world
    api = as_installation(github, installation)
    pr = open_pr(api, github)
    assert api.delete("/repos/acme/docs/git/refs/heads/copydesk/job_1").status_code == 204
    assert github.branch_sha("acme/docs", "copydesk/job_1") is None
    assert api.get(f"/repos/acme/docs/pulls/{pr['number']}").json()["state"] == "closed"
    again = api.delete("/repos/acme/docs/git/refs/heads/copydesk/job_1")
    assert again.status_code == 422 and again.json()["message"] == "Reference does not exist"


def test_pagination_links(world):
    github, installation = world
    api = as_installation(github, installation)
    numbers = [open_pr(api, github, branch=f"copydesk/job_{i}")["number"] for i in range(5)]
    first = api.get("/repos/acme/docs/pulls", params={"per_page": 2})
    assert 'rel="next"' in first.headers["Link"] and 'rel="last"' in first.headers["Link"]
    assert "prev" not in first.headers["Link"]
    seen, response = [], first
    while True:
        seen += [p["number"] for p in response.json()]
        if "next" not in response.links:
            break
        response = api.get(response.links["next"]["url"])
    assert seen == sorted(numbers, reverse=True)
    assert set(response.links) == {"prev", "first"}
    assert "Link" not in api.get("/repos/acme/docs/pulls").headers

    repos = api.get("/installation/repositories", params={"per_page": 1})
    assert repos.json()["total_count"] == 2 and len(repos.json()["repositories"]) == 1
    assert api.get(repos.links["last"]["url"]).json()["repositories"][0]["full_name"] == "acme/site"


# -- rate limits and failures ------------------------------------------------------------------------------


def test_every_api_answer_has_rate_limit_headers(world):
    github, installation = world
    api = as_installation(github, installation)
    before, after = api.get("/repos/acme/docs"), api.get("/repos/acme/nope")
    for response in (before, after):
        for header in (
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
            "x-ratelimit-used",
            "x-ratelimit-resource",
            "x-github-request-id",
        ):
            assert response.headers.get(header), header
    assert int(after.headers["x-ratelimit-remaining"]) == int(before.headers["x-ratelimit-remaining"]) - 1


def test_injected_rate_limits_and_server_errors(world):
    github, installation = world
    api = as_installation(github, installation)

    github.inject("secondary", retry_after=2, match=r"^POST .*/pulls$")
    assert api.get("/repos/acme/docs/pulls").status_code == 200  # not matched
    github.push("acme/docs", {"a.md": "a\n"}, branch="feature")
    limited = api.post("/repos/acme/docs/pulls", json={"title": "T", "head": "feature", "base": "main"})
    assert limited.status_code == 403 and limited.headers["Retry-After"] == "2"
    assert limited.json()["message"].startswith("You have exceeded a secondary rate limit")
    assert api.post("/repos/acme/docs/pulls", json={"title": "T", "head": "feature", "base": "main"}).status_code == 201

    for status in (403, 429):
        github.inject("primary", status=status, reset_in=30)
        primary = api.get("/repos/acme/docs")
        assert primary.status_code == status and primary.headers["x-ratelimit-remaining"] == "0"
        assert int(primary.headers["x-ratelimit-reset"]) >= time.time() + 25
        assert "rate limit exceeded" in primary.json()["message"]

    github.inject("server", count=2, status=502)
    assert [api.get("/repos/acme/docs").status_code for _ in range(3)] == [502, 502, 200]
    with pytest.raises(ValueError):
        github.inject("server", status=404)


# -- git over smart HTTP -----------------------------------------------------------------------------------


def test_git_clone_and_push_with_an_installation_token(world, tmp_path):
    github, installation = world
    secret = token(github, installation, repositories=["docs"])
    url = github.clone_url("acme/docs")
    git_cli(tmp_path, "clone", "-q", url, "work", token_value=secret)
    work = tmp_path / "work"
    assert (work / "docs" / "index.md").read_text() == FILES["docs/index.md"]

    (work / "docs" / "new.md").write_text("x" * 200_000)
    git_cli(work, "checkout", "-q", "-b", "copydesk/job_9")
    git_cli(work, "add", "-A")
    git_cli(work, "commit", "-q", "-m", "Add a page")
    # A small post buffer makes git stream the push with chunked transfer encoding.
    git_cli(work, "-c", "http.postBuffer=4096", "push", "-q", "origin", "copydesk/job_9", token_value=secret)
    head = git_cli(work, "rev-parse", "HEAD").stdout.decode().strip()
    assert github.branch_sha("acme/docs", "copydesk/job_9") == head

    api = as_installation(github, installation)
    pr = api.post("/repos/acme/docs/pulls", json={"title": "T", "head": "copydesk/job_9", "base": "main"}).json()
    assert pr["head"]["sha"] == head


def test_git_fetch_with_a_gzipped_negotiation(world, tmp_path):
    github, installation = world
    secret = token(github, installation)
    git_cli(tmp_path, "clone", "-q", github.clone_url("acme/docs"), "work", token_value=secret)
    work = tmp_path / "work"
    # Enough local commits, newer than the common one so they are offered first, that git's later "have"
    # rounds pass its 1 KiB threshold for gzipping a request body.
    start = int(time.time())
    stream = "".join(
        f"commit refs/heads/local\ncommitter Bot <bot@example.com> {start + i} +0000\n"
        f"data 8\nlocal{i:03d}\n" + ("from HEAD\n" if i == 0 else "") + "\n"
        for i in range(200)
    )
    git_cli(work, "fast-import", "--quiet", input=stream.encode())
    upstream = github.push("acme/docs", {"new.md": "upstream\n"}, branch="upstream")
    git_cli(work, "fetch", "-q", "origin", "upstream", token_value=secret)
    assert git_cli(work, "rev-parse", "FETCH_HEAD").stdout.decode().strip() == upstream
    assert any(r.headers.get("Content-Encoding") == "gzip" for r in github.requests if "upload-pack" in r.path)


def test_git_refuses_missing_bad_expired_and_out_of_scope_credentials(world, tmp_path):
    github, installation = world
    url = github.clone_url("acme/docs")
    anonymous = requests.get(f"{url}/info/refs?service=git-upload-pack", timeout=10)
    assert anonymous.status_code == 401 and anonymous.headers["WWW-Authenticate"] == 'Basic realm="GitHub"'
    assert git_cli(tmp_path, "clone", "-q", url, "a", check=False).returncode != 0
    assert git_cli(tmp_path, "clone", "-q", url, "b", token_value="ghs_madeup", check=False).returncode != 0
    site_only = token(github, installation, repositories=["site"])
    refused = git_cli(tmp_path, "clone", "-q", url, "c", token_value=site_only, check=False)
    assert refused.returncode != 0 and b"not found" in refused.stderr.lower()

    reader = token(github, installation, permissions={"contents": "read"})
    git_cli(tmp_path, "clone", "-q", url, "d", token_value=reader)
    git_cli(tmp_path / "d", "commit", "-q", "--allow-empty", "-m", "x")
    pushed = git_cli(tmp_path / "d", "push", "-q", "origin", "HEAD:refs/heads/nope", token_value=reader, check=False)
    assert pushed.returncode != 0 and github.branch_sha("acme/docs", "nope") is None

    github.token_ttl = 0.3
    short = token(github, installation)
    github.state.pass_time(0.4)
    assert git_cli(tmp_path, "clone", "-q", url, "e", token_value=short, check=False).returncode != 0


# -- people acting, and the webhooks they cause ------------------------------------------------------------


@pytest.fixture(scope="module")
def receiver_server():
    """A webhook endpoint that records every delivery's headers and raw body."""
    received = []
    app = Flask("receiver")

    @app.post("/hooks")
    def hooks():
        received.append((Headers(request.headers), request.get_data()))
        return "", 202

    with LiveServer(app) as server:
        yield f"{server.url}/hooks", received


@pytest.fixture
def receiver(receiver_server):
    url, received = receiver_server
    received.clear()
    return url, received


# Keys of the examples that depend on where the hook lives, not on the event: the ping examples come from
# repository hooks (an App's hook ping names no repository or sender); `enterprise` only exists on GHE accounts.
NOT_FOR_THIS_HOOK = {"ping": {"repository", "sender"}}
MAIN_OBJECTS = (
    "comment",
    "issue",
    "pull_request",
    "repository",
    "installation",
    "sender",
    "review",
    "check_run",
    "check_suite",
    "commit",
)


def assert_like_real_examples(event: str, action: str | None, payload: dict) -> None:
    """The payload carries every field GitHub's real example payloads carry, at the top and in the main objects."""
    for example in webhook_examples(event, action):
        ignored = NOT_FOR_THIS_HOOK.get(event, set()) | {"enterprise"}
        assert set(example) - ignored <= set(payload), (event, action, set(example) - set(payload))
        for name in MAIN_OBJECTS:
            if isinstance(example.get(name), dict) and name not in ignored:
                missing = set(example[name]) - set(payload[name])
                assert not missing, (event, action, name, missing)


def test_people_acting_cause_signed_deliveries_like_github(world, receiver):
    github, installation = world
    url, received = receiver
    github.deliver_to(url)
    api = as_installation(github, installation)
    number = open_pr(api, github)["number"]
    github.set_permission("acme/docs", "alice", "write")
    other = github.install("acme", ["acme/site"])["installation"]["id"]

    acts = [
        ("issue_comment", "created", lambda: github.comment("acme/docs", number, "alice", "@copydesk-test hi")),
        (
            "pull_request_review_comment",
            "created",
            lambda: github.review_comment("acme/docs", number, "alice", "reword", "docs/index.md", 2),
        ),
        ("pull_request_review", "submitted", lambda: github.review("acme/docs", number, "alice", "Nice")),
        ("pull_request", "closed", lambda: github.close("acme/docs", number, "alice")),
        ("installation", "created", lambda: github.install("acme", ["acme/docs"])),
        ("installation", "suspend", lambda: github.suspend(other)),
        ("installation", "unsuspend", lambda: github.unsuspend(other)),
        ("installation_repositories", "added", lambda: github.add_repos_to_installation(other, ["acme/docs"])),
        ("installation_repositories", "removed", lambda: github.remove_repos_from_installation(other, ["acme/docs"])),
        ("installation", "deleted", lambda: github.uninstall(other)),
        ("ping", None, github.ping),
    ]
    for event, action, act in acts:
        received.clear()
        payload = act()
        validate_webhook(event, action, payload)
        assert_like_real_examples(event, action, payload)
        assert payload.get("action") == action
        [(headers, body)] = received
        assert json.loads(body) == payload
        assert headers["X-Github-Event"] == event and headers["User-Agent"].startswith("GitHub-Hookshot/")
        assert headers["Content-Type"] == "application/json" and headers["X-Github-Hook-Id"]
        validate_event(body, signature=headers["X-Hub-Signature-256"], secret=github.app.webhook_secret)
        with pytest.raises(ValidationFailure):
            validate_event(body, signature=headers["X-Hub-Signature-256"], secret="another secret")
        parsed = Event.from_http(headers, body, secret=github.app.webhook_secret)
        assert (parsed.event, parsed.delivery_id) == (event, headers["X-Github-Delivery"])
    assert [d.status for d in github.deliveries] == [202] * len(github.deliveries)


def test_redelivery_repeats_id_and_body(world, receiver):
    github, installation = world
    url, received = receiver
    github.deliver_to(url, secret="s3cret")
    number = open_pr(as_installation(github, installation), github)["number"]
    github.comment("acme/docs", number, "alice", "hello")
    original = github.deliveries[-1]
    again = github.redeliver(original.id)
    (first_headers, first_body), (second_headers, second_body) = received
    assert first_body == second_body and again.redelivery
    assert first_headers["X-Github-Delivery"] == second_headers["X-Github-Delivery"] == original.id
    validate_event(second_body, signature=second_headers["X-Hub-Signature-256"], secret="s3cret")


def test_the_apps_own_comments_are_delivered_too(world, receiver):
    github, installation = world
    url, received = receiver
    github.deliver_to(url)
    api = as_installation(github, installation)
    number = open_pr(api, github)["number"]
    posted = api.post(f"/repos/acme/docs/issues/{number}/comments", json={"body": "Done."}).json()
    api.patch(f"/repos/acme/docs/issues/comments/{posted['id']}", json={"body": "Done, twice."})
    github.flush_deliveries()
    [(headers, body), (_, edit_body)] = received
    payload = json.loads(body)
    validate_webhook("issue_comment", "created", payload)
    assert payload["sender"]["type"] == "Bot" and payload["comment"]["user"]["login"] == "copydesk-test[bot]"
    edited = json.loads(edit_body)
    validate_webhook("issue_comment", "edited", edited)
    assert_like_real_examples("issue_comment", "edited", edited)
    assert edited["changes"] == {"body": {"from": "Done."}} and edited["comment"]["body"] == "Done, twice."


def test_merge_makes_a_real_merge_commit(world, tmp_path):
    github, installation = world
    github.add_repo("acme/handbook", FILES, delete_branch_on_merge=True)
    github.add_repos_to_installation(installation, ["acme/handbook"])
    api = as_installation(github, installation)
    pr = open_pr(api, github, repo="acme/handbook")
    base_before = github.branch_sha("acme/handbook", "main")
    payload = github.merge("acme/handbook", pr["number"], "maintainer")
    validate_webhook("pull_request", "closed", payload)
    assert payload["pull_request"]["merged"] is True and payload["pull_request"]["merged_by"]["login"] == "maintainer"

    merge = github.branch_sha("acme/handbook", "main")
    parents = (
        git_cli(tmp_path, f"--git-dir={github.repo_path('acme/handbook')}", "rev-list", "--parents", "-n1", merge)
        .stdout.decode()
        .split()[1:]
    )
    assert parents == [base_before, pr["head"]["sha"]]
    assert payload["pull_request"]["merge_commit_sha"] == merge
    assert github.branch_sha("acme/handbook", "copydesk/job_1") is None  # delete_branch_on_merge
    assert api.get(f"/repos/acme/handbook/pulls/{pr['number']}").json()["merged"] is True

    github.push("acme/docs", {"README.md": "one\n"}, branch="left")
    github.push("acme/docs", {"README.md": "two\n"})
    conflicted = github.open_pull("acme/docs", "left")
    with pytest.raises(MergeConflict):
        github.merge("acme/docs", conflicted)


def test_request_log_lets_tests_check_copydesks_requests(world):
    github, installation = world
    api = as_installation(github, installation)
    open_pr(api, github)
    [created] = [r for r in github.requests if r.operation == "pulls/create"]
    assert created.auth == "token" and created.status == 201
    validate_request(created.operation, created.json)
    assert "Authorization" not in created.headers
    minted = [r for r in github.requests if r.operation == "apps/create-installation-access-token"]
    assert minted and all(r.auth == "jwt" for r in minted)


def _web_flow(github, login: str = "alice", redirect_uri: str = "http://127.0.0.1:1/cb") -> dict:
    """Go through the App's OAuth web flow as `login`; returns the token exchange's JSON answer."""
    github.sign_in_browser(login)
    page = requests.get(
        f"{github.url}/login/oauth/authorize",
        params={"client_id": github.app.client_id, "redirect_uri": redirect_uri, "state": "s1"},
        timeout=10,
    )
    assert page.status_code == 200 and "Authorize" in page.text
    back = requests.post(
        f"{github.url}/login/oauth/authorize",
        allow_redirects=False,
        timeout=10,
        data={"client_id": github.app.client_id, "redirect_uri": redirect_uri, "state": "s1", "decision": "authorize"},
    )
    assert back.status_code == 302 and back.headers["Location"].startswith(redirect_uri + "?")
    query = dict(part.split("=", 1) for part in back.headers["Location"].split("?", 1)[1].split("&"))
    assert query["state"] == "s1"
    exchange = {
        "client_id": github.app.client_id,
        "client_secret": github.app.client_secret,
        "code": query["code"],
        "redirect_uri": redirect_uri,
    }
    answer = requests.post(
        f"{github.url}/login/oauth/access_token", data=exchange, headers={"Accept": "application/json"}, timeout=10
    ).json()
    again = requests.post(
        f"{github.url}/login/oauth/access_token", data=exchange, headers={"Accept": "application/json"}, timeout=10
    ).json()
    assert again["error"] == "bad_verification_code"  # a code works once
    return answer


def test_oauth_web_flow_user_installations_and_org_roles_match_githubs_schemas(world):
    github, installation = world
    github.add_user("alice")
    github.add_member("acme", "alice", "admin")
    github.add_member("globex", "bob", "member")
    own = github.add_installation("alice")
    answer = _web_flow(github)
    assert answer["token_type"] == "bearer" and answer["access_token"].startswith("ghu_")
    api = GitHubSession(github.url, f"Bearer {answer['access_token']}")
    assert api.get("/user").json()["login"] == "alice"
    listed = api.get("/user/installations").json()
    assert sorted(i["id"] for i in listed["installations"]) == sorted([installation, own])
    membership = api.get("/user/memberships/orgs/acme").json()
    assert (membership["state"], membership["role"]) == ("active", "admin")
    assert api.get("/user/memberships/orgs/globex").status_code == 404
    # An installation token is not a user token, and a revoked authorization is refused everywhere.
    assert as_installation(github, installation).get("/user").status_code == 401
    github.revoke_authorization("alice")
    assert api.get("/user/installations").status_code == 401


def test_oauth_web_flow_refuses_what_github_refuses(github):
    github.oauth_callback = "http://127.0.0.1:1/cb"
    github.sign_in_browser("alice")
    base = {"client_id": github.app.client_id, "state": "s"}
    assert (
        requests.get(
            f"{github.url}/login/oauth/authorize", params={**base, "client_id": "Iv23nope"}, timeout=10
        ).status_code
        == 404
    )
    assert (
        requests.get(
            f"{github.url}/login/oauth/authorize", params={**base, "redirect_uri": "http://evil.test/"}, timeout=10
        ).status_code
        == 400
    )
    denied = requests.post(
        f"{github.url}/login/oauth/authorize",
        allow_redirects=False,
        timeout=10,
        data={**base, "redirect_uri": "http://127.0.0.1:1/cb", "decision": "cancel"},
    )
    assert "error=access_denied" in denied.headers["Location"]
    wrong_secret = requests.post(
        f"{github.url}/login/oauth/access_token",
        headers={"Accept": "application/json"},
        data={"client_id": github.app.client_id, "client_secret": "x", "code": "c"},
        timeout=10,
    )
    assert wrong_secret.json()["error"] == "incorrect_client_credentials"
