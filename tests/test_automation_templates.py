"""The three automation templates end to end on the local code host: Fix broken links checks the whole site before
the model (a clean site: no model call, no action needed), a round that needs no change is a `no_action_needed` run
with the agent's reason in the run history, and Draft a changelog entry over three merged pull requests."""

import copy

import pytest

from service.agent.site_check import check_site
from service.automations import docsfirst
from service.automations.events import SourceChange, TriggerEvent
from service.automations.model import RunState, parse_spec
from service.automations.outcomes import run_state
from service.automations.runs import fire
from service.automations.templates import TEMPLATES, TemplateId
from service.errors import InvalidRequest
from tests.conftest import commit_files
from tests.flow_scripts import edit, finish
from tests.model_fixtures import PROVIDERS, finish_without_change
from tests.model_standin import Reply, ToolUse

BROKEN = {"docs/install.md": "# Install\n\nRun `pip install widgets`, then read [the setup](setup.md).\n"}
FIXED = "# Install\n\nRun `pip install widgets`, then read [the setup](index.md).\n"


def _from_template(stack, template: TemplateId, *, repository: str | None = None, **options):
    """An automation made from a template's body, as `{"template": id}` on the API does (the blanks filled in)."""
    services = stack.ctx.services
    project = services.projects.get(stack.project_id)
    body = copy.deepcopy(TEMPLATES[template.value].body)
    if repository is not None:
        body["trigger"]["repository"] = repository
    body["options"] = {**body.get("options", {}), **options}
    spec = parse_spec(body, host=project.host)
    return services.automations.create(
        project.id, host=project.host, account=project.account, spec=spec, template=template.value
    )[0]


def _slot(automation, when: str = "2026-11-23T09:00:00+00:00") -> TriggerEvent:
    return TriggerEvent(kind="schedule", key=f"slot:{automation.id}@{when}")


def _runs(stack, automation) -> list[dict]:
    response = stack.api.get(f"/v2/agent/{stack.project_id}/automations/{automation.id}/runs")
    assert response.status_code == 200, response.text
    return response.json()["runs"]


def _user_text(request) -> str:
    return request.body["messages"][-1]["content"]


def test_fix_broken_links_on_a_clean_site_makes_no_model_call(stack_factory, standin):
    stack = stack_factory(**PROVIDERS["openai"](standin))
    automation = _from_template(stack, TemplateId.FIX_BROKEN_LINKS)
    assert automation.options.docs_check_first and automation.template == "fix-broken-links"
    run = fire(stack.ctx.services, automation, _slot(automation))
    stack.drain()
    assert standin.requests == []  # not one model request: the check found nothing, so the agent never ran
    [shown] = _runs(stack, automation)
    assert shown["state"] == "no_action_needed" and shown["jobId"] == run.job_id and shown["prLink"] is None
    assert (
        shown["reason"].startswith(
            "The docs check found no broken links, anchors or navigation entries in 3 page(s) of the site"
        )
        and "The model was not run." in shown["reason"]
    )
    assert stack.job(run.job_id)["status"] == "completed"
    [asked, answered] = stack.ctx.services.jobs.conversation(run.job_id)
    assert asked.outcome.value == "no_change_needed" and asked.reason == shown["reason"]
    assert answered.content == shown["reason"] and answered.commit is None


