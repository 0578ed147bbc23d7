"""Automations from templates through the API: the templates listed, a create from one with overrides, the blank it
needs named when it is missing, an unknown template refused; responses checked against the OpenAPI document (the
stack's session does)."""

import pytest

from service.automations.templates import TEMPLATES


def _base(stack) -> str:
    return f"/v2/agent/{stack.project_id}/automations"


def test_the_templates_are_listed_with_what_they_need_on_this_code_host(stack):
    listed = stack.api.get(f"/v2/agent/{stack.project_id}/automation-templates")
    assert listed.status_code == 200, listed.text
    templates = {t["id"]: t for t in listed.json()["templates"]}
    assert set(templates) == set(TEMPLATES)
    code = templates["update-docs-from-code-changes"]
    assert code["needs"] == ["trigger.repository"] and "absolute path" in code["hints"]["trigger.repository"]
    assert code["body"]["trigger"]["type"] == "code_change"
    assert templates["fix-broken-links"]["needs"] == [] and templates["fix-broken-links"]["hints"] == {}
    unknown = stack.api.get("/v2/agent/prj_01JD0000000000000000000000/automation-templates")
    assert unknown.status_code == 404


def test_a_template_with_its_blank_filled_and_overrides_makes_the_automation(stack):
    made = stack.api.post(
        _base(stack),
        json={
            "template": "update-docs-from-code-changes",
            "trigger": {"repository": "/srv/git/api.git"},
            "options": {"maxRunsPerDay": 3},
        },
    )
    assert made.status_code == 201, made.text
    body = made.json()
    template = TEMPLATES["update-docs-from-code-changes"]
    assert body["template"] == "update-docs-from-code-changes" and body["name"] == template.body["name"]
    assert body["prompt"] == template.body["prompt"]
    assert body["trigger"] == {"type": "code_change", "repository": "/srv/git/api.git", "mode": "per_change"}
    assert body["options"]["maxRunsPerDay"] == 3 and body["options"]["grouping"] is True
    assert stack.api.get(f"{_base(stack)}/{body['id']}").json()["template"] == "update-docs-from-code-changes"

    links = stack.api.post(
        _base(stack),
        json={
            "template": "fix-broken-links",
            "name": "Links weekly",
            "trigger": {"cron": "30 7 * * 2", "timeZone": "Europe/Berlin"},
        },
    )
    assert links.status_code == 201, links.text
    assert links.json()["name"] == "Links weekly" and links.json()["trigger"] == {
        "type": "schedule",
        "cron": "30 7 * * 2",
        "timeZone": "Europe/Berlin",
    }
    # Another trigger type replaces the template's trigger whole (its cron does not stay behind).
    hooked = stack.api.post(_base(stack), json={"template": "fix-broken-links", "trigger": {"type": "webhook"}})
    assert hooked.status_code == 201, hooked.text
    assert hooked.json()["trigger"] == {"type": "webhook"} and hooked.json()["secret"].startswith("cdah_")
    assert hooked.json()["template"] == "fix-broken-links"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        (
            {"template": "update-docs-from-code-changes"},
            "trigger.repository",
            "'update-docs-from-code-changes' needs `trigger.repository`",
        ),
        ({"template": "draft-changelog-entry", "trigger": {"repository": " "}}, "trigger.repository", "needs"),
        ({"template": "write-a-novel"}, "template", "must be one of: update-docs-from-code-changes"),
        ({"template": 7}, "template", "must be one of"),
        ({"template": "fix-broken-links", "trigger": {"cron": "every day"}}, "trigger.cron", "five fields"),
        ({"template": "fix-broken-links", "colour": "red"}, "colour", "unknown field"),
    ],
)
def test_a_bad_template_body_is_refused_naming_the_field_and_nothing_is_made(stack, body, field, words):
    refused = stack.api.post(_base(stack), json=body)
    assert refused.status_code == 400, refused.text
    problem = refused.json()
    assert problem["code"] == "invalid_request" and problem["field"] == field and words in problem["detail"]
    assert stack.api.get(_base(stack)).json()["automations"] == []
