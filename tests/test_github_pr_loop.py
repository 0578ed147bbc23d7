"""Working on a pull request through the GitHub emulator: one tracking comment per round, answers in review
threads, a description that stays true."""

import pytest

from service.describe import DESCRIPTION_START
from tests.github_fixtures import REPO, bot_comments, edit, finish, write
from tests.github_schemas import validate_request

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running


def start_job(stack, prompt: str = "Add an FAQ") -> tuple[object, str, dict]:
    """Install the App, create a job through the API and run it: (project, job id, its pull request)."""
    stack.github.install("acme", [REPO])
    stack.drain()
    project = stack.project()
    api = stack.api()
    created = api.post(f"/v2/agent/{project.id}/job", json={"prompt": prompt})
    assert created.status_code == 201, created.text
    stack.drain()
    [pull] = stack.github.pulls(REPO)
    return project, created.json()["id"], pull


def edits_of(github, comment_id: int) -> list[str]:
    """The bodies Copydesk sent when editing one comment, in order."""
    return [
        r.json["body"]
        for r in github.requests
        if r.operation == "issues/update-comment" and r.path.endswith(f"/issues/comments/{comment_id}")
    ]


def test_one_tracking_comment_per_round_edited_in_place(gh_stack):
    stack = gh_stack(COPYDESK_COMMENT_EDIT_SECONDS="0")
    github = stack.github
    stack.script(
        [write("docs/faq.md", "# FAQ\n\nAsk away.\n"), finish("Add an FAQ", "Added docs/faq.md.")],
        [
            {"tool": "read_file", "args": {"path": "docs/faq.md"}},
            {"tool": "search", "args": {"pattern": "FAQ"}},
            edit("docs/faq.md", "Ask away.\n", "Ask away.\n\n## Billing\n\nInvoices are monthly.\n"),
            finish("Add billing", "Added a Billing section to the FAQ."),
        ],
    )
    project, job_id, pull = start_job(stack)
    number = pull["number"]

    # The first round came from the API: its comment appears once the pull request exists, already done.
    [first] = bot_comments(github, number)
    assert first["body"].startswith("**Round 1** · ✅ done") and "Added docs/faq.md." in first["body"]

    asked = github.comment(REPO, number, "alice", "@copydesk-test please add a billing section")["comment"]
    stack.drain()
    assert ("copydesk-test[bot]", "eyes") in github.reactions(asked["id"])
    tracking, reply = bot_comments(github, number)[1:]
    # Edited in place: queued when accepted, then working with the steps so far, then done.
    bodies = edits_of(github, tracking["id"])
    assert any("🛠️ working" in b and "read 1 file, searched once" in b for b in bodies), bodies
    assert any("edited `docs/faq.md`" in b and "working" in b for b in bodies), bodies
    assert tracking["body"] == bodies[-1]
    head = github.branch_sha(REPO, f"copydesk/{job_id}")
    assert tracking["body"].startswith("**Round 2** · ✅ done") and f"Pushed {head[:12]}." in tracking["body"]
    assert "Added a Billing section to the FAQ." in tracking["body"] and "- `docs/faq.md`" in tracking["body"]
    assert "Requested by @alice." in tracking["body"]
    # Edits notify nobody: one short reply mentions who asked. No separate "Round n pushed" comment.
    assert reply["body"].startswith("@alice round 2 is done: Added a Billing section")
    assert len(bot_comments(github, number)) == 3 and not any(
        "** pushed" in c["body"] for c in bot_comments(github, number)
    )

    # A round that fails says so in its own comment, in plain words, and tells the person.
    stack.script_path.write_text("not a script")
    github.comment(REPO, number, "alice", "@copydesk-test and a pricing section")
    stack.drain()
    failed, failure_reply = bot_comments(github, number)[3:]
    assert failed["body"].startswith("**Round 3** · ❌ failed") and "(`invalid_script`)" in failed["body"]
    assert "changed nothing" in failed["body"]
    assert failure_reply["body"].startswith("@alice round 3 failed: ")
    assert len(bot_comments(github, number)) == 5

    # An API follow-up gets its comment too (nobody to mention, so no reply).
    stack.script([], [], [], [write("docs/more.md", "# More\n"), finish("More", "Added docs/more.md.")])
    api = stack.api()
    assert api.post(f"/v2/agent/{project.id}/job/{job_id}/message", json={"prompt": "More"}).status_code == 200
    stack.drain()
    [api_round] = bot_comments(github, number)[5:]
    assert api_round["body"].startswith("**Round 4** · ✅ done") and "Added docs/more.md." in api_round["body"]

    for request in github.requests:
        if request.json is not None and request.operation:
            validate_request(request.operation, request.json)