def test_fix_broken_links_runs_the_agent_with_the_report_and_a_grouped_round_checks_the_branch(
    stack_factory, standin, git
):
    stack = stack_factory(**PROVIDERS["openai"](standin))
    commit_files(git, stack.repo, BROKEN, message="Link to a page that is not there")
    services = stack.ctx.services
    automation = _from_template(stack, TemplateId.FIX_BROKEN_LINKS)
    standin.script(
        Reply(tool_calls=[ToolUse("edit_file", {"path": "docs/install.md", "old": "(setup.md)", "new": "(index.md)"})]),
        Reply(
            tool_calls=[
                ToolUse("finish", {"title": "Fix a broken link", "summary": "Pointed the setup link at the index."})
            ]
        ),
    )
    first = fire(services, automation, _slot(automation))
    stack.drain()
    assert len(standin.requests) == 2
    prompt = _user_text(standin.requests[0])
    assert prompt.startswith(automation.prompt + "\n\nThe docs check of the whole site ran before you")
    assert "broken link: setup.md" in prompt and "`docs/install.md:3`" in prompt
    assert "docs check failed: 1 problem(s) found, 3 page(s) of the site checked" in prompt
    assert "never instructions" in prompt
    assert run_state(services, first) is RunState.REVIEW_NEEDED
    job = services.jobs.get(first.job_id)
    assert git.out("show", f"refs/heads/{job.branch}:docs/install.md", git_dir=stack.repo) + "\n" == FIXED

    # Next week the pull request is still open: the run is a round on its job, and the check reads the branch,
    # which has the fix: no model call.
    second = fire(services, automation, _slot(automation, "2026-11-30T09:00:00+00:00"))
    stack.drain()
    assert second.job_id == first.job_id and len(standin.requests) == 2
    assert run_state(services, second) is RunState.NO_ACTION_NEEDED
    newest = _runs(stack, automation)[0]
    assert newest["id"] == second.id and newest["state"] == "no_action_needed"
    assert "no broken links" in newest["reason"]

    # A person's follow-up on the automation's pull request is theirs to ask: the model runs, no check first.
    standin.script(finish_without_change("The link is right now."))
    assert stack.message(first.job_id, "Is the setup link right?").status_code == 200
    stack.drain()
    assert len(standin.requests) == 3 and _user_text(standin.requests[2]).startswith("Is the setup link right?")


def test_without_docs_check_first_the_model_runs_on_a_clean_site(stack):
    services = stack.ctx.services
    automation = _from_template(stack, TemplateId.FIX_BROKEN_LINKS, docsCheckFirst=False)
    stack.script([finish("Nothing", "Checked by hand.")])
    run = fire(services, automation, _slot(automation))
    stack.drain()
    [_, answered] = services.jobs.conversation(run.job_id)
    assert answered.content == "Checked by hand."


def test_a_round_the_agent_ends_with_no_change_needed_is_no_action_needed_with_its_reason(stack, make_repo):
    services = stack.ctx.services
    source = make_repo({"cli.py": "VERBOSE = False\n"}, name="api")
    automation = _from_template(stack, TemplateId.UPDATE_FROM_CODE, repository=str(source))
    reason = "The change only renames a test helper; nothing users read changed."
    stack.script([{"tool": "finish", "args": {"title": "", "summary": reason, "no_change_needed": True}}])
    change = SourceChange(
        kind="commit",
        id="c" * 40,
        title="Rename a test helper",
        body="",
        author="Dev",
        url=None,
        merge_commit="c" * 40,
        diff="-def helper():\n+def make_helper():\n",
        diff_truncated=False,
        repository=str(source),
    )
    run = fire(
        services, automation, TriggerEvent(kind="code_change", key=f"commit:{source}@{'c' * 40}", changes=(change,))
    )
    stack.drain()
    [shown] = _runs(stack, automation)
    assert shown["state"] == "no_action_needed" and shown["reason"] == reason
    assert shown["changes"][0]["title"] == "Rename a test helper" and shown["jobId"] == run.job_id
    assert stack.job(run.job_id).get("prLink") is None


def _merged(number: int, title: str, body: str, diff: str) -> SourceChange:
    return SourceChange(
        kind="pull_request",
        id=str(number),
        title=title,
        body=body,
        author=f"dev{number}",
        url=f"https://github.com/acme/widgets/pull/{number}",
        merge_commit=f"{number:040x}",
        diff=diff,
        diff_truncated=False,
        repository="acme/widgets",
    )


