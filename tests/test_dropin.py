"""Drop-in for clients written to Mintlify's published description of the v2 agent API.

`tests/data/mintlify/admin-openapi.json` is `admin-openapi.json` from the public mintlify/docs repository at
commit 3bbce7aa1abf66b19671bc398b9752d608fd0826 (older copies describe only v1), copied unchanged.
"""

from pathlib import Path

import hypothesis
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

MINTLIFY = Path(__file__).parent / "data" / "mintlify" / "admin-openapi.json"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def test_error_bodies_are_json_unless_problem_json_is_asked_for(stack):
    url = f"{stack.url}/v2/agent/{stack.project_id}/job/job_01JD0000000000000000000000"
    auth = {"Authorization": f"Bearer {stack.key}"}
    plain = requests.get(url, headers=auth, timeout=10)
    assert plain.status_code == 404 and plain.headers["Content-Type"] == "application/json"
    assert plain.json()["error"] and plain.json()["code"] == "job_not_found"
    for accept in (
        "application/problem+json",
        "application/problem+json, application/json;q=0.5",
        "application/json;q=0.5, application/problem+json",
    ):
        asked = requests.get(url, headers=auth | {"Accept": accept}, timeout=10)
        assert asked.headers["Content-Type"] == "application/problem+json", accept
        assert asked.json() == plain.json()
    for accept in ("*/*", "application/*", "application/json", "application/json, application/problem+json;q=0.1"):
        assert (
            requests.get(url, headers=auth | {"Accept": accept}, timeout=10).headers["Content-Type"]
            == "application/json"
        ), accept


def test_a_json_body_without_content_type_is_accepted_and_an_explicit_other_type_is_415(stack):
    url = f"{stack.url}/v2/agent/{stack.project_id}/job"
    auth = {"Authorization": f"Bearer {stack.key}"}
    request = requests.Request("POST", url, headers=auth, data=b'{"prompt": "Add an FAQ"}').prepare()
    request.headers.pop("Content-Type", None)
    with requests.Session() as session:
        created = session.send(request, timeout=10)
    assert created.status_code == 201, created.text
    refused = requests.post(url, headers=auth | {"Content-Type": "text/plain"}, data='{"prompt": "x"}', timeout=10)
    assert refused.status_code == 415 and refused.json()["code"] == "unsupported_media_type"


@pytest.fixture(scope="module")
def mintlify_schema():
    # Copydesk offers the v2 API; the description's v1 operations are another, older API.
    return schemathesis.openapi.from_path(MINTLIFY).include(path_regex="^/v2/")


def test_mintlifys_description_finds_no_failure(stack_factory, mintlify_schema):
    stack = stack_factory(rate_limit_per_hour=100_000)
    job = stack.create().json()
    auth = {"Authorization": f"Bearer {stack.key}"}
    operations = [result.ok() for result in mintlify_schema.get_all_operations()]
    assert {(op.method.upper(), op.path) for op in operations} == {
        ("POST", "/v2/agent/{projectId}/job"),
        ("GET", "/v2/agent/{projectId}/job/{id}"),
        ("POST", "/v2/agent/{projectId}/job/{id}/message"),
    }
    with requests.Session() as session:
        for operation in operations:
            # Half the cases name the real project and job, the others whatever the generator makes up.
            real = {"projectId": stack.project_id, "id": job["id"]}
            known = {name: real[name] for name in ("projectId", "id") if f"{{{name}}}" in operation.path}
            strategy = st.one_of(operation.as_strategy(), operation.as_strategy(path_parameters=known))

            @hypothesis.settings(
                max_examples=40,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @hypothesis.given(case=strategy)
            def check(case):
                response = case.call(base_url=stack.url, session=session, headers=auth, timeout=10)
                case.validate_response(response, checks=CHECKS)

            check()
