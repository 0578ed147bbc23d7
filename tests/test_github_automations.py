"""Automations on GitHub end to end: the emulator plays GitHub (a source repository whose pull requests people merge,
the docs repository, signed webhooks), Copydesk runs as in production (web app, RQ worker, Redis) with a scripted
model. A merged source pull request starts one run that opens one docs pull request, later merges grow it, caps
skip with a reason, and the people who wrote the code are asked to review."""

import rq
from rq.registry import FailedJobRegistry, FinishedJobRegistry, ScheduledJobRegistry

from bot.github import events, inbound
from bot.worker import worker_queues
from service.describe import DESCRIPTION_START
from tests.github_fixtures import REPO, finish, write
from tests.github_schemas import validate_request

SOURCE = "acme/widgets"
CODE = {"README.md": "# Widgets\n", "src/widgets.py": "def widgets():\n    return 1\n"}
PROMPT = "Update the docs for the code change below."


def setup(gh_stack, *, script: list[list[dict]], **options):
    """acme/docs and acme/widgets installed, and an automation of acme/docs watching acme/widgets created through
    the API; returns (stack, api session, project, automation as the API shows it)."""
    stack = gh_stack()
    github = stack.github
    github.add_repo(SOURCE, CODE)
    github.set_permission(REPO, "dev", "write")  # the source pull requests' author can review the docs
    github.install("acme", [REPO, SOURCE])
    drain(stack)
    stack.script(*script)
    project = stack.project()
    api = stack.api()
    created = api.post(
        f"/v2/agent/{project.id}/automations",
        json={
            "name": "Docs follow the code",
            "prompt": PROMPT,
            "trigger": {"type": "code_change", "repository": SOURCE, "mode": "per_change"},
            "options": options,
        },
    )
    assert created.status_code == 201, created.text
    return stack, api, project, created.json()


def drain(stack) -> None:
    """Run the deliveries and the runs they start; none of the worker's jobs may have failed, not even once (a
    handler that raised after recording a run succeeds when retried, so it would otherwise go unseen)."""
    stack.drain()
    redis_client = stack.ctx.services.redis
    for name in worker_queues(stack.ctx.settings.queue_name):
        queue = rq.Queue(name, connection=redis_client)
        for registry in (FailedJobRegistry(queue=queue), ScheduledJobRegistry(queue=queue)):  # retries wait there
            assert registry.get_job_ids() == [], [
                rq.job.Job.fetch(i, connection=redis_client).exc_info for i in registry.get_job_ids()
            ]
        done = rq.job.Job.fetch_many(FinishedJobRegistry(queue=queue).get_job_ids(), connection=redis_client)
        retried = [
            job.description
            for job in done
            if job is not None and job.retries_left is not None and job.retries_left < inbound.RETRY.max
        ]
        assert retried == []


def merge_source(github, branch: str, files: dict, *, title: str, user: str = "dev") -> dict:
    """A person's pull request on acme/widgets, merged; returns the `pull_request.closed` payload."""
    github.push(SOURCE, files, branch=branch, message=title)
    number = github.open_pull(SOURCE, branch, user=user, title=title, body=f"{title}. See the code.")
    return github.merge(SOURCE, number, "maintainer")


def runs_of(api, project, automation) -> list[dict]:
    answer = api.get(f"/v2/agent/{project.id}/automations/{automation['id']}/runs")
    assert answer.status_code == 200, answer.text
    return answer.json()["runs"]


def delivery_of(github, payload: dict):
    """The delivery GitHub sent for one `pull_request.closed` payload."""
    return next(
        d
        for d in github.deliveries
        if d.event == "pull_request"
        and d.payload["repository"]["full_name"] == payload["repository"]["full_name"]
        and d.payload["number"] == payload["number"]
    )


def review_requests(github, number: int) -> list[str]:
    return [u["login"] for u in github.pull(REPO, number)["requested_reviewers"]]


def source_links(github, number: int) -> list[dict]:
    return [c for c in github.comments(SOURCE, number) if c["user"]["type"] == "Bot"]