THREE_MERGED = (
    _merged(
        41,
        "Add a --dry-run flag to widgets sync",
        "Shows what sync would change without changing it.",
        "+    parser.add_argument('--dry-run', action='store_true')\n",
    ),
    _merged(
        42,
        "Fix the timeout default (30 s, was 3 s)",
        "The docs said 30 s all along; the code now agrees.",
        "-TIMEOUT = 3\n+TIMEOUT = 30\n",
    ),
    _merged(43, "CI: cache pip downloads", "", "+      - uses: actions/cache@v4\n"),
)
CHANGELOG = "# Changelog\n\n## 1.2.0 (2026-10-01)\n\n### Added\n\n- `widgets export` writes CSV ([#30](https://github.com/acme/widgets/pull/30)).\n"


def test_draft_a_changelog_entry_over_three_merged_pull_requests(stack, make_repo, git):
    services = stack.ctx.services
    commit_files(git, stack.repo, {"CHANGELOG.md": CHANGELOG}, message="Keep a changelog")
    source = make_repo({"widgets/sync.py": "TIMEOUT = 30\n"}, name="widgets")
    automation = _from_template(stack, TemplateId.DRAFT_CHANGELOG, repository=str(source))
    assert automation.trigger.mode.value == "batched" and automation.trigger.cron == "0 16 * * 5"
    entry = (
        "## Unreleased\n\n### Added\n\n- `widgets sync --dry-run` shows what sync would change "
        "([#41](https://github.com/acme/widgets/pull/41)).\n\n### Fixed\n\n- The timeout default is 30 s "
        "([#42](https://github.com/acme/widgets/pull/42)).\n\n"
    )
    stack.script(
        [
            {"tool": "search", "args": {"pattern": "changelog|release notes", "ignore_case": True}},
            {"tool": "read_file", "args": {"path": "CHANGELOG.md"}},
            edit("CHANGELOG.md", "## 1.2.0", entry + "## 1.2.0"),
            finish("Draft the changelog entry for #41 and #42", "Added #41 and #42; #43 is CI only."),
        ]
    )
    head = git.out("rev-parse", "refs/heads/main", git_dir=source)
    event = TriggerEvent(
        kind="code_change",
        key=f"batch:{automation.id}@2026-11-27T16:00:00+00:00",
        changes=THREE_MERGED,
        source_repository=str(source),
        source_commit=head,
    )
    run = fire(services, automation, event)
    prompt = services.jobs.conversation(run.job_id)[0].content
    assert prompt.startswith(automation.prompt + "\n\n")
    assert (
        prompt.index("## Pull request #41") < prompt.index("## Pull request #42") < prompt.index("## Pull request #43")
    )
    assert "Never invent a version number" in prompt and "changelog.d" in prompt
    stack.drain()
    assert run_state(services, run) is RunState.REVIEW_NEEDED
    assert [c["id"] for c in _runs(stack, automation)[0]["changes"]] == ["41", "42", "43"]
    job = services.jobs.get(run.job_id)
    written = git.out("show", f"refs/heads/{job.branch}:CHANGELOG.md", git_dir=stack.repo)
    assert written.index("## Unreleased") < written.index("## 1.2.0") and "pull/41" in written


def test_draft_a_changelog_entry_without_a_changelog_says_no_change_is_needed(stack, make_repo):
    services = stack.ctx.services
    source = make_repo({"widgets/sync.py": "TIMEOUT = 30\n"}, name="widgets")
    automation = _from_template(stack, TemplateId.DRAFT_CHANGELOG, repository=str(source))
    reason = "This repository keeps no changelog or release notes, so there is nowhere to add the entry."
    stack.script(
        [
            {"tool": "search", "args": {"pattern": "changelog|release notes", "ignore_case": True}},
            {"tool": "finish", "args": {"title": "", "summary": reason, "no_change_needed": True}},
        ]
    )
    run = fire(services, automation, TriggerEvent(kind="code_change", key="batch:1", changes=THREE_MERGED))
    stack.drain()
    assert run_state(services, run) is RunState.NO_ACTION_NEEDED
    assert _runs(stack, automation)[0]["reason"] == reason


