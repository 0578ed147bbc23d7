"""The dashboard's automation pages over HTTP: the list (trigger, next slot, last run, merge rate), create from a
template filling its blank, edit, enable and disable, run now, the run history with each state, the webhook
secret shown once and rotated, delete; members read and only admins manage; CSRF."""

import re

import pytest

from service.automations import manage
from service.automations.events import SourceChange, TriggerEvent
from service.automations.runs import fire
from tests.flow_scripts import FAQ, finish

TEST_SECONDS = 60
SECRET = re.compile(r'value="(cdah_[A-Za-z0-9_-]+)"')


pytestmark = pytest.mark.usefixtures("time_bound")


def path(project, automation_id: str = "") -> str:
    base = f"/dashboard/projects/{project.id}/automations"
    return f"{base}/{automation_id}" if automation_id else base


def form(**fields) -> dict:
    """A create or edit form as the page sends it (checkboxes only when ticked)."""
    sent = {
        "name": "Weekly FAQ",
        "prompt": "Add an FAQ page.",
        "trigger_type": "schedule",
        "repository": "",
        "mode": "per_change",
        "cron": "0 9 * * 1",
        "time_zone": "UTC",
        "max_open_pull_requests": "3",
        "max_runs_per_day": "10",
        "reviewers": "",
        "max_tokens": "",
        "grouping": "on",
        "enabled": "on",
        "request_source_reviews": "on",
    }
    sent.update(fields)
    return {k: v for k, v in sent.items() if v is not None}


def create(session, project, *, allow_redirects: bool = True, **fields):
    return session.form(path(project), form(**fields), page=f"{path(project)}/new", allow_redirects=allow_redirects)


def only_automation(dash, project):
    [automation] = dash.ctx.services.automations.of_project(project.id)
    return automation


def test_create_from_a_template_with_its_blank_filled_and_see_it_listed(dash):
    operator = dash.operator()
    project = dash.projects["local"]
    projects_page = operator.get("/dashboard/accounts/local/projects").text
    assert f'href="{path(project)}"' in projects_page
    assert f'href="{path(project)}"' in operator.get(f"/dashboard/projects/{project.id}/jobs").text
    empty = operator.get(path(project))
    assert empty.status_code == 200 and "No automations yet" in empty.text
    assert "?template=update-docs-from-code-changes" in empty.text and "Start from scratch" in empty.text

    blank = operator.get(f"{path(project)}/new?template=update-docs-from-code-changes")
    assert blank.status_code == 200 and 'name="template" value="update-docs-from-code-changes"' in blank.text
    assert 'value="Update docs from code changes"' in blank.text and "absolute path" in blank.text
    assert '<option value="code_change" selected>' in blank.text
    fields = {
        "template": "update-docs-from-code-changes",
        "name": "Docs from the API",
        "trigger_type": "code_change",
        "cron": "",
        "prompt": "Update the docs for this change.",
    }
    refused = create(operator, project, **fields)
    assert refused.status_code == 400 and 'role="alert"' in refused.text
    assert "needs `trigger.repository`" in refused.text and 'value="Docs from the API"' in refused.text  # kept
    assert dash.ctx.services.automations.of_project(project.id) == []

    made = create(operator, project, **fields, repository="/srv/git/api.git", allow_redirects=False)
    assert made.status_code == 303
    automation = only_automation(dash, project)
    assert made.headers["Location"] == path(project, automation.id)
    assert (
        automation.template == "update-docs-from-code-changes"
        and automation.trigger.repository == "/srv/git/api.git"
        and automation.trigger.cron is None
    )  # a per-change trigger sends no cron
    create(operator, project, template="fix-broken-links", name="Links")
    listing = operator.get(path(project)).text
    row = listing[listing.index(f'<tr id="{automation.id}">') :]
    assert "Docs from the API" in row and "each merged change in /srv/git/api.git" in row and "enabled" in row
    assert "no runs yet" in row and "from the template update-docs-from-code-changes" in row
    assert "schedule: cron 0 9 * * 1 (UTC)" in listing and "next run" in listing and " UTC" in listing

    links_form = operator.get(f"{path(project)}/new?template=fix-broken-links").text
    assert re.search(r'name="docs_check_first" checked', links_form)  # the template checks the site first
    create(operator, project, template="fix-broken-links", name="Links, checked first", docs_check_first="on")
    assert any(a.options.docs_check_first for a in dash.ctx.services.automations.of_project(project.id))

    unknown = operator.get(f"{path(project)}/new?template=write-a-novel")
    assert unknown.status_code == 400 and "must be one of" in unknown.text