def test_edits_are_throttled(gh_stack):
    stack = gh_stack(COPYDESK_COMMENT_EDIT_SECONDS="3600")
    github = stack.github
    steps = [{"tool": "read_file", "args": {"path": "docs/index.md"}} for _ in range(6)]
    stack.script(
        [write("docs/faq.md", "# FAQ\n"), finish("Add an FAQ", "Added it.")],
        [*steps, edit("docs/faq.md", "# FAQ\n", "# FAQ\n\nMore.\n"), finish("More", "Said more.")],
    )
    _project, _job_id, pull = start_job(stack)
    github.comment(REPO, pull["number"], "alice", "@copydesk-test say more")
    stack.drain()
    tracking = bot_comments(github, pull["number"])[1]
    # Eight steps, yet within the throttle's window only the round's last word is an edit.
    assert len(edits_of(github, tracking["id"])) == 1
    assert tracking["body"].startswith("**Round 2** · ✅ done")


def thread_replies(github, number: int, thread_id: int) -> list[dict]:
    return [
        c for c in github.comments(REPO, number) if c.get("in_reply_to_id") == thread_id and c["user"]["type"] == "Bot"
    ]


def test_line_comments_are_answered_in_their_threads_and_a_review_is_one_round(gh_stack):
    stack = gh_stack()
    github = stack.github
    stack.script(
        [write("docs/faq.md", "# FAQ\n\nAsk away.\n\nWe answer.\n"), finish("Add an FAQ", "Added it.")],
        [edit("docs/faq.md", "Ask away.", "Ask us anything."), finish("Reword", "Reworded the intro.")],
        [
            edit("docs/faq.md", "Ask us anything.", "Ask."),
            edit("docs/faq.md", "We answer.", "We reply."),
            finish("Tighten", "Shortened both lines."),
        ],
    )
    project, job_id, pull = start_job(stack)
    number = pull["number"]
    api = stack.api()

    line = github.review_comment(REPO, number, "alice", "@copydesk-test reword this", "docs/faq.md", 3)["comment"]
    stack.drain()
    head = github.branch_sha(REPO, f"copydesk/{job_id}")
    [answer] = thread_replies(github, number, line["id"])
    assert answer["body"].startswith(f"@alice Addressed in {head[:12]}: Reworded the intro.")
    assert ("copydesk-test[bot]", "eyes") in github.reactions(line["id"])
    # The thread reply is the notification: no second, top-level one.
    assert not any(c["body"].startswith("@alice round") for c in bot_comments(github, number))

    # A review whose body asks, with two line comments: one round, and each thread gets its answer.
    github.submit_review(
        REPO,
        number,
        "alice",
        "@copydesk-test please tighten these",
        [("docs/faq.md", 3, "Too long"), ("docs/faq.md", 5, "Say reply")],
        "changes_requested",
    )
    stack.drain()
    messages = api.get(f"/v2/agent/{project.id}/job/{job_id}/messages").json()["messages"]
    users = [m for m in messages if m["role"] == "user"]
    assert len(users) == 3  # the create, the line comment, and one round for the whole review
    assert "Too long" in users[2]["content"] and "Say reply" in users[2]["content"]
    assert "please tighten these" in users[2]["content"]
    head = github.branch_sha(REPO, f"copydesk/{job_id}")
    review_lines = [
        c
        for c in github.comments(REPO, number)
        if c.get("pull_request_review_id") and c["body"] in ("Too long", "Say reply")
    ]
    for asked in review_lines:
        [reply] = thread_replies(github, number, asked["id"])
        assert reply["body"].startswith(f"@alice Addressed in {head[:12]}: Shortened both lines.")
        assert ("copydesk-test[bot]", "eyes") in github.reactions(asked["id"])
    assert stack.ctx.git.out("show", f"{head}:docs/faq.md", git_dir=github.repo_path(REPO)).endswith("We reply.")
    tracking = [c for c in bot_comments(github, number) if c["body"].startswith("**Round 3**")]
    assert len(tracking) == 1 and "✅ done" in tracking[0]["body"]

    for request in github.requests:
        if request.json is not None and request.operation:
            validate_request(request.operation, request.json)


