"""Source repositories on GitHub: the emulator's side of a code-change trigger (a merged pull request in another
repository of the installation, its diff, review requests, collaborator checks, a repository the installation cannot
read) checked against GitHub's published schemas and example payloads, and bot.github.sources against it."""

import logging

import pytest

from bot.github import events, sources
from service.automations import codechange, outcomes
from service.automations.events import SourceChange, TriggerEvent
from service.automations.model import RunState, parse_spec
from service.codehost.base import SourceUnreachable
from service.models import JobStatus
from tests import test_github_emulator
from tests.github_event_fixtures import REPO, deliver
from tests.github_schemas import (
    GitHubSchemaError,
    operation_for,
    validate_request,
    validate_response,
    validate_webhook,
)
from tests.test_github_emulator import DIFF, GitHubSession, as_installation, assert_like_real_examples, git_cli

SOURCE = "acme/widgets"
SECRET = "acme/secret"  # a repository of the same account that the installation was not given
CODE = {"README.md": "# Widgets\n", "src/widgets.py": "def widgets():\n    return 1\n"}
# The webhook endpoint that records deliveries, shared with the emulator's own tests.
receiver_server = test_github_emulator.receiver_server
receiver = test_github_emulator.receiver


@pytest.fixture
def sourced(github, bot, installed):
    """acme/docs and acme/widgets in one installation (each a project, as every installed repository is), and
    acme/secret outside it; returns the installation id."""
    _, installation_id = installed
    github.add_repo(SOURCE, CODE)
    github.add_repo(SECRET, CODE)
    deliver(bot, "installation_repositories", github.add_repos_to_installation(installation_id, [SOURCE]))
    return installation_id


def watch(bot, repository: str, **options):
    """An automation of acme/docs watching `repository` for merged pull requests."""
    project = bot.services.projects.find_by_repository("github", REPO)
    spec = parse_spec(
        {
            "name": f"Follow {repository}",
            "prompt": "Update the docs for this change.",
            "trigger": {"type": "code_change", "repository": repository},
            "options": options,
        },
        host="github",
    )
    return bot.services.automations.create(project.id, host="github", account=project.account, spec=spec)[0]


@pytest.fixture
def fired(bot, sourced):
    """The code-change events the bot hands on, as (installation id, event, delivery id), with an automation
    watching acme/widgets (a merge elsewhere is not handed on)."""
    watch(bot, SOURCE)
    found: list[tuple[int, TriggerEvent, str]] = []
    bot.on_source_change = lambda _bot, installation_id, event, delivery: found.append(
        (installation_id, event, delivery)
    )
    return found


def merge_source(
    github,
    branch: str,
    files: dict,
    *,
    repo: str = SOURCE,
    user: str = "dev",
    title: str = "Add the widgets command",
    body: str | None = "Adds `widgets --list`.",
) -> dict:
    """A person's pull request on `repo`, merged by a maintainer; returns the `pull_request.closed` payload."""
    github.push(repo, files, branch=branch, message=title)
    number = github.open_pull(repo, branch, user=user, title=title, body=body)
    return github.merge(repo, number, "maintainer")


def three_dot_diff(github, tmp_path, payload: dict, repo: str = SOURCE) -> str:
    pull = payload["pull_request"]
    return git_cli(
        tmp_path,
        f"--git-dir={github.repo_path(repo)}",
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        f"{pull['base']['sha']}...{pull['head']['sha']}",
    ).stdout.decode()


# -- the emulator, against GitHub's schemas -----------------------------------------------------------------


@pytest.mark.parametrize(
    "method, path, operation",
    [
        ("GET", "/repos/acme/docs/collaborators/alice", "repos/check-collaborator"),
        ("GET", "/repos/acme/docs/collaborators/alice/permission", "repos/get-collaborator-permission-level"),
        ("POST", "/repos/acme/docs/pulls/3/requested_reviewers", "pulls/request-reviewers"),
    ],
)
def test_the_new_paths_map_to_githubs_operations(method, path, operation):
    assert operation_for(method, path) == operation


def test_a_pull_requests_diff_is_documented_as_text():
    validate_response("GET", "/repos/acme/widgets/pulls/3", 200, "diff --git a/x b/x\n", media_type=DIFF)
    with pytest.raises(GitHubSchemaError):
        validate_response("GET", "/repos/acme/widgets/pulls/3", 200, {"diff": "x"}, media_type=DIFF)