def test_a_bad_form_is_refused_with_its_reason_and_nothing_changes(dash):
    operator = dash.operator()
    project = dash.projects["local"]
    for fields, says in (
        ({"cron": "every monday"}, "five fields"),
        ({"time_zone": "Mars/Olympus"}, "time zone"),
        ({"max_runs_per_day": "lots"}, "maxRunsPerDay"),
        ({"name": ""}, "non-empty"),
        ({"reviewers": "not a login!"}, "logins"),
        ({"trigger_type": "code_change", "mode": "batched", "repository": "/srv/a.git", "cron": ""}, "batched"),
    ):
        refused = create(operator, project, **fields)
        assert refused.status_code == 400 and says in refused.text, (fields, refused.text)
    assert dash.ctx.services.automations.of_project(project.id) == []
    create(operator, project)
    automation = only_automation(dash, project)
    bad_edit = operator.form(path(project, automation.id), form(cron="x"), page=path(project, automation.id))
    assert bad_edit.status_code == 400 and "five fields" in bad_edit.text
    assert dash.ctx.services.automations.find(automation.id) == automation


def test_edit_switch_run_now_and_the_run_history_with_states_and_merge_rate(dash):
    operator = dash.operator()
    project = dash.projects["local"]
    create(operator, project)
    automation = only_automation(dash, project)
    edit = operator.get(path(project, automation.id))
    assert edit.status_code == 200 and 'value="Weekly FAQ"' in edit.text and "Run now" in edit.text
    assert "Rotate the webhook secret" not in edit.text  # a schedule trigger has no secret

    saved = operator.form(
        path(project, automation.id),
        form(name="FAQ", max_runs_per_day="4", enabled=None, grouping=None),
        page=path(project, automation.id),
    )
    assert saved.status_code == 200 and "Saved." in saved.text and 'value="FAQ"' in saved.text
    changed = dash.ctx.services.automations.find(automation.id)
    assert changed.name == "FAQ" and changed.enabled is False and changed.options.max_runs_per_day == 4
    assert changed.options.grouping is False and changed.options.request_source_reviews is True
    listing = operator.form(f"{path(project, automation.id)}/enable", {}, page=path(project))
    assert listing.url.endswith(path(project)) and dash.ctx.services.automations.find(automation.id).enabled

    fired = operator.form(
        f"{path(project, automation.id)}/run", {"note": "After the v2 release."}, page=path(project, automation.id)
    )
    [run] = dash.ctx.services.automations.all_runs(automation.id)
    assert fired.url.endswith(f"{path(project, automation.id)}/runs?fired={run.id}")
    assert "queued" in fired.text and f'href="/dashboard/projects/{project.id}/jobs/{run.job_id}"' in fired.text
    assert "After the v2 release." in dash.ctx.services.jobs.conversation(run.job_id)[0].content
    job_page = operator.get(f"/dashboard/projects/{project.id}/jobs/{run.job_id}").text
    assert f'href="{path(project, automation.id)}/runs"' in job_page

    dash.script([FAQ, finish()])
    dash.drain()
    history = operator.get(f"{path(project, automation.id)}/runs").text
    assert "review needed" in history and "/pulls/1" in history and "0 % — 0 of\n  1 pull requests merged" in history
    listing = operator.get(path(project)).text
    assert "review needed" in listing and "0 %" in listing
    pull = dash.ctx.local.merge(project, 1, committer_name="t", committer_email="t@example.com")
    dash.ctx.services.jobs.archive(pull.job_id)
    history = operator.get(f"{path(project, automation.id)}/runs").text
    assert "accepted" in history and "100 % — 1 of" in history

    operator.form(f"{path(project, automation.id)}/disable", {}, page=path(project))
    operator.form(f"{path(project, automation.id)}/run", {}, page=path(project, automation.id))
    history = operator.get(f"{path(project, automation.id)}/runs").text
    skipped = history[history.index("<tbody>") : history.index(f'<tr id="{run.id}">')]
    assert "skipped" in skipped and "the automation is disabled" in skipped

    refused = operator.form(f"{path(project, automation.id)}/delete", {}, page=path(project, automation.id))
    assert refused.status_code == 400 and "Tick the box" in refused.text
    assert dash.ctx.services.automations.find(automation.id) is not None
    deleted = operator.form(
        f"{path(project, automation.id)}/delete", {"confirm": automation.id}, page=path(project, automation.id)
    )
    assert deleted.url.endswith(path(project)) and "No automations yet" in deleted.text
    assert dash.ctx.services.automations.find(automation.id) is None
    assert operator.get(f"{path(project, automation.id)}/runs").status_code == 404