def test_the_description_follows_the_branch_and_keeps_a_persons_text(gh_stack):
    stack = gh_stack()
    github = stack.github
    stack.script(
        [write("docs/faq.md", "# FAQ\n\nAsk away.\n"), finish("Add an FAQ", "Added docs/faq.md.")],
        [finish("Answer", "The FAQ already covers billing; nothing to change.")],
        [write("docs/billing.md", "# Billing\n"), finish("Billing", "Added docs/billing.md.")],
    )
    _project, _job_id, pull = start_job(stack)
    number = pull["number"]
    ours = github.pull(REPO, number)["body"]
    assert ours.startswith(DESCRIPTION_START) and "(1 round so far)" in ours and "`docs/faq.md` (added)" in ours
    github.edit_pull_body(REPO, number, f"Closes #12, please review by Friday.\n\n{ours}\nReviewers: @bob\n")

    # A round that changes nothing still rewrites Copydesk's section: one more round, the same files.
    github.comment(REPO, number, "alice", "@copydesk-test does the FAQ cover billing?")
    stack.drain()
    body = github.pull(REPO, number)["body"]
    assert body.startswith("Closes #12, please review by Friday.\n\n") and body.endswith("\nReviewers: @bob\n")
    assert body.count(DESCRIPTION_START) == 1 and "(2 rounds so far)" in body
    assert "nothing to change" in body and "`docs/faq.md` (added)" in body

    # A round that adds a file: the section lists the whole branch against the base.
    github.comment(REPO, number, "alice", "@copydesk-test add a billing page")
    stack.drain()
    body = github.pull(REPO, number)["body"]
    assert body.startswith("Closes #12") and body.endswith("Reviewers: @bob\n") and "(3 rounds so far)" in body
    assert "`docs/faq.md` (added)" in body and "`docs/billing.md` (added)" in body
    assert "## Docs check" in body  # the latest docs check, kept from the round that ran it


def user_messages(stack, project, job_id) -> list[dict]:
    messages = stack.api().get(f"/v2/agent/{project.id}/job/{job_id}/messages").json()["messages"]
    return [m for m in messages if m["role"] == "user"]