def test_a_merge_in_a_source_repository_is_a_signed_closed_merged_delivery_like_githubs(github, sourced, receiver):
    url, received = receiver
    github.deliver_to(url)
    payload = merge_source(github, "feature/list", {"src/widgets.py": "def widgets():\n    return 2\n"})
    validate_webhook("pull_request", "closed", payload)
    assert_like_real_examples("pull_request", "closed", payload)
    pull = payload["pull_request"]
    assert (pull["merged"], pull["user"]["login"], pull["title"], pull["body"]) == (
        True,
        "dev",
        "Add the widgets command",
        "Adds `widgets --list`.",
    )
    assert pull["merge_commit_sha"] == github.branch_sha(SOURCE, "main")
    assert pull["html_url"] == f"{github.url}/{SOURCE}/pull/{payload['number']}"
    assert payload["installation"]["id"] == sourced and payload["repository"]["full_name"] == SOURCE
    [(headers, _body)] = received
    assert headers["X-Github-Event"] == "pull_request" and headers["X-Hub-Signature-256"].startswith("sha256=")


def test_a_pull_requests_diff_is_git_diff_from_where_it_left_its_base(github, sourced, tmp_path):
    api = as_installation(github, sourced)
    payload = merge_source(github, "feature/diff", {"src/new.py": "NEW = 1\n", "README.md": "# Widgets!\n"})
    github.push(SOURCE, {"CHANGES.md": "later\n"})  # the base moves on after the merge; the diff does not
    answer = api.get(f"/repos/{SOURCE}/pulls/{payload['number']}", headers={"Accept": DIFF})  # schema-checked
    assert answer.status_code == 200 and answer.headers["Content-Type"].startswith(DIFF)
    assert answer.text == three_dot_diff(github, tmp_path, payload)
    assert "src/new.py" in answer.text and "CHANGES.md" not in answer.text
    # Without the media type it is the JSON pull request, as before.
    assert api.get(f"/repos/{SOURCE}/pulls/{payload['number']}").json()["merged"] is True


def test_a_diff_longer_than_github_shows_is_refused_with_406(github, sourced):
    api = as_installation(github, sourced)
    github.max_diff_lines = 5
    payload = merge_source(github, "feature/long", {"src/long.py": "x = 1\n" * 20})
    answer = api.get(f"/repos/{SOURCE}/pulls/{payload['number']}", headers={"Accept": DIFF})
    assert answer.status_code == 406 and answer.json()["errors"][0]["code"] == "too_large"


def test_collaborator_checks_and_review_requests_follow_githubs_rules(github, sourced, receiver):
    url, received = receiver
    github.set_permission(REPO, "dev", "write")
    github.set_permission(REPO, "reader", "read")
    github.add_user("ci-helper", "Bot")
    github.set_permission(REPO, "ci-helper", "write")
    api = as_installation(github, sourced)
    github.push(REPO, {"docs/widgets.md": "# Widgets\n"}, branch="copydesk/job_1")
    number = api.post(f"/repos/{REPO}/pulls", json={"title": "Docs", "head": "copydesk/job_1", "base": "trunk"}).json()[
        "number"
    ]

    assert api.get(f"/repos/{REPO}/collaborators/dev").status_code == 204
    assert api.get(f"/repos/{REPO}/collaborators/reader").status_code == 204
    assert api.get(f"/repos/{REPO}/collaborators/stranger").status_code == 404
    assert api.get(f"/repos/{SECRET}/collaborators/dev").status_code == 404  # a repository it cannot see

    github.deliver_to(url)
    body = {"reviewers": ["dev", "reader"]}
    validate_request("pulls/request-reviewers", body)
    asked = api.post(f"/repos/{REPO}/pulls/{number}/requested_reviewers", json=body)
    assert asked.status_code == 201
    assert [u["login"] for u in asked.json()["requested_reviewers"]] == ["dev", "reader"]
    github.flush_deliveries()
    assert len(received) == 2  # one review_requested per person, as GitHub sends them
    for delivery in github.deliveries[-2:]:
        validate_webhook("pull_request", "review_requested", delivery.payload)
        assert_like_real_examples("pull_request", "review_requested", delivery.payload)
    assert [d.payload["requested_reviewer"]["login"] for d in github.deliveries[-2:]] == ["dev", "reader"]

    author = api.post(f"/repos/{REPO}/pulls/{number}/requested_reviewers", json={"reviewers": [github.app.bot_login]})
    assert author.status_code == 422 and "author" in author.json()["message"]
    for refused in (["stranger"], ["dev", "stranger"], ["ci-helper"]):
        answer = api.post(f"/repos/{REPO}/pulls/{number}/requested_reviewers", json={"reviewers": refused})
        assert answer.status_code == 422 and "collaborators" in answer.json()["message"], refused
    assert [u["login"] for u in github.pull(REPO, number)["requested_reviewers"]] == ["dev", "reader"]


