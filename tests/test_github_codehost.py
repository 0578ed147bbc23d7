"""The `github` code host against the GitHub emulator: git with installation tokens, pull requests, comments."""

import base64

import pytest
import requests

from bot.github.apps import GitHubApp
from bot.github.codehost import GitHubCodeHost, comment_marker
from bot.github.settings import GitHubSettings
from service.codehost.base import CodeHostError
from service.describe import DESCRIPTION_END, DESCRIPTION_START
from service.errors import RunFailed
from service.lease import Lease, LeaseLost
from service.models import Project, PullRequest
from service.workspace.mirror import MirrorStore
from service.workspace.publish import Identity, PushRequest, build_commit, push_commit
from tests.harness import LiveServer, wait_until
from tests.scripted_github import Answer, ScriptedGitHub

DOCS = {"README.md": "# Docs\n", "docs/intro.md": "Intro\n"}
BRANCH = "copydesk/job_1"
BOT = Identity("Copydesk", "bot@copydesk.example")


class Scene:
    def __init__(self, github, redis_client, git, tmp_path, sleeps):
        self.github = github
        self.redis = redis_client
        repo = github.add_repo("acme/docs", files=DOCS)
        github.add_repo("acme/other")
        self.installation_id = github.add_installation("acme", ["acme/docs", "acme/other"])
        settings = GitHubSettings(
            app_id=str(github.app.id),
            private_key=github.app.private_key_pem,
            webhook_secret=github.app.webhook_secret,
            api_url=github.url,
        )
        self.app = GitHubApp(settings, redis_client, requests.Session(), sleep=sleeps.append)
        self.host = GitHubCodeHost(self.app)
        self.project = Project(
            id="prj_1",
            account="acme",
            host="github",
            repository="acme/docs",
            web_url=f"{github.url}/acme/docs",
            ref="main",
            host_data={"installation_id": self.installation_id, "repository_id": repo.id},
        )
        self.mirrors = MirrorStore(tmp_path / "mirrors", git)

    def push_job_branch(self, files: dict, message: str = "Edit docs") -> str:
        """One run's fetch, commit and push through the mirror, as the worker does it."""
        remote = self.host.remote(self.project)
        mirror = self.mirrors.mirror(remote)
        with mirror.run_refs(remote, {"base": "refs/heads/main", "branch": f"refs/heads/{BRANCH}"}) as heads:
            start = heads["branch"] or heads["base"]
            commit = build_commit(mirror, start, files, message, BOT, BOT)
            return push_commit(
                mirror,
                remote,
                PushRequest(
                    commit=commit,
                    branch=BRANCH,
                    start_commit=start,
                    changes=files,
                    message=message,
                    author=BOT,
                    committer=BOT,
                ),
            ).commit

    def open(self, **overrides) -> PullRequest:
        options = {
            "job_id": "job_1",
            "branch": BRANCH,
            "base": "main",
            "title": "Improve the intro",
            "body": "What changed",
            "draft": False,
            **overrides,
        }
        return self.host.open_or_update_pull(self.project, **options)

    def minted(self) -> list:
        return [r for r in self.github.requests if r.operation == "apps/create-installation-access-token"]


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def scene(github, redis_client, git, tmp_path, sleeps):
    return Scene(github, redis_client, git, tmp_path, sleeps)


# -- git ------------------------------------------------------------------------------------------


def test_fetch_and_push_with_a_repository_scoped_token(scene):
    commit = scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    assert scene.github.branch_sha("acme/docs", BRANCH) == commit
    (mint,) = scene.minted()
    # By the repository's id, which a rename does not change.
    assert mint.json == {"repository_ids": [scene.github.state.repo("acme/docs").id]}
    git_calls = [r for r in scene.github.requests if r.path.startswith("/acme/docs.git/")]
    assert git_calls and {r.auth for r in git_calls} == {"basic"}