def test_a_failing_check_on_copydesks_commit_is_fixed_once(gh_stack):
    stack = gh_stack()
    github = stack.github
    stack.script(
        [write("docs/faq.md", "# FAQ\n\nAsk away, eg by mail.\n"), finish("Add an FAQ", "Added it.")],
        [edit("docs/faq.md", "eg by", "e.g. by"), finish("Fix Vale", "Wrote e.g. as Vale asks.")],
    )
    project, job_id, pull = start_job(stack)
    branch = f"copydesk/{job_id}"
    first = github.branch_sha(REPO, branch)

    github.check_run(
        REPO,
        first,
        "vale",
        "failure",
        title="1 error",
        summary="Vale found 1 error",
        text="docs/faq.md\n 3:15  error  Use 'e.g.'  Microsoft.Foreign",
        annotations=[("docs/faq.md", 3, "Use 'e.g.' instead of 'eg'")],
    )
    stack.drain()
    users = user_messages(stack, project, job_id)
    assert len(users) == 2 and users[1]["source"] == "ci" and users[1]["status"] == "processed"
    asked = users[1]["content"]
    assert asked.startswith("Fix the checks that fail on this pull request: vale.")
    assert "docs/faq.md:3: Use 'e.g.' instead of 'eg'" in asked and "Microsoft.Foreign" in asked
    fixed = github.branch_sha(REPO, branch)
    assert fixed != first and "e.g. by mail" in stack.ctx.git.out(
        "show", f"{fixed}:docs/faq.md", git_dir=github.repo_path(REPO)
    )
    [tracking] = [c for c in bot_comments(github, pull["number"]) if c["body"].startswith("**Round 2**")]
    assert "✅ done" in tracking["body"] and "Fix the checks that fail" in tracking["body"]

    # The same failure again (a redelivery, the suite's event) and the check passing on the fix: no round.
    github.redeliver(next(d.id for d in github.deliveries if d.event == "check_run"))
    github.check_run(REPO, fixed, "vale", "success")
    stack.drain()
    assert len(user_messages(stack, project, job_id)) == 2


def test_the_round_cap_holds_on_a_check_that_keeps_failing(gh_stack):
    stack = gh_stack(COPYDESK_CI_FIX_ROUNDS="1")
    github = stack.github
    stack.script(
        [write("docs/faq.md", "# FAQ\n"), finish("Add an FAQ", "Added it.")],
        [write("docs/faq.md", "# FAQ\n\nTried.\n"), finish("Try", "Tried a fix.")],
    )
    project, job_id, pull = start_job(stack)
    branch = f"copydesk/{job_id}"
    github.set_status(REPO, github.branch_sha(REPO, branch), "failure", "docs/build", description="Build broke")
    stack.drain()
    assert len(user_messages(stack, project, job_id)) == 2
    second = github.branch_sha(REPO, branch)
    github.set_status(REPO, second, "failure", "docs/build", description="Build still broke")
    github.check_run(REPO, second, "vale", "failure", summary="Still")
    stack.drain()
    assert len(user_messages(stack, project, job_id)) == 2  # the cap: one automatic round
    asks = [c for c in bot_comments(github, pull["number"]) if "A person needs to look" in c["body"]]
    assert len(asks) == 1 and "`docs/build`" in asks[0]["body"] and second[:12] in asks[0]["body"]


def test_a_persons_commit_and_an_opted_out_repository_start_nothing(gh_stack):
    stack = gh_stack()
    github = stack.github
    stack.script([write("docs/faq.md", "# FAQ\n"), finish("Add an FAQ", "Added it.")])
    project, job_id, pull = start_job(stack)
    branch = f"copydesk/{job_id}"
    theirs = github.push(REPO, {"docs/faq.md": "# FAQ\n\nMine.\n"}, branch=branch, message="A person's fix")
    github.check_run(REPO, theirs, "vale", "failure", summary="Vale found 1 error")
    stack.drain()
    assert len(user_messages(stack, project, job_id)) == 1

    # A repository whose base branch says `ci_fix: false`.
    github.push(REPO, {".copydesk/config.yml": "ci_fix: false\n"})
    stack.script(
        [write("docs/faq.md", "# FAQ\n"), finish("Add an FAQ", "Added it.")],
        [write("docs/other.md", "# Other\n"), finish("Other", "Added another page.")],
    )
    created = stack.api().post(f"/v2/agent/{project.id}/job", json={"prompt": "Another page"}).json()
    stack.drain()
    head = github.branch_sha(REPO, f"copydesk/{created['id']}")
    github.check_run(REPO, head, "vale", "failure", summary="Vale found 1 error")
    stack.drain()
    assert len(user_messages(stack, project, created["id"])) == 1