def test_merged_source_pull_requests_grow_one_docs_pull_request(gh_stack):
    stack, api, project, automation = setup(
        gh_stack,
        script=[
            [
                write("docs/widgets.md", "# Widgets\n\nRun `widgets --list`.\n"),
                finish("Document widgets --list", "Documented the --list flag."),
            ],
            [
                write("docs/widgets.md", "# Widgets\n\nRun `widgets --list` or `--all`.\n"),
                finish("Document --all", "Documented the --all flag."),
            ],
        ],
        reviewers=["alice"],
        commentOnSource=True,
    )
    github = stack.github

    # A merge in the source repository: one run, one docs pull request that names the source pull request.
    first = merge_source(
        github, "feature/list", {"src/widgets.py": "def widgets(listing):\n    return 2\n"}, title="Add widgets --list"
    )
    drain(stack)
    [pull] = github.pulls(REPO)
    [run] = runs_of(api, project, automation)
    assert (run["state"], run["trigger"], run["prLink"]) == ("review_needed", "code_change", pull["html_url"])
    assert [(c["id"], c["author"], c["url"]) for c in run["changes"]] == [
        (str(first["number"]), "dev", first["pull_request"]["html_url"])
    ]
    body = pull["body"]
    assert body.startswith(DESCRIPTION_START) and "## Source changes" in body
    assert (
        f"- Round 1: [{SOURCE}#{first['number']}]({first['pull_request']['html_url']}) `Add widgets --list`"
        f" by `dev`" in body
    )
    job = api.get(f"/v2/agent/{project.id}/job/{run['jobId']}").json()
    assert job["automation"] == {"id": automation["id"], "runId": run["id"], "trigger": "code_change"}
    # The agent's prompt carried the source pull request (as data), and the round read the source at its merge.
    [prompt] = [
        m
        for m in api.get(f"/v2/agent/{project.id}/job/{run['jobId']}/messages").json()["messages"]
        if m["role"] == "user"
    ]
    assert prompt["content"].startswith(PROMPT) and "Add widgets --list" in prompt["content"]
    assert "+def widgets(listing):" in prompt["content"]
    # Review from the source pull request's author and the automation's reviewer; a link on the source one.
    assert review_requests(github, pull["number"]) == ["dev", "alice"]
    [link] = source_links(github, first["number"])
    assert pull["html_url"] in link["body"] and "Docs follow the code" in link["body"]

    # The same event again: a redelivery (the endpoint knows its id) and a handler retried under a new id.
    github.redeliver(delivery_of(github, first).id)
    events.handle(stack.ctx.github_bot(), "pull_request", "0b5e1c2a-retried", first)
    drain(stack)
    assert len(runs_of(api, project, automation)) == 1 and len(github.pulls(REPO)) == 1

    # A second merge while the docs pull request is open: a round on it, not a second pull request.
    github.set_permission(REPO, "erin", "write")
    second = merge_source(github, "feature/all", {"src/all.py": "ALL = True\n"}, title="Add widgets --all", user="erin")
    drain(stack)
    [pull] = github.pulls(REPO)
    newest, older = runs_of(api, project, automation)
    assert (newest["jobId"], newest["state"]) == (older["jobId"], "review_needed")
    assert newest["messageId"] != older["messageId"]
    assert [c["id"] for c in newest["changes"]] == [str(second["number"])]
    body = pull["body"]
    timeline = [line for line in body.splitlines() if line.startswith("- Round ")]
    assert timeline == [
        f"- Round 1: [{SOURCE}#{first['number']}]({first['pull_request']['html_url']}) `Add widgets --list` by `dev`",
        f"- Round 2: [{SOURCE}#{second['number']}]({second['pull_request']['html_url']}) `Add widgets --all` by `erin`",
    ]
    assert (
        f"**Round 2.** Covers [{SOURCE}#{second['number']}]({second['pull_request']['html_url']}).\n\n"
        f"> {PROMPT}\n\nDocumented the --all flag." in body
    )
    # Each round shows the automation's own prompt; what people wrote in the source is only in the timeline.
    assert f"## Request\n\n> {PROMPT}\n\n## Summary" in body and "diff --git" not in body
    # The new source pull request's author is asked too, and it gets its link; the first one's link stays one.
    assert review_requests(github, pull["number"]) == ["dev", "alice", "erin"]
    [link] = source_links(github, second["number"])
    assert pull["html_url"] in link["body"]
    assert len(source_links(github, first["number"])) == 1

    # The round's tracking comment names the automation (no @-mention) and quotes nothing of the source's text.
    rounds = [c["body"] for c in github.comments(REPO, pull["number"]) if "Round 2" in c["body"]]
    assert rounds and all(
        "Started by the automation `Docs follow the code`." in b and "@" not in b and "Add widgets --all" not in b
        for b in rounds
    ), rounds

    for request in github.requests:
        if request.json is not None and request.operation:
            validate_request(request.operation, request.json)


