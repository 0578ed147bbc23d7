"""`copydesk automation …` through `bot.cli.main` in this process, against a real stack: templates, create from
flags and from a template, show, update, delete, rotate the webhook secret, run now and the run history with its
states and merge rate; bad input gets a clear error (naming the flag) and changes nothing."""

import json

import pytest

from service.automations.events import SourceChange, TriggerEvent
from service.automations.runs import fire
from service.automations.templates import TEMPLATES
from tests.cli_process import run_in_process
from tests.flow_scripts import FAQ, finish


def cli(stack, *args, check=True):
    return run_in_process(stack.env(), "automation", *args, check=check)


def as_json(stack, *args) -> dict:
    return json.loads(cli(stack, *args, "--json").stdout)


def test_templates_create_show_update_rotate_and_delete(stack):
    listed = as_json(stack, "templates")["templates"]
    assert [t["id"] for t in listed] == list(TEMPLATES)
    assert "needs trigger.repository" in cli(stack, "templates").stdout

    code = as_json(
        stack,
        "create",
        stack.project_id,
        "--template",
        "update-docs-from-code-changes",
        "--repository",
        "/srv/git/api.git",
        "--max-runs-per-day",
        "4",
    )
    assert code["template"] == "update-docs-from-code-changes" and code["name"] == "Update docs from code changes"
    assert code["trigger"] == {"type": "code_change", "repository": "/srv/git/api.git", "mode": "per_change"}
    assert code["options"]["maxRunsPerDay"] == 4 and "secret" not in code
    links = as_json(
        stack,
        "create",
        stack.project_id,
        "--template",
        "fix-broken-links",
        "--cron",
        "30 7 * * 2",
        "--time-zone",
        "Europe/Berlin",
        "--name",
        "Links",
    )
    assert links["trigger"] == {"type": "schedule", "cron": "30 7 * * 2", "timeZone": "Europe/Berlin"}

    made = cli(
        stack,
        "create",
        stack.project_id,
        "--trigger",
        "webhook",
        "--name",
        "Release notes",
        "--prompt",
        "Document the release.",
        "--no-grouping",
    ).stdout
    secret = next(word for word in made.split() if word.startswith("cdah_"))
    assert "shown once" in made
    [hook] = [a for a in stack.ctx.services.automations.of_project(stack.project_id) if a.name == "Release notes"]
    assert hook.options.grouping is False and hook.template is None
    assert stack.ctx.services.automations.secret_matches(hook, secret)
    assert secret.encode() not in stack.ctx.services.redis.get(f"cd:automation:{hook.id}")

    listing = cli(stack, "list", stack.project_id).stdout
    assert "each merged change in /srv/git/api.git" in listing and "cron 30 7 * * 2 (Europe/Berlin)" in listing
    assert "next 20" in listing  # the next slot, as an ISO time
    shown = cli(stack, "show", stack.project_id, hook.id).stdout
    assert f"/v2/automations/{hook.id}/webhook" in shown and "Document the release." in shown
    assert secret not in shown and secret not in cli(stack, "list", stack.project_id, "--json").stdout

    changed = as_json(
        stack,
        "update",
        stack.project_id,
        code["id"],
        "--disable",
        "--max-open-pull-requests",
        "2",
        "--prompt",
        "Only the CLI reference pages.",
    )
    assert changed["enabled"] is False and changed["prompt"] == "Only the CLI reference pages."
    assert changed["options"]["maxOpenPullRequests"] == 2 and changed["options"]["maxRunsPerDay"] == 4  # merged
    assert changed["trigger"] == code["trigger"]
    moved = as_json(stack, "update", stack.project_id, code["id"], "--mode", "batched", "--cron", "0 16 * * 5")
    assert moved["trigger"] == {
        "type": "code_change",
        "repository": "/srv/git/api.git",
        "mode": "batched",
        "cron": "0 16 * * 5",
        "timeZone": "UTC",
    }
    back = as_json(stack, "update", stack.project_id, code["id"], "--mode", "per_change")
    assert back["trigger"] == code["trigger"]
    assert "disabled" in cli(stack, "list", stack.project_id).stdout

    rotated = as_json(stack, "rotate-secret", stack.project_id, hook.id)
    assert rotated["secret"].startswith("cdah_") and rotated["secret"] != secret
    again = stack.ctx.services.automations.find(hook.id)
    assert stack.ctx.services.automations.secret_matches(again, rotated["secret"])
    assert not stack.ctx.services.automations.secret_matches(again, secret)

    for automation in (code, links, {"id": hook.id}):
        cli(stack, "delete", stack.project_id, automation["id"])
    assert cli(stack, "list", stack.project_id).stdout.strip() == "No automations."


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["create", "{project}", "--template", "update-docs-from-code-changes"],
            "needs `trigger.repository`: the source repository to watch: a local bare repository's absolute path "
            "(set with --repository)",
        ),
        (["create", "{project}", "--template", "no-such-template"], "`template` must be one of"),
        (["create", "{project}", "--name", "x", "--prompt", "y"], "give --trigger"),
        (
            ["create", "{project}", "--trigger", "schedule", "--name", "x", "--prompt", "y"],
            "needs `trigger.cron` (set with --cron)",
        ),
        (
            [
                "create",
                "{project}",
                "--trigger",
                "schedule",
                "--name",
                "x",
                "--prompt",
                "y",
                "--cron",
                "0 9 * * 1",
                "--time-zone",
                "Mars/Olympus",
            ],
            "(set with --time-zone)",
        ),
        (
            ["create", "{project}", "--template", "fix-broken-links", "--max-runs-per-day", "501"],
            "from 1 to 500 (set with --max-runs-per-day)",
        ),
        (
            ["create", "{project}", "--template", "fix-broken-links", "--prompt-file", "/nonexistent/prompt.md"],
            "cannot read the prompt",
        ),
        (["create", "prj_01JD0000000000000000000000", "--template", "fix-broken-links"], "no project"),
        (["update", "{project}", "{automation}", "--cron", "every day"], "five fields"),
        (["update", "{project}", "{automation}"], "nothing to change"),
        (["update", "{project}", "auto_01JD0000000000000000000000", "--disable"], "no automation"),
        (["rotate-secret", "{project}", "{automation}"], "only a webhook trigger has a secret"),
        (["run", "{project}", "{automation}", "--note", "x" * 2001], "at most 2000 characters (set with --note)"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(stack, args, words):
    made = as_json(stack, "create", stack.project_id, "--template", "fix-broken-links")
    before = stack.ctx.services.automations.of_project(stack.project_id)
    proc = cli(stack, *(a.format(project=stack.project_id, automation=made["id"]) for a in args), check=False)
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr
    assert stack.ctx.services.automations.of_project(stack.project_id) == before
    assert stack.ctx.services.automations.latest_run(made["id"]) is None


def test_run_now_and_the_history_with_states_and_the_merge_rate(stack):
    made = as_json(
        stack,
        "create",
        stack.project_id,
        "--trigger",
        "schedule",
        "--cron",
        "0 9 * * 1",
        "--name",
        "FAQ",
        "--prompt",
        "Add an FAQ page.",
    )
    fired = as_json(stack, "run", stack.project_id, made["id"], "--note", "After the v2 release.")
    run, job = fired["run"], fired["job"]
    assert run["state"] == "queued" and run["trigger"] == "manual" and job["automation"]["id"] == made["id"]
    assert "After the v2 release." in stack.conversation(job["id"])[0]["content"]

    stack.script([FAQ, finish()])
    stack.drain()
    history = as_json(stack, "runs", stack.project_id, made["id"])
    [shown] = history["runs"]
    assert shown["state"] == "review_needed" and shown["prLink"] and shown["jobId"] == job["id"]
    assert history["mergeRate"] == {"accepted": 0, "withPullRequest": 1, "rate": 0.0}
    run_in_process(stack.env(), "pull", "merge", stack.project_id, "1")
    text = cli(stack, "runs", stack.project_id, made["id"]).stdout
    assert run["id"] in text and "accepted" in text and f"job {job['id']}" in text
    assert "merge rate: 1 of 1 pull requests merged (100%)" in text

    cli(stack, "update", stack.project_id, made["id"], "--disable")
    skipped = as_json(stack, "run", stack.project_id, made["id"])["run"]
    assert skipped["state"] == "skipped" and skipped["reason"] == "the automation is disabled"
    text = cli(stack, "runs", stack.project_id, made["id"], "--limit", "1").stdout
    assert "skipped" in text and "(the automation is disabled)" in text and f"--cursor {skipped['id']}" in text
    older = as_json(stack, "runs", stack.project_id, made["id"], "--cursor", skipped["id"])
    assert [r["id"] for r in older["runs"]] == [run["id"]]


def test_the_history_names_the_source_changes_a_run_covers(stack):
    made = as_json(
        stack,
        "create",
        stack.project_id,
        "--template",
        "update-docs-from-code-changes",
        "--repository",
        "/srv/git/api.git",
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
    automation = stack.ctx.services.automations.find(made["id"])
    fire(stack.ctx.services, automation, TriggerEvent(kind="code_change", key="gh:acme/api#pr42", changes=(change,)))
    history = as_json(stack, "runs", stack.project_id, made["id"])
    assert history["runs"][0]["changes"] == [
        {
            "kind": "pull_request",
            "id": "42",
            "title": "Rename --out to --output",
            "url": "https://example.com/acme/api/pull/42",
            "author": "dana",
            "repository": "/srv/git/api.git",
        }
    ]
    text = cli(stack, "runs", stack.project_id, made["id"]).stdout
    assert "code_change" in text and "queued" in text and "covers #42 Rename --out to --output" in text
    assert "merge rate: no pull requests yet" in text