def test_the_token_never_lands_on_disk_or_in_the_remote(scene, tmp_path):
    remote = scene.host.remote(scene.project)
    scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    tokens = list(scene.github.state.tokens)
    assert tokens
    secrets = [t.encode() for t in tokens]
    secrets += [base64.b64encode(f"x-access-token:{t}".encode()) for t in tokens]
    files = [p for p in (tmp_path / "mirrors").rglob("*") if p.is_file()]
    assert any(p.name == "config" for p in files)
    for path in files:
        data = path.read_bytes()
        assert not any(secret in data for secret in secrets), path
    assert remote.url == f"{scene.github.url}/acme/docs.git"
    assert not any(t in repr(remote) for t in tokens)


def test_the_header_is_only_for_the_code_host(scene):
    config = scene.host.remote(scene.project).current_config()
    (key,) = config
    assert key == f"http.{scene.github.url}/.extraHeader"  # git sends it to no other host
    assert config[key].startswith("Authorization: Basic ")


def test_each_git_command_gets_a_fresh_token_when_the_old_one_expired(scene):
    scene.github.token_ttl = 2  # cached for half its life
    scene.push_job_branch({"docs/intro.md": b"First\n"})
    first = len(scene.minted())
    wait_until(lambda: not scene.redis.keys("cd:gh:token:*"), 10, "the cached token to expire")
    scene.push_job_branch({"docs/intro.md": b"Second\n"}, message="Again")
    assert len(scene.minted()) > first
    assert (
        scene.github.state.git.out("show", f"{BRANCH}:docs/intro.md", git_dir=scene.github.repo_path("acme/docs"))
        == "Second"
    )


def test_git_against_a_removed_installation_ends_the_run_as_installation_removed(scene):
    scene.github.uninstall(scene.installation_id)
    remote = scene.host.remote(scene.project)
    with pytest.raises(RunFailed, match=f"installation {scene.installation_id} is gone") as failed:
        scene.mirrors.mirror(remote).fetch(remote, {"refs/heads/main": "refs/test/main"})
    assert failed.value.code == "installation_removed"


def test_a_repository_taken_out_of_the_installation_ends_the_run_as_installation_removed(scene, redis_client):
    scene.github.remove_repos_from_installation(scene.installation_id, ["acme/docs"])
    redis_client.flushdb()  # a token minted before the removal would still be cached
    with pytest.raises(RunFailed, match="no longer given access to acme/docs") as failed:
        scene.host.comment(scene.project, 1, "hello")
    assert failed.value.code == "installation_removed"


# -- pull requests --------------------------------------------------------------------------------


def test_open_a_draft_pull_request(scene):
    scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    pull = scene.open(draft=True)
    shown = scene.github.pull("acme/docs", pull.number)
    assert pull == PullRequest(number=shown["number"], url=shown["html_url"], state="open")
    assert (shown["draft"], shown["title"], shown["body"], shown["head"]["ref"], shown["base"]["ref"]) == (
        True,
        "Improve the intro",
        "What changed",
        BRANCH,
        "main",
    )
    assert shown["user"]["login"] == scene.github.app.bot_login


def test_a_ready_pull_request_when_not_draft(scene):
    scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    assert scene.github.pull("acme/docs", scene.open(draft=False).number)["draft"] is False


def test_follow_up_updates_the_same_pull_request(scene):
    scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    first = scene.open(body=f"{DESCRIPTION_START}\nRound 1\n{DESCRIPTION_END}\n")
    scene.push_job_branch({"docs/intro.md": b"Even better\n"}, message="Round 2")
    again = scene.open(title="Improve the intro (2)", body=f"{DESCRIPTION_START}\nBoth rounds\n{DESCRIPTION_END}\n")
    assert again == first
    (shown,) = scene.github.pulls("acme/docs")
    assert (shown["title"], shown["body"]) == (
        "Improve the intro (2)",
        f"{DESCRIPTION_START}\nBoth rounds\n{DESCRIPTION_END}\n",
    )


def test_a_round_that_pushed_nothing_updates_only_an_open_pull_request(scene):
    scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    first = scene.open()
    assert scene.open(body="Answered", may_open=False) == first
    scene.github.close("acme/docs", first.number)
    assert scene.open(body="Answered again", may_open=False) is None  # closed meanwhile: nothing opened
    assert [p["state"] for p in scene.github.pulls("acme/docs")] == ["closed"]