def test_git_reaches_the_source_repository_and_not_one_outside_the_installation(github, sourced, tmp_path):
    token = as_installation(github, sourced).headers["Authorization"].split()[1]
    git_cli(tmp_path, "clone", "-q", github.clone_url(SOURCE), "widgets", token_value=token)
    assert (tmp_path / "widgets" / "src" / "widgets.py").read_text() == CODE["src/widgets.py"]
    refused = git_cli(tmp_path, "clone", "-q", github.clone_url(SECRET), "secret", token_value=token, check=False)
    assert refused.returncode != 0 and "not found" in refused.stderr.decode().lower()
    api = GitHubSession(github.url, f"token {token}")
    assert api.get(f"/repos/{SECRET}/pulls/1").status_code == 404


# -- bot.github.sources ----------------------------------------------------------------------------------


def test_a_merged_source_pull_request_fires_one_code_change_with_its_diff(github, bot, sourced, fired, tmp_path):
    payload = merge_source(github, "feature/fire", {"src/widgets.py": "def widgets(listing=False):\n    return 3\n"})
    deliver(bot, "pull_request", payload, "delivery-1")

    [(installation_id, event, delivery)] = fired
    assert (installation_id, delivery) == (sourced, "delivery-1")
    number = payload["number"]
    assert (event.kind, event.key) == ("code_change", f"gh:{SOURCE}#pr{number}")
    assert (event.source_repository, event.source_commit) == (SOURCE, github.branch_sha(SOURCE, "main"))
    [change] = event.changes
    assert change == SourceChange(
        kind="pull_request",
        id=str(number),
        title="Add the widgets command",
        body="Adds `widgets --list`.",
        author="dev",
        url=f"{github.url}/{SOURCE}/pull/{number}",
        merge_commit=github.branch_sha(SOURCE, "main"),
        diff=three_dot_diff(github, tmp_path, payload),
        diff_truncated=False,
        repository=SOURCE,
    )
    assert "+def widgets(listing=False):" in change.diff


def test_a_long_diff_is_cut_at_a_whole_line_and_says_so(github, bot, sourced, tmp_path):
    payload = merge_source(github, "feature/big", {"src/big.py": "".join(f"VALUE_{i} = {i}\n" for i in range(3000))})
    change = sources.source_change_of(bot.app, sourced, payload, max_diff_bytes=2000)
    full = three_dot_diff(github, tmp_path, payload)
    assert change.diff_truncated is True
    assert 0 < len(change.diff.encode()) <= 2000 and change.diff.endswith("\n") and full.startswith(change.diff)
    whole = sources.source_change_of(bot.app, sourced, payload, max_diff_bytes=len(full.encode()))
    assert (whole.diff, whole.diff_truncated) == (full, False)


def test_a_diff_github_will_not_show_leaves_the_change_without_one(github, bot, sourced):
    github.max_diff_lines = 5
    payload = merge_source(github, "feature/huge", {"src/huge.py": "x = 1\n" * 50})
    change = sources.source_change_of(bot.app, sourced, payload)
    assert (change.diff, change.diff_truncated, change.title) == ("", True, "Add the widgets command")


def test_closed_unmerged_and_copydesks_own_pull_requests_fire_nothing(github, bot, sourced, fired, pull):
    job, number = pull
    github.push(SOURCE, {"src/x.py": "x\n"}, branch="feature/abandoned")
    closed = github.close(SOURCE, github.open_pull(SOURCE, "feature/abandoned", user="dev"))
    deliver(bot, "pull_request", closed, "closed-unmerged")
    with pytest.raises(ValueError, match="not merged"):
        sources.source_change_of(bot.app, sourced, closed)
    deliver(bot, "pull_request", github.merge(REPO, number), "docs-merged")
    assert fired == []
    # Copydesk's own pull request still ends its job.
    assert bot.services.jobs.get(job.id).status is JobStatus.ARCHIVED


