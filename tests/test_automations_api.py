"""The automations API: manage automations, run one now, its history, the webhook trigger URL and the autopilot
doors; every response checked against the OpenAPI document (the stack's session does)."""

import pytest
import requests

from service.api.openapi_automations import automation_paths, automation_schemas
from service.automations.manage import from_template
from service.automations.model import parse_spec
from service.models import KeyAccess
from tests.flow_scripts import FAQ, finish

CODE_CHANGE = {
    "name": "Docs from code",
    "prompt": "Update the docs for this change.",
    "trigger": {"type": "code_change", "repository": "/srv/git/api.git"},
}
SCHEDULE = {
    "name": "Links",
    "prompt": "Fix broken links.",
    "trigger": {"type": "schedule", "cron": "0 9 * * 1", "timeZone": "Europe/Berlin"},
}
WEBHOOK = {"name": "Release notes", "prompt": "Document the release.", "trigger": {"type": "webhook"}}


def _base(stack) -> str:
    return f"/v2/agent/{stack.project_id}/automations"


def _create(stack, body: dict) -> dict:
    response = stack.api.post(_base(stack), json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_create_list_get_update_and_delete(stack):
    made = _create(stack, CODE_CHANGE)
    assert made["id"].startswith("auto_") and made["enabled"] is True and "secret" not in made
    assert made["trigger"] == {"type": "code_change", "repository": "/srv/git/api.git", "mode": "per_change"}
    assert made["options"]["grouping"] is True and made["options"]["maxOpenPullRequests"] == 3
    listed = stack.api.get(_base(stack)).json()["automations"]
    assert [a["id"] for a in listed] == [made["id"]]
    assert stack.api.get(f"{_base(stack)}/{made['id']}").json() == made

    changed = stack.api.patch(
        f"{_base(stack)}/{made['id']}", json={"name": "Renamed", "options": {"maxRunsPerDay": 2}, "enabled": False}
    )
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert body["name"] == "Renamed" and body["enabled"] is False and body["prompt"] == CODE_CHANGE["prompt"]
    assert body["options"]["maxRunsPerDay"] == 2 and body["options"]["maxOpenPullRequests"] == 3  # merged

    assert stack.api.delete(f"{_base(stack)}/{made['id']}").status_code == 204
    gone = stack.api.get(f"{_base(stack)}/{made['id']}")
    assert gone.status_code == 404 and gone.json()["code"] == "automation_not_found"
    assert stack.api.get(_base(stack)).json()["automations"] == []
    assert list(stack.ctx.services.redis.scan_iter(match=f"cd:automation:{made['id']}*")) == []


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({**CODE_CHANGE, "trigger": {"type": "cron"}}, "trigger.type", "must be one of"),
        ({**CODE_CHANGE, "trigger": {"type": "code_change"}}, "trigger.repository", "needs `trigger.repository`"),
        ({**CODE_CHANGE, "trigger": {**CODE_CHANGE["trigger"], "mode": "batched"}}, "trigger.cron", "batched"),
        ({**CODE_CHANGE, "trigger": {**CODE_CHANGE["trigger"], "cron": "0 9 * * 1"}}, "trigger.cron", "only for"),
        (
            {**CODE_CHANGE, "trigger": {"type": "code_change", "repository": "acme/api"}},
            "trigger.repository",
            "absolute path",
        ),
        ({**SCHEDULE, "trigger": {"type": "schedule", "cron": "every monday"}}, "trigger.cron", "five fields"),
        ({**SCHEDULE, "trigger": {"type": "schedule", "cron": "0 0 9 * * 1"}}, "trigger.cron", "five fields"),
        (
            {**SCHEDULE, "trigger": {"type": "schedule", "cron": "0 9 * * 1", "timeZone": "Mars/Olympus"}},
            "trigger.timeZone",
            "time zone",
        ),
        ({**SCHEDULE, "trigger": {"type": "schedule"}}, "trigger.cron", "needs `trigger.cron`"),
        ({**WEBHOOK, "trigger": {"type": "webhook", "cron": "0 9 * * 1"}}, "trigger.cron", "unknown field"),
        ({**WEBHOOK, "name": ""}, "name", "non-empty"),
        ({**WEBHOOK, "name": "x" * 101}, "name", "longer than 100"),
        ({**WEBHOOK, "prompt": "x" * 10_001}, "prompt", "longer than 10000"),
        ({**WEBHOOK, "options": {"maxRunsPerDay": 0}}, "options.maxRunsPerDay", "from 1 to 500"),
        ({**WEBHOOK, "options": {"maxOpenPullRequests": 21}}, "options.maxOpenPullRequests", "from 1 to 20"),
        ({**WEBHOOK, "options": {"color": "red"}}, "options.color", "unknown field"),
        ({**WEBHOOK, "options": {"maxTokens": -1}}, "options.maxTokens", "whole number"),
        ({**WEBHOOK, "options": {"reviewers": ["not a login!"]}}, "options.reviewers", "logins"),
        ({**WEBHOOK, "enabled": "yes"}, "enabled", "true or false"),
        ({**WEBHOOK, "title": "x"}, "title", "unknown field"),
    ],
)
def test_a_bad_body_is_refused_with_its_field_and_nothing_is_made(stack, body, field, words):
    response = stack.api.post(_base(stack), json=body)
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "invalid_request" and problem["field"] == field and words in problem["detail"]
    assert stack.api.get(_base(stack)).json()["automations"] == []