def test_the_open_pull_request_cap_skips_with_its_reason(gh_stack):
    stack, api, project, automation = setup(
        gh_stack,
        script=[[write("docs/widgets.md", "# Widgets\n\nMore.\n"), finish("Widgets", "Documented.")]],
        grouping=False,
        maxOpenPullRequests=1,
        requestSourceReviews=False,
    )
    github = stack.github
    merge_source(github, "feature/one", {"src/one.py": "ONE = 1\n"}, title="One")
    drain(stack)
    merge_source(github, "feature/two", {"src/two.py": "TWO = 2\n"}, title="Two")
    drain(stack)
    [pull] = github.pulls(REPO)
    skipped, opened = runs_of(api, project, automation)
    assert opened["state"] == "review_needed" and opened["prLink"] == pull["html_url"]
    assert (skipped["state"], skipped["jobId"]) == ("skipped", None)
    assert "options.maxOpenPullRequests (1)" in skipped["reason"] and skipped["changes"][0]["title"] == "Two"
    # Review requests were turned off, and no comment was asked for: nobody was asked, nothing posted.
    assert review_requests(github, pull["number"]) == []
    assert not any(c["user"]["type"] == "Bot" for n in (1, 2) for c in github.comments(SOURCE, n))


def test_a_source_repository_the_installation_cannot_read_gives_a_failed_run(gh_stack):
    stack, api, project, automation = setup(gh_stack, script=[])
    github = stack.github
    merged = merge_source(github, "feature/gone", {"src/gone.py": "GONE = 1\n"}, title="Gone")
    # Taken out of the installation before the worker gets to the delivery.
    [installation_id] = list(github.state.installations)
    github.remove_repos_from_installation(installation_id, [SOURCE])
    drain(stack)
    [run] = runs_of(api, project, automation)
    assert (run["state"], run["jobId"]) == ("failed", None)
    assert SOURCE in run["reason"] and run["reason"].endswith("(source_unreachable)")
    assert run["changes"][0]["id"] == str(merged["number"])
    assert github.pulls(REPO) == []


def test_a_source_repository_of_another_account_is_refused_when_the_automation_is_made(gh_stack):
    stack, api, project, automation = setup(gh_stack, script=[])
    refused = api.post(
        f"/v2/agent/{project.id}/automations",
        json={
            "name": "Someone else's code",
            "prompt": PROMPT,
            "trigger": {"type": "code_change", "repository": "other/widgets", "mode": "per_change"},
        },
    )
    assert refused.status_code == 400 and refused.json()["field"] == "trigger.repository", refused.text
    assert "not under the project's account" in refused.json()["detail"]
    moved = api.patch(
        f"/v2/agent/{project.id}/automations/{automation['id']}",
        json={"trigger": {"type": "code_change", "repository": "other/widgets", "mode": "per_change"}},
    )
    assert moved.status_code == 400, moved.text
    assert api.get(f"/v2/agent/{project.id}/automations/{automation['id']}").json()["trigger"]["repository"] == SOURCE