def test_a_source_the_installation_cannot_read_is_a_clear_error(github, bot, sourced, fired, caplog):
    automation = watch(bot, SECRET)
    payload = merge_source(github, "feature/secret", {"src/s.py": "s\n"}, repo=SECRET)
    payload["installation"] = {"id": sourced}  # as if the repository left the installation after the merge
    with pytest.raises(SourceUnreachable, match=SECRET):
        sources.source_change_of(bot.app, sourced, payload)
    with pytest.raises(SourceUnreachable, match=SECRET):
        sources.comment_on_source(bot.app, sourced, SECRET, payload["number"], "Docs: #1")
    with caplog.at_level(logging.WARNING, logger="bot.github.sources"):
        events.handle(bot, "pull_request", "late", payload)  # the handler records it and carries on
        events.handle(bot, "pull_request", "later", payload)  # a repeat records nothing more
    assert fired == [] and "not readable" in caplog.text
    # The automation watching it has a failed run saying why, naming the pull request; no job was made.
    [run] = bot.services.automations.all_runs(automation.id)
    seen = outcomes.outcome(bot.services, run)
    assert (seen.state, run.job_id, run.error["code"]) == (RunState.FAILED, None, "source_unreachable")
    assert SECRET in seen.reason and "access" in seen.reason and seen.reason.endswith("(source_unreachable)")
    assert [(c["id"], c["title"], c["author"]) for c in run.changes] == [
        (str(payload["number"]), "Add the widgets command", "dev")
    ]
    project = bot.services.projects.find_by_repository("github", REPO)
    assert bot.services.jobs.page(project.id, status=None, limit=10, cursor=None)[0] == []


def test_no_diff_is_read_when_no_automation_watches_the_repository(github, bot, sourced, caplog):
    payload = merge_source(github, "feature/unwatched", {"src/u.py": "u\n"})
    before = len(github.requests)
    with caplog.at_level(logging.INFO, logger="bot.github.sources"):
        deliver(bot, "pull_request", payload, "unwatched")
    assert [r.path for r in github.requests[before:]] == []  # not even a token for it
    assert f"no automation watches {SOURCE}" in caplog.text
    # Another account's automation watching acme/widgets is not a watcher: its prompt never gets acme's code.
    other, _ = bot.services.projects.ensure(
        account="umbrella",
        host="github",
        repository="umbrella/docs",
        web_url=f"{github.url}/umbrella/docs",
        ref="main",
        host_data={"installation_id": 999},
    )
    spec = parse_spec(
        {"name": "Spy", "prompt": "p", "trigger": {"type": "code_change", "repository": SOURCE}}, host="github"
    )
    bot.services.automations.create(other.id, host="github", account="umbrella", spec=spec)
    assert codechange.watchers(bot.services, "github", SOURCE) == []


def test_review_is_requested_from_collaborators_only_and_a_refusal_never_fails(github, bot, sourced, pull, caplog):
    _, number = pull
    github.set_permission(REPO, "dev", "write")
    github.add_user("ci-helper", "Bot")  # a collaborator GitHub will not take as a reviewer (422)
    github.set_permission(REPO, "ci-helper", "write")
    project = bot.services.projects.find_by_repository("github", REPO)
    with caplog.at_level(logging.INFO, logger="bot.github.sources"):
        asked = sources.request_reviews(
            bot.host, project, number, ["dev", "DEV", "outsider", github.app.bot_login, "ci-helper", ""]
        )
    assert asked == ["dev"]
    assert [u["login"] for u in github.pull(REPO, number)["requested_reviewers"]] == ["dev"]
    assert "outsider" in caplog.text and "refused" in caplog.text
    # Nobody who can review: nothing is sent.
    before = len([r for r in github.requests if r.operation == "pulls/request-reviewers"])
    assert sources.request_reviews(bot.host, project, number, ["outsider"]) == []
    assert len([r for r in github.requests if r.operation == "pulls/request-reviewers"]) == before


def test_a_comment_on_the_source_pull_request_is_posted_once_per_key(github, bot, sourced):
    payload = merge_source(github, "feature/commented", {"src/c.py": "c\n"})
    number = payload["number"]
    first = sources.comment_on_source(bot.app, sourced, SOURCE, number, "Docs follow in acme/docs#1", key="arun_1")
    again = sources.comment_on_source(bot.app, sourced, SOURCE, number, "Docs follow in acme/docs#1", key="arun_1")
    other = sources.comment_on_source(bot.app, sourced, SOURCE, number, "And in acme/docs#2")
    assert first == again != other
    comments = github.comments(SOURCE, number)
    assert [c["id"] for c in comments] == [int(first), int(other)]
    assert comments[0]["body"].startswith("Docs follow in acme/docs#1") and comments[0]["user"]["type"] == "Bot"