def test_a_bad_patch_changes_nothing(stack):
    made = _create(stack, SCHEDULE)
    refused = stack.api.patch(f"{_base(stack)}/{made['id']}", json={"trigger": {"type": "schedule", "cron": "x"}})
    assert refused.status_code == 400 and refused.json()["field"] == "trigger.cron"
    assert stack.api.get(f"{_base(stack)}/{made['id']}").json() == made


def test_the_projects_automations_are_capped(stack_factory):
    stack = stack_factory(max_automations=2)
    _create(stack, WEBHOOK)
    _create(stack, SCHEDULE)
    refused = stack.api.post(_base(stack), json=CODE_CHANGE)
    assert refused.status_code == 409 and refused.json()["code"] == "automation_limit_reached"
    assert "COPYDESK_MAX_AUTOMATIONS" in refused.json()["detail"]
    assert len(stack.api.get(_base(stack)).json()["automations"]) == 2


def test_a_read_only_key_reads_but_every_write_is_forbidden(stack):
    made = _create(stack, WEBHOOK)
    _key, plaintext = stack.ctx.services.keys.create(account="local", access=KeyAccess.READ_ONLY)
    reader = requests.Session()
    reader.headers["Authorization"] = f"Bearer {plaintext}"
    one = f"{stack.url}{_base(stack)}/{made['id']}"
    assert reader.get(f"{stack.url}{_base(stack)}", timeout=10).status_code == 200
    assert reader.get(one, timeout=10).status_code == 200
    assert reader.get(f"{one}/runs", timeout=10).status_code == 200
    for method, url, body in [
        ("POST", f"{stack.url}{_base(stack)}", SCHEDULE),
        ("PATCH", one, {"name": "n"}),
        ("DELETE", one, None),
        ("POST", f"{one}/run", None),
        ("POST", f"{one}/rotate-secret", None),
        ("POST", f"{stack.url}/v2/agent/{stack.project_id}/autopilot", {"prompt": "x"}),
        ("POST", f"{stack.url}/v2/autopilot/{stack.project_id}/webhook", {"prompt": "x"}),
    ]:
        response = reader.request(method, url, json=body, timeout=10)
        assert response.status_code == 403 and response.json()["code"] == "forbidden", (method, url)
    assert stack.api.get(one).json()["name"] == WEBHOOK["name"]
    assert stack.ctx.services.jobs.page(stack.project_id, status=None, limit=5, cursor=None)[0] == []


def test_run_now_starts_a_job_that_carries_the_automation_and_the_history_follows_it(stack):
    made = _create(stack, SCHEDULE)
    fired = stack.api.post(f"{_base(stack)}/{made['id']}/run", json={"note": "After the v2 release."})
    assert fired.status_code == 202, fired.text
    run, job = fired.json()["run"], fired.json()["job"]
    assert run["state"] == "queued" and run["trigger"] == "manual" and run["jobId"] == job["id"]
    assert job["automation"] == {"id": made["id"], "runId": run["id"], "trigger": "manual"}
    prompt = stack.conversation(job["id"])[0]["content"]
    assert prompt.startswith(SCHEDULE["prompt"]) and "After the v2 release." in prompt
    assert "may not be the automation's owner" in prompt

    stack.script([FAQ, finish()])
    stack.drain()
    history = stack.api.get(f"{_base(stack)}/{made['id']}/runs").json()
    assert [r["id"] for r in history["runs"]] == [run["id"]]
    assert history["runs"][0]["state"] == "review_needed" and history["runs"][0]["prLink"]
    assert history["mergeRate"] == {"accepted": 0, "withPullRequest": 1, "rate": 0.0}
    # The job's events carry it too.
    events = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}/events", params={"after": "0"}).json()
    assert events["events"] and all(e["data"]["automation"]["id"] == made["id"] for e in events["events"])


def test_run_now_with_one_idempotency_key_is_one_run(stack):
    made = _create(stack, SCHEDULE)
    url = f"{_base(stack)}/{made['id']}/run"
    first = stack.api.post(url, headers={"Idempotency-Key": "deploy-42"}).json()
    again = stack.api.post(url, headers={"Idempotency-Key": "deploy-42"}).json()
    assert first["run"]["id"] == again["run"]["id"] and first["job"]["id"] == again["job"]["id"]
    assert len(stack.api.get(f"{url}s").json()["runs"]) == 1


