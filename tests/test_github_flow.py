"""The whole GitHub flow end to end: the emulator plays GitHub (REST API, git over smart HTTP, signed webhooks),
Copydesk runs as in production (web app on a real HTTP server, RQ worker, Redis), configured only by environment."""

import time

import pytest

from tests.cli_process import run
from tests.github_fixtures import REPO, bot_comments, edit, finish, write
from tests.github_schemas import validate_request
from tests.model_standin import Hang, ModelStandIn, Reply, ToolUse

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running


def test_installation_to_merged_pull_request(gh_stack):
    stack = gh_stack()
    github = stack.github

    # An organization installs the App: the repository becomes a project an operator can list.
    github.install("acme", [REPO])
    stack.drain()
    project = stack.project()
    assert project is not None and project.enabled and project.ref == "main"
    listed = run(stack.env, "project", "list").stdout
    assert project.id in listed and REPO in listed

    # An API caller creates a job: a branch is pushed over smart HTTP and a pull request opened.
    stack.script(
        [write("docs/faq.md", "# FAQ\n\nAsk away.\n"), finish("Add an FAQ", "Added docs/faq.md.")],
        [
            edit("docs/faq.md", "Ask away.\n", "Ask away.\n\n## Billing\n\nInvoices are monthly.\n"),
            finish("Add billing", "Added a Billing section to the FAQ."),
        ],
    )
    api = stack.api()
    created = api.post(f"/v2/agent/{project.id}/job", json={"prompt": "Add an FAQ", "asDraft": True})
    assert created.status_code == 201, created.text
    job_id = created.json()["id"]
    assert created.json()["source"]["repository"] == project.web_url
    stack.drain()
    job = api.get(f"/v2/agent/{project.id}/job/{job_id}").json()
    assert job["status"] == "completed", job
    [pull] = github.pulls(REPO)
    assert job["prLink"] == pull["html_url"] and pull["draft"] is True
    assert pull["head"]["ref"] == f"copydesk/{job_id}" == job["branch"]
    assert "## Request" in pull["body"] and "Add an FAQ" in pull["body"]
    first_head = github.branch_sha(REPO, job["branch"])

    # A maintainer asks for more on the pull request: 👀, a follow-up commit on the same PR, and a reply.
    comment = github.comment(REPO, pull["number"], "alice", "@copydesk-test please add a billing section")
    stack.drain()
    assert ("copydesk-test[bot]", "eyes") in github.reactions(comment["comment"]["id"])
    job = api.get(f"/v2/agent/{project.id}/job/{job_id}").json()
    assert job["status"] == "completed" and job["prLink"] == pull["html_url"]
    head = github.branch_sha(REPO, job["branch"])
    assert head != first_head
    assert stack.ctx.git.out("rev-parse", f"{head}^", git_dir=github.repo_path(REPO)) == first_head
    assert len(github.pulls(REPO)) == 1
    reply = bot_comments(github, pull["number"])[-1]["body"]
    assert reply.startswith("@alice ") and "Added a Billing section" in reply
    conversation = api.get(f"/v2/agent/{project.id}/job/{job_id}/messages").json()["messages"]
    follow_up = conversation[2]
    assert follow_up["source"] == "github" and follow_up["author"] == "alice"
    assert "please add a billing section" in follow_up["content"]
    assert "## Follow-ups" in github.pull(REPO, pull["number"])["body"]

    # The maintainer merges: the job is archived and its branch deleted.
    github.merge(REPO, pull["number"])
    stack.drain()
    job = api.get(f"/v2/agent/{project.id}/job/{job_id}").json()
    assert job["status"] == "archived" and job["archivedAt"]
    assert github.branch_sha(REPO, job["branch"]) is None

    # Every request Copydesk sent to GitHub fits GitHub's published request schemas.
    for request in github.requests:
        if request.json is not None and request.operation:
            validate_request(request.operation, request.json)