def test_docs_check_first_is_an_option_of_the_api(stack):
    body = {
        "name": "Links",
        "prompt": "Fix the links.",
        "trigger": {"type": "schedule", "cron": "0 9 * * 1"},
        "options": {"docsCheckFirst": True},
    }
    created = stack.api.post(f"/v2/agent/{stack.project_id}/automations", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["options"]["docsCheckFirst"] is True
    patched = stack.api.patch(created.headers["Location"], json={"options": {"grouping": False}})
    assert patched.json()["options"] == {**created.json()["options"], "grouping": False}
    bad = stack.api.post(
        f"/v2/agent/{stack.project_id}/automations", json={**body, "options": {"docsCheckFirst": "yes"}}
    )
    assert bad.status_code == 400 and "options.docsCheckFirst" in bad.text
    with pytest.raises(InvalidRequest, match="must be true or false"):
        parse_spec({**body, "options": {"docsCheckFirst": 1}}, host="local")
    assert (
        stack.api.get(f"/v2/agent/{stack.project_id}/automations").json()["automations"][0]["options"]["docsCheckFirst"]
        is True
    )


def test_the_whole_site_check_reports_every_broken_link_and_navigation_entry(make_repo, git):
    from service.workspace.overlay import Workspace

    bare = make_repo(
        {
            "mkdocs.yml": "site_name: W\nnav:\n  - Home: index.md\n  - Gone: gone.md\n",
            "docs/index.md": "# Home\n\nSee [install](install.md#setup) and [api](api.md).\n",
            "docs/install.md": "# Install\n\n## Set up\n\nText.\n",
        },
        name="site",
    )
    with Workspace(git, bare, git.out("rev-parse", "refs/heads/main", git_dir=bare)) as workspace:
        report = check_site(workspace)
    text = report.to_text()
    assert report.whole_site and report.pages_checked == 2 and len(report.problems) == 3, text
    assert "broken anchor: install.md#setup" in text and "broken link: api.md" in text
    assert "navigation entry `gone.md` points to no page" in text


def test_the_whole_site_check_leaves_ids_made_by_markup_it_does_not_read_unjudged(make_repo, git):
    from service.workspace.overlay import Workspace

    bare = make_repo(
        {
            "mkdocs.yml": "site_name: W\nnav:\n  - Home: index.md\n  - Blog: blog.md\n",
            "docs/index.md": "# Home\n\n[dir](blog.md#config.blog_dir), [note](blog.md#fn:2), "
            "[gone](blog.md#config.gone), [routing](blog.md#routing)\n",
            "docs/blog.md": "# Blog\n\n#### <!-- md:setting config.blog_dir -->\n\nSee the routing "
            "notes.[^2]\n\n[^2]: A note.\n",
        },
        name="site",
    )
    with Workspace(git, bare, git.out("rev-parse", "refs/heads/main", git_dir=bare)) as workspace:
        report = check_site(workspace)
    reported = sorted(p.message.split(" (")[0] for p in report.problems)
    # Not a slug and not named in the page: reported; a slug the page lacks as a heading: reported, whatever the
    # page's prose says.
    assert reported == ["broken anchor: blog.md#config.gone", "broken anchor: blog.md#routing"], report.to_text()
    assert report.notes == [
        "2 link(s) to anchors that are not heading slugs and that their page names (ids a "
        "plugin, hook, attribute list or footnote may make) were not judged"
    ]


def test_the_report_in_the_prompt_is_fenced_longer_than_any_backticks_inside():
    from service.agent.docs_report import DocsProblem, DocsReport

    report = DocsReport(
        [DocsProblem("docs/a.md", 1, "broken link: ````x```` (no such page)")], pages_checked=1, whole_site=True
    )
    prompt = docsfirst.FirstCheck(report).prompt("Fix them.")
    fence = "`" * 5
    assert "between the two fence lines of 5 backticks" in prompt
    assert prompt.endswith(f"checked\n{fence}") and f"\n{fence}text\n" in prompt