def test_the_webhook_trigger_url_takes_its_secret_only_and_one_run_per_delivery(stack):
    made = _create(stack, WEBHOOK)
    secret, url = made["secret"], made["webhookUrl"]
    assert secret.startswith("cdah_") and url == f"{stack.url}/v2/automations/{made['id']}/webhook"
    assert "secret" not in stack.api.get(f"{_base(stack)}/{made['id']}").json()
    stored = stack.ctx.services.redis.get(f"cd:automation:{made['id']}")
    assert secret.encode() not in stored

    for header in (None, "Bearer cdah_wrong", f"Basic {secret}", f"Bearer {stack.key}"):
        refused = requests.post(url, data=b"{}", headers={"Authorization": header} if header else {}, timeout=10)
        assert refused.status_code == 401 and refused.json()["code"] == "unauthorized", header
    unknown = requests.post(
        f"{stack.url}/v2/automations/auto_nope/webhook", headers={"Authorization": f"Bearer {secret}"}, timeout=10
    )
    assert unknown.status_code == 401

    hook = {"Authorization": f"Bearer {secret}", "Idempotency-Key": "delivery-1"}
    fired = requests.post(url, data=b'{"release": "v2.0", "notes": "New --dry-run flag"}', headers=hook, timeout=10)
    assert fired.status_code == 202, fired.text
    stack.api._validator.validate("POST", f"/v2/automations/{made['id']}/webhook", 202, fired.json(), fired.headers)
    run, job = fired.json()["run"], fired.json()["job"]
    assert run["trigger"] == "webhook" and job["automation"]["trigger"] == "webhook"
    assert "New --dry-run flag" in stack.conversation(job["id"])[0]["content"]
    repeated = requests.post(url, data=b"{}", headers=hook, timeout=10).json()
    assert repeated["run"]["id"] == run["id"]
    assert len(stack.api.get(f"{_base(stack)}/{made['id']}/runs").json()["runs"]) == 1

    rotated = stack.api.post(f"{_base(stack)}/{made['id']}/rotate-secret").json()
    assert rotated["secret"] != secret
    assert requests.post(url, headers={"Authorization": f"Bearer {secret}"}, timeout=10).status_code == 401
    assert requests.post(url, headers={"Authorization": f"Bearer {rotated['secret']}"}, timeout=10).status_code == 202

    too_big = requests.post(
        url,
        data=b"x" * (stack.settings.max_body_bytes + 1),
        headers={"Authorization": f"Bearer {rotated['secret']}"},
        timeout=10,
    )
    assert too_big.status_code == 413


def test_only_a_webhook_trigger_has_a_secret(stack):
    made = _create(stack, SCHEDULE)
    refused = stack.api.post(f"{_base(stack)}/{made['id']}/rotate-secret")
    assert refused.status_code == 400 and "only a webhook trigger" in refused.json()["detail"]
    became = stack.api.patch(f"{_base(stack)}/{made['id']}", json={"trigger": {"type": "webhook"}}).json()
    assert became["secret"].startswith("cdah_") and became["webhookUrl"].endswith("/webhook")


@pytest.mark.parametrize("path", ["/v2/agent/{project}/autopilot", "/v2/autopilot/{project}/webhook"])
def test_the_autopilot_doors_start_a_job_with_a_write_key(stack, path):
    url = path.format(project=stack.project_id)
    started = stack.api.post(url, json={"prompt": "Document the new --dry-run flag."})
    assert started.status_code == 202, started.text
    job = started.json()
    assert job["status"] == "active" and "automation" not in job
    assert stack.conversation(job["id"])[0]["content"] == "Document the new --dry-run flag."
    assert started.headers["Location"] == f"/v2/agent/{stack.project_id}/job/{job['id']}"

    bad = requests.post(stack.url + url, json={"prompt": "x"}, headers={"Authorization": "Bearer cdk_nope"}, timeout=10)
    assert bad.status_code == 401 and bad.json()["code"] == "unauthorized"
    refused = stack.api.post(url, json={"prompt": ""})
    assert refused.status_code == 400 and refused.json()["field"] == "prompt"
    extra = stack.api.post(url, json={"prompt": "x", "model": "y"})
    assert extra.status_code == 400


def test_every_automation_example_is_a_body_the_api_takes():
    examples = automation_schemas()["CreateAutomationRequest"]["examples"]
    whole = [e for e in examples if "template" not in e]
    assert {e["trigger"]["type"] for e in whole} == {"code_change", "schedule", "webhook"}
    for example in examples:
        parse_spec(from_template(example, host="github")[0], host="github")
    assert "/v2/automations/{automationId}/webhook" in automation_paths()