def test_a_webhook_triggers_secret_is_shown_once_and_rotating_makes_a_new_one(dash):
    operator = dash.operator()
    project = dash.projects["local"]
    posted = create(operator, project, trigger_type="webhook", cron="", allow_redirects=False)
    assert posted.status_code == 303 and posted.headers["Location"] == f"{path(project)}/secret"
    shown = operator.get(posted.headers["Location"])
    secret = SECRET.search(shown.text).group(1)
    automation = only_automation(dash, project)
    assert f"/v2/automations/{automation.id}/webhook" in shown.text and "never shows it again" in shown.text
    assert dash.ctx.services.automations.secret_matches(automation, secret)
    assert secret.encode() not in dash.ctx.services.redis.get(f"cd:automation:{automation.id}")
    again = operator.get(f"{path(project)}/secret")
    assert again.url.endswith(path(project)) and "cdah_" not in again.text
    assert "cdah_" not in operator.get(path(project, automation.id)).text

    rotated = operator.form(f"{path(project, automation.id)}/rotate", {}, page=path(project, automation.id))
    second = SECRET.search(rotated.text).group(1)
    assert second != secret and "stopped working" in rotated.text
    current = dash.ctx.services.automations.find(automation.id)
    assert dash.ctx.services.automations.secret_matches(current, second)
    assert not dash.ctx.services.automations.secret_matches(current, secret)


def test_members_read_the_automations_and_only_admins_manage_them(dash):
    project = dash.projects["acme/docs"]
    alice = dash.signed_in("alice")
    assert create(alice, project, trigger_type="webhook", cron="").status_code == 200
    automation = only_automation(dash, project)
    manage.run_now(dash.ctx.services, automation, "a note")
    assert "manage automations" in alice.get("/dashboard/accounts/acme/projects").text

    bob = dash.signed_in("bob")  # a member of acme, not an admin
    listing = bob.get(path(project))
    assert listing.status_code == 200 and automation.name in listing.text
    assert "New automation" not in listing.text and f'href="{path(project, automation.id)}"' not in listing.text
    history = bob.get(f"{path(project, automation.id)}/runs")
    assert history.status_code == 200 and "queued" in history.text and "Edit, run now" not in history.text
    carol = dash.signed_in("carol")  # admin of globex only: acme's project reads as not there
    assert carol.get(path(project)).status_code == 404
    assert carol.get(f"{path(project, automation.id)}/runs").status_code == 404
    for person, status in ((bob, 403), (carol, 404)):
        assert person.get(path(project, automation.id)).status_code == status
        assert person.get(f"{path(project)}/new").status_code == status
        answer = person.form(path(project), form(), page="/dashboard/")
        assert answer.status_code == status
        answer = person.form(path(project, automation.id), form(name="Taken over"), page="/dashboard/")
        assert answer.status_code == status
        for action in ("disable", "run", "rotate", "delete"):
            answer = person.form(
                f"{path(project, automation.id)}/{action}", {"confirm": automation.id}, page="/dashboard/"
            )
            assert answer.status_code == status and "cdah_" not in answer.text, (action, status)
    assert dash.ctx.services.automations.of_project(project.id) == [automation]  # nothing changed
    assert len(dash.ctx.services.automations.all_runs(automation.id)) == 1
    # An automation id under a project the person administers, but not its own: not found.
    operator = dash.operator()
    local = dash.projects["local"]
    assert operator.get(path(local, automation.id)).status_code == 404
    assert (
        operator.form(f"{path(local, automation.id)}/delete", {"confirm": automation.id}, page=path(local)).status_code
        == 404
    )
    assert dash.ctx.services.automations.find(automation.id) == automation


def test_automation_forms_without_the_csrf_token_are_refused(dash):
    operator = dash.operator()
    project = dash.projects["local"]
    refused = operator.post(path(project), data=form())
    assert refused.status_code == 403 and "security token" in refused.text
    assert dash.ctx.services.automations.of_project(project.id) == []
    create(operator, project)
    automation = only_automation(dash, project)
    for action in ("", "/run", "/disable", "/delete"):
        answer = operator.post(
            f"{path(project, automation.id)}{action}",
            data={**form(name="x"), "confirm": automation.id, "csrf_token": "stale"},
        )
        assert answer.status_code == 403, action
    assert dash.ctx.services.automations.find(automation.id) == automation
    assert dash.ctx.services.automations.all_runs(automation.id) == []
    anonymous = type(operator)(dash.url)
    assert anonymous.get(path(project), allow_redirects=False).status_code == 303  # to sign in


def test_the_history_links_the_source_changes_a_run_covers(dash):
    operator = dash.operator()
    project = dash.projects["local"]
    automation, _ = manage.create(
        dash.ctx.services,
        project,
        {"template": "update-docs-from-code-changes", "trigger": {"repository": "/srv/git/api.git"}},
    )
    change = SourceChange(
        kind="pull_request",
        id="42",
        title="Rename --out to --output",
        body="",
        author="dana",
        url="https://example.com/acme/api/pull/42",
        merge_commit="a" * 40,
        diff="",
        diff_truncated=False,
        repository="/srv/git/api.git",
    )
    fire(dash.ctx.services, automation, TriggerEvent(kind="code_change", key="gh:acme/api#pr42", changes=(change,)))
    history = operator.get(f"{path(project, automation.id)}/runs").text
    assert '<a href="https://example.com/acme/api/pull/42">#42</a>' in history
    assert "Rename --out to --output" in history and "by dana" in history and "code change" in history
    assert "no pull requests yet" in history