def test_a_retry_finds_the_pull_request_an_earlier_attempt_opened(scene):
    scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    number = scene.github.open_pull("acme/docs", BRANCH, user=scene.github.app.bot_login, title="Earlier attempt")
    assert scene.open().number == number
    assert len(scene.github.pulls("acme/docs")) == 1
    assert not any(r.operation == "pulls/create" for r in scene.github.requests)


def test_a_closed_pull_request_is_left_closed_and_a_new_one_opened(scene):
    scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    first = scene.open()
    scene.github.close("acme/docs", first.number)
    second = scene.open()
    assert second.number != first.number
    assert [p["state"] for p in scene.github.pulls("acme/docs")] == ["closed", "open"]


def test_no_commits_is_a_code_host_error(scene):
    repo = scene.github.repo_path("acme/docs")
    scene.github.state.git.run("update-ref", f"refs/heads/{BRANCH}", "refs/heads/main", git_dir=repo)
    with pytest.raises(CodeHostError, match=r"HTTP 422\): .*No commits between main and copydesk/job_1"):
        scene.open()


def test_rate_limits_and_server_errors_are_waited_out(scene, sleeps):
    scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    scene.github.inject("secondary", 1, match="POST /repos/acme/docs/pulls", retry_after=3)
    scene.github.inject("server", 2, status=502, match="GET /repos/acme/docs/pulls")
    pull = scene.open()
    assert len(scene.github.pulls("acme/docs")) == 1 and pull.number == 1
    assert 3.0 in sleeps and len(sleeps) == 3


def test_a_rate_limit_too_long_to_wait_is_a_code_host_error(scene, sleeps):
    scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    scene.github.inject("primary", 1, match="GET /repos/acme/docs/pulls", reset_in=3600)
    with pytest.raises(CodeHostError, match="rate limit .* retry after"):
        scene.open()
    assert sleeps == []


def test_the_create_race_reuses_the_winner(redis_client, github_app):
    """Our look-up saw no pull request, then another attempt's create won: list again and update that one."""
    scripted = ScriptedGitHub()
    pull = {"number": 9, "html_url": "https://github.example/acme/docs/pull/9", "state": "open"}
    scripted.then(
        Answer(201, body={"token": "ghs_x", "expires_at": "2999-01-01T00:00:00Z"}),
        Answer(body=[]),
        Answer(
            422,
            body={
                "message": "Validation Failed",
                "errors": [
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": "A pull request already exists for acme:b.",
                    }
                ],
            },
        ),
        Answer(body=[pull]),
        Answer(body=pull),
    )
    with LiveServer(scripted) as live:
        settings = GitHubSettings(app_id=str(github_app.id), private_key=github_app.private_key_pem, api_url=live.url)
        host = GitHubCodeHost(GitHubApp(settings, redis_client, requests.Session()))
        project = Project(
            id="prj_1",
            account="acme",
            host="github",
            repository="acme/docs",
            web_url="",
            ref="main",
            host_data={"installation_id": 5},
        )
        got = host.open_or_update_pull(
            project, job_id="job_1", branch="b", base="main", title="T", body="B", draft=False
        )
    assert got == PullRequest(number=9, url=pull["html_url"], state="open")
    assert [(s.method, s.path.split("?")[0]) for s in scripted.seen] == [
        ("POST", "/app/installations/5/access_tokens"),
        ("GET", "/repos/acme/docs/pulls"),
        ("POST", "/repos/acme/docs/pulls"),
        ("GET", "/repos/acme/docs/pulls"),
        ("PATCH", "/repos/acme/docs/pulls/9"),
    ]
    assert scripted.seen[1].path == "/repos/acme/docs/pulls?state=open&head=acme%3Ab&per_page=10"


# -- comments, reactions, branches, permissions ---------------------------------------------------


@pytest.fixture
def pull_number(scene):
    scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    return scene.open().number


def test_comment_on_the_pull_request(scene, pull_number):
    scene.host.comment(scene.project, pull_number, "Round 2 done")
    (comment,) = scene.github.comments("acme/docs", pull_number)
    assert (comment["body"], comment["user"]["login"]) == ("Round 2 done", scene.github.app.bot_login)