def test_comments_that_do_not_qualify_start_nothing(gh_stack):
    stack = gh_stack()
    github = stack.github
    github.install("acme", [REPO])
    stack.drain()
    project = stack.project()
    stack.script([write("docs/faq.md", "# FAQ\n"), finish("Add an FAQ", "Added it.")])
    api = stack.api()
    job_id = api.post(f"/v2/agent/{project.id}/job", json={"prompt": "Add an FAQ"}).json()["id"]
    stack.drain()
    [pull] = github.pulls(REPO)
    before = len(bot_comments(github, pull["number"]))

    github.comment(REPO, pull["number"], "alice", "Looks good, no mention here")
    github.comment(REPO, pull["number"], "rita", "@copydesk-test please rewrite everything")
    github.comment(REPO, pull["number"], "dependabot[bot]", "@copydesk-test bump")
    stack.drain()

    messages = api.get(f"/v2/agent/{project.id}/job/{job_id}/messages").json()["messages"]
    assert len(messages) == 2  # the create prompt and its answer: no follow-up was added
    replies = bot_comments(github, pull["number"])[before:]
    assert len(replies) == 1 and replies[0]["body"].startswith("@rita")  # a polite no, only to the person
    assert "write access" in replies[0]["body"]

    # A pull request Copydesk did not open is none of its business.
    github.push(REPO, {"docs/other.md": "# Other\n"}, branch="feature")
    other = github.open_pull(REPO, "feature")
    github.comment(REPO, other, "alice", "@copydesk-test fix this one too")
    stack.drain()
    assert bot_comments(github, other) == []


def test_a_bad_signature_and_a_redelivery_do_nothing(gh_stack):
    stack = gh_stack()
    github = stack.github
    github.deliver_to(f"{stack.url}/github/webhooks", secret="not-the-secret")
    github.install("acme", [REPO])
    github.flush_deliveries()
    assert github.deliveries[-1].status == 401
    assert stack.project() is None

    github.deliver_to(f"{stack.url}/github/webhooks")
    github.add_repos_to_installation(github.install("acme", [])["installation"]["id"], [REPO])
    stack.drain()
    project = stack.project()
    assert project is not None
    github.redeliver(github.deliveries[-1].id)
    stack.drain()
    assert [p.id for p in stack.ctx.services.projects.all()] == [project.id]


def test_uninstalling_disables_the_project_and_fails_its_waiting_run(gh_stack):
    stack = gh_stack()
    github = stack.github
    installation_id = github.install("acme", [REPO])["installation"]["id"]
    stack.drain()
    project = stack.project()
    stack.script([write("docs/faq.md", "# FAQ\n"), finish("Add an FAQ", "Added it.")])
    api = stack.api()
    job_id = api.post(f"/v2/agent/{project.id}/job", json={"prompt": "Add an FAQ"}).json()["id"]
    github.uninstall(installation_id)
    stack.drain()

    job = api.get(f"/v2/agent/{project.id}/job/{job_id}").json()
    assert job["status"] == "failed" and job["error"]["code"] == "installation_removed"
    assert api.get(f"/v2/agent/{project.id}/jobs").json()["jobs"][0]["id"] == job_id
    refused = api.post(f"/v2/agent/{project.id}/job", json={"prompt": "More"})
    assert refused.status_code == 409 and refused.json()["code"] == "project_disabled"
    assert "[disabled]" in run(stack.env, "project", "list").stdout

    github.install("acme", [REPO])  # installed again: the same project is back
    stack.drain()
    assert stack.project().id == project.id and stack.project().enabled


def test_token_expiry_mid_job_and_a_secondary_rate_limit(gh_stack):
    with ModelStandIn() as standin:
        stack = gh_stack(
            COPYDESK_MODEL="openai:gpt-test", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=standin.openai_base_url
        )
        github = stack.github
        github.token_ttl = 3  # seconds; Copydesk caches a token for half of that
        github.install("acme", [REPO])
        stack.drain()
        project = stack.project()
        # The model thinks for longer than a token lives, so the push needs a token minted after the fetch.
        standin.script(
            Hang(3.5),
            Reply(tool_calls=[ToolUse("write_file", {"path": "docs/faq.md", "content": "# FAQ\n"})]),
            Reply(tool_calls=[ToolUse("finish", {"title": "Add an FAQ", "summary": "Added it."})]),
        )
        # ...and GitHub's abuse detection answers the pull-request creation with a 403 and Retry-After.
        github.inject("secondary", 1, match=r"^POST /repos/acme/docs/pulls$", retry_after=1)
        api = stack.api()
        job_id = api.post(f"/v2/agent/{project.id}/job", json={"prompt": "Add an FAQ"}).json()["id"]
        started = time.monotonic()
        stack.drain()
        job = api.get(f"/v2/agent/{project.id}/job/{job_id}").json()
    assert job["status"] == "completed", job
    assert time.monotonic() - started >= 1  # the Retry-After wait was honoured
    assert len(github.pulls(REPO)) == 1
    mints = [r for r in github.requests if r.path.endswith("/access_tokens")]
    assert len(mints) >= 2  # the token used for the fetch expired before the push
    creates = [r.status for r in github.requests if r.method == "POST" and r.path == "/repos/acme/docs/pulls"]
    assert creates == [403, 201]