def test_a_renamed_then_transferred_repository_keeps_its_project_and_jobs(gh_stack):
    stack = gh_stack()
    github = stack.github
    stack.script(
        [write("docs/faq.md", "# FAQ\n"), finish("Add an FAQ", "Added it.")],
        [write("docs/more.md", "# More\n"), finish("More", "Added docs/more.md.")],
        [write("docs/last.md", "# Last\n"), finish("Last", "Added docs/last.md.")],
    )
    project, job_id, pull = start_job(stack)
    number = pull["number"]
    # A project recorded before projects were indexed by repository id is found all the same (and indexed).
    stack.ctx.services.redis.delete("cd:projects:by-repository-id")

    github.rename_repo(REPO, "handbook")
    stack.drain()
    renamed = stack.ctx.services.projects.get(project.id)
    assert renamed.repository == "acme/handbook" and renamed.web_url == f"{github.url}/acme/handbook"
    assert stack.ctx.services.projects.find_by_repository("github", "acme/handbook").id == project.id
    assert stack.ctx.services.projects.find_by_repository("github", REPO) is None
    api = stack.api()
    job = api.get(f"/v2/agent/{project.id}/job/{job_id}").json()
    assert job["source"]["repository"] == renamed.web_url

    # The job goes on under the new name: the comment is taken, the round pushes to the renamed repository.
    github.set_permission("acme/handbook", "alice", "write")
    github.comment("acme/handbook", number, "alice", "@copydesk-test add more")
    stack.drain()
    assert "docs/more.md" in stack.ctx.git.out(
        "ls-tree", "-r", "--name-only", f"copydesk/{job_id}", git_dir=github.repo_path("acme/handbook")
    )
    # Tokens are minted by repository id, which a rename does not change.
    mints = [r.json for r in github.requests if r.path.endswith("/access_tokens") and r.json]
    assert mints and all("repository_ids" in body for body in mints)

    # Transferred to another account where the App is installed on all repositories: the same project again.
    github.add_installation("newco", [], selection="all")
    github.transfer_repo("acme/handbook", "newco")
    stack.drain()
    moved = stack.ctx.services.projects.get(project.id)
    assert (moved.repository, moved.account) == ("newco/handbook", "newco")
    assert moved.host_data["installation_id"] != renamed.host_data["installation_id"]
    assert (
        stack.api("newco").get(f"/v2/agent/{project.id}/job/{job_id}").json()["source"]["repository"] == moved.web_url
    )
    github.set_permission("newco/handbook", "alice", "write")
    github.comment("newco/handbook", number, "alice", "@copydesk-test one last page")
    stack.drain()
    assert "docs/last.md" in stack.ctx.git.out(
        "ls-tree", "-r", "--name-only", f"copydesk/{job_id}", git_dir=github.repo_path("newco/handbook")
    )


def test_a_failing_check_suite_alone_starts_the_round(gh_stack):
    from tests.github_emulator import routes_checks

    stack = gh_stack()
    github = stack.github
    stack.script(
        [write("docs/faq.md", "# FAQ\n"), finish("Add an FAQ", "Added it.")],
        [write("docs/faq.md", "# FAQ\n\nFixed.\n"), finish("Fix", "Fixed the link.")],
    )
    project, job_id, _pull = start_job(stack)
    head = github.branch_sha(REPO, f"copydesk/{job_id}")
    url = github.hooks.url
    github.deliver_to(None)  # the check run's own event is lost...
    github.check_run(
        REPO,
        head,
        "links",
        "failure",
        summary="1 broken link",
        annotations=[("docs/faq.md", 1, "Broken link: ./nowhere.md")],
    )
    github.deliver_to(url)
    run = next(r for r in github.state.check_runs.values() if r.head_sha == head)
    [(_, suite_event)] = [
        e for e in routes_checks.check_events(github.render, run, "github-actions[bot]") if e[0] == "check_suite"
    ]
    github.emit("check_suite", suite_event)  # ...the suite's still says what failed
    stack.drain()
    users = user_messages(stack, project, job_id)
    assert len(users) == 2 and "docs/faq.md:1: Broken link: ./nowhere.md" in users[1]["content"]