def test_a_keyed_comment_is_posted_once_with_an_invisible_marker(scene, pull_number, redis_client):
    lease = Lease(redis_client, "job_1")
    assert lease.acquire()
    # A person's comment that quotes the marker does not count: only the App's own comments do.
    scene.github.comment("acme/docs", pull_number, "alice", f"copied: {comment_marker('msg_1:round')}")
    for _attempt in range(2):  # a retry of the same run after it posted
        scene.host.comment(scene.project, pull_number, "Round 2 done", fence=lease.fence, key="msg_1:round")
    scene.host.comment(scene.project, pull_number, "Round 3 done", fence=lease.fence, key="msg_2:round")
    ours = [
        c["body"]
        for c in scene.github.comments("acme/docs", pull_number)
        if c["user"]["login"] == scene.github.app.bot_login
    ]
    assert ours == [
        "Round 2 done\n\n<!-- copydesk:comment msg_1:round -->",
        "Round 3 done\n\n<!-- copydesk:comment msg_2:round -->",
    ]


def test_a_run_whose_lease_is_gone_writes_nothing_to_github(scene, pull_number, redis_client):
    lease = Lease(redis_client, "job_1", ttl_seconds=5)
    assert lease.acquire()
    stale = lease.fence
    lease.release()
    assert Lease(redis_client, "job_1").acquire()  # another run holds the job now
    before = len(scene.github.requests)
    with pytest.raises(LeaseLost):
        scene.open(title="Stale title", fence=stale)
    with pytest.raises(LeaseLost):
        scene.host.comment(scene.project, pull_number, "Stale comment", fence=stale, key="msg_1:round")
    writes = [r for r in scene.github.requests[before:] if r.method != "GET" and "access_tokens" not in r.path]
    assert writes == []
    assert scene.github.pull("acme/docs", pull_number)["title"] == "Improve the intro"
    assert scene.github.comments("acme/docs", pull_number) == []


def test_reply_to_a_review_comment(scene, pull_number):
    asked = scene.github.review_comment("acme/docs", pull_number, "alice", "@copydesk-test reword", "docs/intro.md", 1)
    parent = asked["comment"]["id"]
    scene.host.reply_in_thread(scene.project, pull_number, str(parent), "Reworded")
    reply = scene.github.comments("acme/docs", pull_number)[-1]
    assert (reply["body"], reply["in_reply_to_id"]) == ("Reworded", parent)


def test_reactions_on_each_kind_of_target(scene, pull_number):
    issue_comment = scene.github.comment("acme/docs", pull_number, "alice", "@copydesk-test hi")["comment"]["id"]
    review_comment = scene.github.review_comment("acme/docs", pull_number, "alice", "x", "docs/intro.md", 1)
    review_comment = review_comment["comment"]["id"]
    scene.host.react(scene.project, kind="issue_comment", id=issue_comment)
    scene.host.react(scene.project, kind="issue_comment", id=issue_comment)  # GitHub keeps one per content
    scene.host.react(scene.project, kind="review_comment", id=review_comment, content="rocket")
    scene.host.react(scene.project, kind="issue", id=pull_number, content="+1")
    bot = scene.github.app.bot_login
    assert scene.github.reactions(issue_comment) == [(bot, "eyes")]
    assert scene.github.reactions(review_comment) == [(bot, "rocket")]
    assert scene.github.reactions(scene.github.pull("acme/docs", pull_number)["id"]) == [(bot, "+1")]


def test_a_comment_answered_502_is_not_posted_again(scene, pull_number, sleeps):
    scene.github.inject("server", 1, status=502, match="POST /repos/acme/docs/issues/")
    with pytest.raises(CodeHostError, match=r"could not comment on #\d+: .*HTTP 502\); not retried"):
        scene.host.comment(scene.project, pull_number, "Round 2 done")
    posts = [r for r in scene.github.requests if r.operation == "issues/create-comment"]
    assert [r.status for r in posts] == [502] and sleeps == []


