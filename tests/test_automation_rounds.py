"""The rounds of an automation's job: which source changes each covers, whom a round's pull request asks for
review and which source pull requests link it, and how the description's timeline shows the changes."""

from service import describe
from service.automations import rounds
from service.automations.events import SourceChange, TriggerEvent
from service.automations.model import parse_spec
from service.automations.runs import fire
from service.codehost.base import SourcePull
from service.models import Role


def _automation(stack, **options):
    services = stack.ctx.services
    project = services.projects.get(stack.project_id)
    spec = parse_spec(
        {
            "name": "Docs from code",
            "prompt": "Update the docs for the merged change.",
            "trigger": {"type": "code_change", "repository": "/srv/git/api.git"},
            "options": options,
        },
        host=project.host,
    )
    return services.automations.create(project.id, host=project.host, account=project.account, spec=spec)[0]


def _event(number: int, author: str = "octocat") -> TriggerEvent:
    change = SourceChange(
        kind="pull_request",
        id=str(number),
        title=f"Add flag {number}",
        body="b",
        author=author,
        url=f"https://github.com/acme/api/pull/{number}",
        merge_commit="a" * 40,
        diff="+x\n",
        diff_truncated=False,
        repository="acme/api",
    )
    return TriggerEvent(kind="code_change", key=f"gh:acme/api#pr{number}", changes=(change,))


def test_each_round_covers_the_changes_of_the_run_that_added_it(stack):
    services, automation = stack.ctx.services, _automation(stack, reviewers=["lead"], commentOnSource=True)
    first = fire(services, automation, _event(1))
    second = fire(services, automation, _event(2, author="erin"))  # grouped: a round on the same job
    assert second.job_id == first.job_id and second.message_id != first.message_id
    job = services.jobs.get(first.job_id)
    person = services.jobs.add_message(job.id, prompt="Also fix the typo", source="github", author="alice")[1]
    ids = [first.message_id, second.message_id, person.id]
    covered = rounds.covered(services, job, ids)
    assert [[c["id"] for c in covered.get(i, [])] for i in ids] == [["1"], ["2"], []]
    # The description shows the automation's own prompt for its rounds (the source's text is data, kept out).
    messages = [services.jobs.message(i) for i in ids]
    shown = rounds.automation_rounds(services, job, messages)
    assert set(shown) == {first.message_id, second.message_id}
    assert shown[second.message_id].request == "Update the docs for the merged change."
    assert "Add flag 2" in services.jobs.message(second.message_id).content

    notice = rounds.notice(services, job, services.jobs.message(second.message_id), "https://h/acme/docs/pull/9")
    assert notice is not None
    assert notice.reviewers == ("erin", "lead") and notice.comment_on == (SourcePull("acme/api", 2),)
    assert "https://h/acme/docs/pull/9" in notice.comment and notice.key == f"docs:{job.id}"
    # A person's round asks nobody and links nothing.
    assert rounds.notice(services, job, person, "https://h/acme/docs/pull/9") is None


def test_options_turn_review_requests_and_links_off(stack):
    services, automation = stack.ctx.services, _automation(stack, requestSourceReviews=False)
    run = fire(services, automation, _event(3))
    job = services.jobs.get(run.job_id)
    [first] = [m for m in services.jobs.conversation(job.id) if m.role is Role.USER]
    assert rounds.notice(services, job, first, "https://h/pull/1") is None
    # A job no automation started covers nothing.
    project = services.projects.get(stack.project_id)
    plain, _ = services.jobs.create(project, prompt="p", model="scripted:demo", ref=project.ref, as_draft=False)
    assert rounds.covered(services, plain, ["msg_x"]) == {}


def test_the_timeline_links_each_change_and_keeps_other_peoples_text_inert():
    hostile = {
        "kind": "pull_request",
        "id": "7",
        "title": "Fix [it](https://evil.example) @everyone `x`",
        "url": "javascript:alert(1)",
        "author": "mallory",
        "repository": "acme/api",
    }
    plain = {
        "kind": "pull_request",
        "id": "8",
        "title": "Add flag",
        "url": "https://github.com/acme/api/pull/8",
        "author": "dev",
        "repository": "acme/api",
    }
    commit = {
        "kind": "commit",
        "id": "0123456789abcdef",
        "title": "Tweak",
        "url": None,
        "author": "",
        "repository": "/srv/git/api.git",
    }
    body = describe.pull_body(
        rounds=[("Update the docs", "Done."), ("Again", "Done again.")],
        files=[],
        docs_check=None,
        job_id="job_1",
        sources=[[hostile, commit], [plain]],
    )
    timeline = [line for line in body.splitlines() if line.startswith("- Round ")]
    assert timeline == [
        "- Round 1: `acme/api#7` `Fix [it](https://evil.example) @everyone 'x'` by `mallory`",
        "- Round 1: `api.git@0123456789ab` `Tweak`",
        "- Round 2: [acme/api#8](https://github.com/acme/api/pull/8) `Add flag` by `dev`",
    ]
    assert "**Round 2.** Covers [acme/api#8](https://github.com/acme/api/pull/8)." in body
    # Without sources (a job no automation started) the description is as before.
    assert "## Source changes" not in describe.pull_body(rounds=[("a", "b")], files=[], docs_check=None, job_id="job_1")