def test_a_review_reply_answered_502_is_not_posted_again(scene, pull_number, sleeps):
    asked = scene.github.review_comment("acme/docs", pull_number, "alice", "@copydesk-test reword", "docs/intro.md", 1)
    scene.github.inject("server", 1, status=502, match="POST /repos/acme/docs/pulls/")
    with pytest.raises(CodeHostError, match=r"HTTP 502\); not retried"):
        scene.host.reply_in_thread(scene.project, pull_number, str(asked["comment"]["id"]), "Reworded")
    assert sleeps == []


def test_reactions_and_pull_creation_are_retried_after_502(scene, sleeps):
    scene.push_job_branch({"docs/intro.md": b"Better intro\n"})
    scene.github.inject("server", 1, status=502, match="POST /repos/acme/docs/pulls$")
    number = scene.open().number
    issue_comment = scene.github.comment("acme/docs", number, "alice", "@copydesk-test hi")["comment"]["id"]
    scene.github.inject("server", 1, status=503, match="POST /repos/acme/docs/issues/comments/.*/reactions")
    scene.host.react(scene.project, kind="issue_comment", id=issue_comment)
    assert scene.github.reactions(issue_comment) == [(scene.github.app.bot_login, "eyes")]
    assert len(scene.github.pulls("acme/docs")) == 1 and len(sleeps) == 2


def test_a_revoked_token_is_replaced_and_the_comment_posted_once(scene, pull_number):
    scene.github.state.revoke_tokens(scene.installation_id)  # the cached token now gets 401
    scene.host.comment(scene.project, pull_number, "Round 2 done")
    assert [c["body"] for c in scene.github.comments("acme/docs", pull_number)] == ["Round 2 done"]
    posts = [r.status for r in scene.github.requests if r.operation == "issues/create-comment"]
    assert posts == [401, 201] and len(scene.minted()) == 2


def test_react_to_a_missing_comment_is_a_code_host_error(scene):
    with pytest.raises(CodeHostError, match=r"HTTP 404"):
        scene.host.react(scene.project, kind="issue_comment", id=999999)


def test_delete_branch_and_again(scene, pull_number):
    scene.host.delete_branch(scene.project, BRANCH)
    assert scene.github.branch_sha("acme/docs", BRANCH) is None
    scene.host.delete_branch(scene.project, BRANCH)  # already gone: fine


def test_collaborator_permission(scene):
    roles = {"ann": "admin", "max": "maintain", "wes": "write", "tia": "triage", "rea": "read"}
    for login, role in roles.items():
        scene.github.set_permission("acme/docs", login, role)
    got = {login: scene.host.collaborator_permission(scene.project, login) for login in roles}
    assert got == {"ann": "admin", "max": "write", "wes": "write", "tia": "read", "rea": "read"}


def test_unknown_user_has_no_permission(scene):
    assert scene.host.collaborator_permission(scene.project, "nobody-at-all") == "none"


def test_a_suspended_installation_ends_the_run_as_installation_suspended(scene, pull_number):
    scene.github.suspend(scene.installation_id)  # revokes the cached token: the 401 leads to a new mint
    with pytest.raises(RunFailed, match="suspended") as failed:
        scene.host.comment(scene.project, pull_number, "hello")
    assert failed.value.code == "installation_suspended"


def test_project_without_installation_id(scene):
    scene.project.host_data = {}
    with pytest.raises(CodeHostError, match="no GitHub installation id"):
        scene.host.remote(scene.project)


def test_read_a_pull_request_and_a_review_or_none_when_github_will_not_show_them(scene, pull_number):
    assert scene.host.pull_request(scene.project, pull_number)["head"]["ref"] == BRANCH
    assert scene.host.pull_request(scene.project, pull_number + 100) is None
    submitted = scene.github.review("acme/docs", pull_number, "alice", "Looks good", state="approved")
    review_id = submitted["review"]["id"]
    review, lines = scene.host.review(scene.project, pull_number, review_id)
    assert (review["id"], review["body"], lines) == (review_id, "Looks good", [])
    assert scene.host.review(scene.project, pull_number, review_id + 100) is None
