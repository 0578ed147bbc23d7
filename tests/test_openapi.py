"""The OpenAPI document: valid OpenAPI 3.1, in step with the app's routes, and true to real responses."""

import re

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from bot.app import create_app
from service.api.openapi import JOB_ID_PATTERN, openapi_document
from service.api.problems import PROBLEMS
from service.models import Job, JobStatus, Message, MessageStatus, Role
from service.settings import Settings
from tests.conftest import free_port
from tests.openapi_check import ResponseValidator

MODELS = ("scripted:demo", "openai:gpt-4.1")
JOB_ID = "job_01JR8Z6Q3V4W5X6Y7Z8A9B0C1D"
PROJECT_ID = "prj_01JR8Z6Q3V4W5X6Y7Z8A9B0C1E"
STAMP = "2025-01-01T12:00:00.000Z"
REQUEST_ID = {"X-Request-Id": "req_test"}


@pytest.fixture
def document():
    return openapi_document("https://copydesk.example.com", MODELS)


@pytest.fixture
def validator(document):
    return ResponseValidator(document)


def make_settings(redis_url: str, tmp_path, **changes) -> Settings:
    return Settings(redis_url=redis_url, data_dir=tmp_path / "data", models=MODELS, **changes)


def job_record(status: str = "active", **changes) -> dict:
    job = Job(
        id=JOB_ID,
        project_id=PROJECT_ID,
        account="local",
        status=status,
        repository_url="https://github.com/acme/docs",
        ref="main",
        model=MODELS[0],
        created_at=STAMP,
        updated_at=STAMP,
        **changes,
    )
    return job.to_api()


# -- the document itself -----------------------------------------------------------------------


def test_document_is_valid_openapi_3_1(document):
    assert document["openapi"] == "3.1.0"
    validate(document, cls=OpenAPIV31SpecValidator)
    assert document["servers"] == [{"url": "https://copydesk.example.com"}]


def test_bearer_auth_is_global_and_lifted_only_for_public_endpoints(document):
    scheme = document["components"]["securitySchemes"]["bearerAuth"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer" and "cdk_" in scheme["description"]
    assert document["security"] == [{"bearerAuth": []}]
    public = {
        path
        for path, item in document["paths"].items()
        for operation in item.values()
        if isinstance(operation, dict) and operation.get("security") == []
    }
    assert public == {"/v2/openapi.json", "/healthz", "/readyz"}


def test_create_body_allows_exactly_the_configured_models(document):
    body = document["components"]["schemas"]["CreateJobRequest"]
    assert body["properties"]["model"]["enum"] == list(MODELS)
    assert body["required"] == ["prompt"] and body["additionalProperties"] is False


def test_job_schema_lists_every_field_of_the_record(document):
    schema = document["components"]["schemas"]["Job"]
    assert set(schema["required"]) == set(job_record())
    assert set(schema["properties"]) == set(job_record()) | {"automation"}  # only on an automation's job
    assert schema["additionalProperties"] is False
    assert schema["properties"]["id"]["pattern"] == JOB_ID_PATTERN


def test_error_responses_carry_codes_with_their_own_status(document):
    for name, response in document["components"]["responses"].items():
        schema = response["content"]["application/problem+json"]["schema"]["allOf"][1]["properties"]
        for code in schema["code"]["enum"]:
            assert PROBLEMS[code][0] == schema["status"]["const"], (name, code)


def test_operation_error_statuses_match_their_responses(document):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            for status, response in operation["responses"].items():
                if "$ref" in response:
                    name = response["$ref"].rsplit("/", 1)[1]
                    problem = document["components"]["responses"][name]["content"]["application/problem+json"]
                    assert str(problem["schema"]["allOf"][1]["properties"]["status"]["const"]) == status, (
                        method,
                        path,
                        status,
                    )


def test_examples_match_their_schemas(validator, document):
    for name, schema in document["components"]["schemas"].items():
        for example in schema.get("examples", []):
            validator.validate_schema(name, example)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"prompt": ""},
        {"prompt": "x" * 20_001},
        {"prompt": 3},
        {"prompt": "x", "model": "openai:gpt-5-unlisted"},
        {"prompt": "x", "asDraft": "yes"},
        {"prompt": "x", "title": "unknown field"},
    ],
)
def test_create_body_schema_refuses_what_the_api_refuses(validator, body):
    with pytest.raises(AssertionError):
        validator.validate_schema("CreateJobRequest", body)


def test_create_and_message_body_schemas(validator):
    validator.validate_schema(
        "CreateJobRequest", {"prompt": "x" * 20_000, "model": MODELS[1], "ref": "release/2", "asDraft": True}
    )
    validator.validate_schema("MessageRequest", {"prompt": "Also fix the typo."})
    with pytest.raises(AssertionError):
        validator.validate_schema("MessageRequest", {"prompt": "x", "model": MODELS[0]})


# -- routes ------------------------------------------------------------------------------------


def _normalize(path: str) -> str:
    return re.sub(r"<(?:[^:<>]+:)?[^<>]+>|\{[^}]+\}", "{}", path)


def test_app_routes_and_document_agree(redis_url, tmp_path):
    app = create_app(make_settings(redis_url, tmp_path))
    routes = {
        (_normalize(rule.rule), method.lower())
        for rule in app.url_map.iter_rules()
        if rule.endpoint != "static"
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    document = openapi_document("http://127.0.0.1:8000", MODELS)
    documented = {
        (_normalize(path), method)
        for path, item in document["paths"].items()
        for method in item
        if method != "parameters"
    }
    under_v2 = {route for route in routes if route[0].startswith("/v2/")}
    assert under_v2 - documented == set(), "routes missing from the OpenAPI document"
    assert documented - routes == set(), "documented operations the app does not have"


# -- the validator -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        job_record("active"),
        job_record("active", branch=f"copydesk/{JOB_ID}", pr_link="https://github.com/acme/docs/pull/7"),
        job_record("completed", branch=f"copydesk/{JOB_ID}", pr_link="https://github.com/acme/docs/pull/7"),
        job_record("completed"),
        job_record("failed", error={"code": "ref_not_found", "message": "the repository has no branch 'main'"}),
        job_record("archived", archived_at=STAMP),
    ],
    ids=["active", "active-with-pr", "completed", "completed-no-change", "failed", "archived"],
)
def test_validator_accepts_real_job_records(validator, record):
    validator.validate("GET", f"/v2/agent/{PROJECT_ID}/job/{JOB_ID}", 200, record, REQUEST_ID)
    validator.validate("POST", f"/v2/agent/{PROJECT_ID}/job/{JOB_ID}/archive", 200, record, REQUEST_ID)


def test_validator_rejects_a_status_outside_the_enum(validator):
    with pytest.raises(AssertionError, match=r"\$\.status: 'running' is not one of"):
        validator.validate(
            "GET", f"/v2/agent/{PROJECT_ID}/job/{JOB_ID}", 200, job_record() | {"status": "running"}, REQUEST_ID
        )


@pytest.mark.parametrize(
    "record, message",
    [
        ({k: v for k, v in job_record().items() if k != "prLink"}, "'prLink' is a required property"),
        (job_record() | {"extra": 1}, "Additional properties are not allowed"),
        (job_record() | {"id": "job_123"}, r"\$\.id"),
        (job_record() | {"createdAt": "2025-01-01 12:00"}, r"\$\.createdAt"),
        (job_record("failed"), r"\$\.error: None is not of type 'object'"),
        (job_record("archived"), r"\$\.archivedAt"),
        (job_record("completed", archived_at=STAMP), r"\$\.archivedAt"),
    ],
)
def test_validator_rejects_malformed_job_records(validator, record, message):
    with pytest.raises(AssertionError, match=message):
        validator.validate("GET", f"/v2/agent/{PROJECT_ID}/job/{JOB_ID}", 200, record, REQUEST_ID)


def test_validator_rejects_an_undocumented_status(validator):
    with pytest.raises(AssertionError, match="status 409 is not documented for getJob"):
        validator.validate("GET", f"/v2/agent/{PROJECT_ID}/job/{JOB_ID}", 409, job_record(), REQUEST_ID)
    with pytest.raises(AssertionError, match="status 200 is not documented for createJob"):
        validator.validate("POST", f"/v2/agent/{PROJECT_ID}/job", 200, job_record(), REQUEST_ID)


def test_validator_rejects_unknown_paths_and_methods(validator):
    with pytest.raises(AssertionError, match="no path template"):
        validator.validate("GET", "/v2/agent/prj_1/widgets", 200, {}, REQUEST_ID)
    with pytest.raises(AssertionError, match="no PUT operation"):
        validator.validate("PUT", f"/v2/agent/{PROJECT_ID}/job/{JOB_ID}", 200, {}, REQUEST_ID)


def test_validator_checks_required_headers(validator):
    path = f"/v2/agent/{PROJECT_ID}/job"
    location = {"Location": f"/v2/agent/{PROJECT_ID}/job/{JOB_ID}"}
    validator.validate("POST", path, 201, job_record(), REQUEST_ID | location)
    with pytest.raises(AssertionError, match="required header Location is missing"):
        validator.validate("POST", path, 201, job_record(), REQUEST_ID)
    with pytest.raises(AssertionError, match="required header X-Request-Id is missing"):
        validator.validate("POST", path, 201, job_record(), location)
    with pytest.raises(AssertionError, match="header RateLimit-Remaining is not an integer"):
        validator.validate("POST", path, 201, job_record(), REQUEST_ID | location | {"RateLimit-Remaining": "many"})


def test_validator_checks_problem_bodies(validator):
    path = f"/v2/agent/{PROJECT_ID}/job/{JOB_ID}"
    problem = {
        "type": "urn:copydesk:problem:job_not_found",
        "title": "Job not found",
        "status": 404,
        "detail": "no job",
        "code": "job_not_found",
        "error": "no job",
    }
    headers = REQUEST_ID | {"Content-Type": "application/problem+json"}
    validator.validate("GET", path, 404, problem, headers)
    with pytest.raises(AssertionError, match=r"\$\.code"):
        validator.validate("GET", path, 404, problem | {"code": "job_archived"}, headers)
    validator.validate("GET", path, 404, problem, REQUEST_ID | {"Content-Type": "application/json"})
    with pytest.raises(AssertionError, match="Content-Type 'text/plain' is not documented"):
        validator.validate("GET", path, 404, problem, REQUEST_ID | {"Content-Type": "text/plain"})


def test_validator_accepts_a_real_conversation(validator):
    prompt = Message(
        id="msg_01JR8Z6Q3V4W5X6Y7Z8A9B0C1F",
        job_id=JOB_ID,
        seq=0,
        role=Role.USER,
        content="Fix it",
        created_at=STAMP,
        status=MessageStatus.PROCESSED,
    )
    answer = Message(
        id="msg_01JR8Z6Q3V4W5X6Y7Z8A9B0C1G",
        job_id=JOB_ID,
        seq=0,
        role=Role.AGENT,
        content="Done",
        created_at=STAMP,
        reply_to=prompt.id,
        commit="a" * 40,
        changed_files=["docs/a.md"],
    )
    path = f"/v2/agent/{PROJECT_ID}/job/{JOB_ID}/messages"
    usage = {
        "inputTokens": 1200,
        "outputTokens": 30,
        "cacheReadTokens": 1000,
        "cacheWriteTokens": 80,
        "billableTokens": 350,
    }
    prompt.usage = usage
    totals = usage | {"maxTokens": 1000, "remainingTokens": 850}
    validator.validate(
        "GET",
        path,
        200,
        {"messages": [prompt.to_api(), answer.to_api()], "nextCursor": None, "usage": totals},
        REQUEST_ID,
    )
    with pytest.raises(AssertionError, match="status"):
        validator.validate(
            "GET",
            path,
            200,
            {"messages": [prompt.to_api() | {"status": "done"}], "nextCursor": None, "usage": totals},
            REQUEST_ID,
        )
    with pytest.raises(AssertionError, match="usage"):
        validator.validate("GET", path, 200, {"messages": [prompt.to_api()], "nextCursor": None}, REQUEST_ID)


# -- real responses of the app -----------------------------------------------------------------


class Api:
    """A test client whose every response is checked against the served OpenAPI document."""

    def __init__(self, app, validator: ResponseValidator) -> None:
        self.client = app.test_client()
        self.validator = validator
        self.calls: set[tuple[str, str, int]] = set()

    def call(self, method: str, path: str, *, token: str | None = None, **kwargs):
        headers = dict(kwargs.pop("headers", {}))
        if token:
            headers["Authorization"] = f"Bearer {token}"
        response = self.client.open(path, method=method, headers=headers, **kwargs)
        body = response.get_json(silent=True, force=True)
        self.validator.validate(method, path, response.status_code, body, response.headers)
        self.calls.add((method, self.validator.template_for(path) or path, response.status_code))
        return response


@pytest.fixture
def live(redis_url, tmp_path):
    app = create_app(make_settings(redis_url, tmp_path, rate_limit_per_hour=6))
    services = app.extensions["copydesk"]
    project = services.projects.add(
        account="acme",
        host="local",
        repository=str(tmp_path / "repo.git"),
        web_url=f"http://127.0.0.1:8000/local/{PROJECT_ID}",
        ref="main",
    )
    _key, token = services.keys.create(account="acme")
    served = app.test_client().get("/v2/openapi.json").get_json()
    return Api(app, ResponseValidator(served)), project, token


def test_served_document_is_the_built_one(redis_url, tmp_path):
    settings = make_settings(redis_url, tmp_path)
    response = create_app(settings).test_client().get("/v2/openapi.json")
    assert response.status_code == 200
    assert response.get_json() == openapi_document(settings.base_url, settings.allowed_models)


def test_real_responses_match_the_document(live):
    api, project, token = live
    base = f"/v2/agent/{project.id}"

    created = api.call(
        "POST",
        f"{base}/job",
        token=token,
        json={"prompt": "Document the CLI."},
        headers={"Idempotency-Key": "create-1"},
    )
    assert created.status_code == 201
    job = created.get_json()
    assert created.headers["Location"] == f"{base}/job/{job['id']}" and job["status"] == "active"
    replay = api.call(
        "POST",
        f"{base}/job",
        token=token,
        json={"prompt": "Document the CLI."},
        headers={"Idempotency-Key": "create-1"},
    )
    assert replay.status_code == 201 and replay.get_json()["id"] == job["id"]
    conflict = api.call(
        "POST", f"{base}/job", token=token, json={"prompt": "Something else."}, headers={"Idempotency-Key": "create-1"}
    )
    assert conflict.get_json()["code"] == "idempotency_conflict"
    api.call("POST", f"{base}/job", token=token, json={"prompt": "Second job.", "model": MODELS[1], "asDraft": True})

    assert api.call("GET", f"{base}/job/{job['id']}", token=token).status_code == 200
    first = api.call("GET", f"{base}/jobs?limit=1", token=token).get_json()
    assert first["nextCursor"] is not None
    last = api.call("GET", f"{base}/jobs?limit=1&cursor={first['nextCursor']}&status=active", token=token)
    assert last.get_json()["nextCursor"] is None
    assert (
        api.call("POST", f"{base}/job/{job['id']}/message", token=token, json={"prompt": "Also the API."}).status_code
        == 200
    )
    conversation = api.call("GET", f"{base}/job/{job['id']}/messages", token=token).get_json()
    assert [m["role"] for m in conversation["messages"]] == ["user", "user"]
    for _ in range(2):
        archived = api.call("POST", f"{base}/job/{job['id']}/archive", token=token)
        assert archived.status_code == 200 and archived.get_json()["status"] == "archived"
    refused = api.call("POST", f"{base}/job/{job['id']}/message", token=token, json={"prompt": "More."})
    assert refused.get_json()["code"] == "job_archived"

    assert {status for _m, _p, status in api.calls} >= {200, 201, 409}


@pytest.mark.parametrize(
    "method, path, kwargs, status, code",
    [
        ("POST", "{base}/job", {"data": "not json", "content_type": "application/json"}, 400, "invalid_json"),
        ("POST", "{base}/job", {"json": {"prompt": "x", "title": "y"}}, 400, "invalid_request"),
        ("POST", "{base}/job", {"json": {"prompt": ""}}, 400, "invalid_request"),
        ("POST", "{base}/job", {"json": {"prompt": "x", "model": "nope"}}, 400, "invalid_request"),
        (
            "POST",
            "{base}/job",
            {"json": {"prompt": "x"}, "headers": {"Idempotency-Key": "bad key"}},
            400,
            "invalid_request",
        ),
        ("POST", "{base}/job", {"data": "prompt=x", "content_type": "text/plain"}, 415, "unsupported_media_type"),
        ("POST", "{base}/job", {"json": {"prompt": "x" * 70_000}}, 413, "payload_too_large"),
        ("POST", "{base}/job/{job}/message", {"json": {"prompt": "x", "model": MODELS[0]}}, 400, "invalid_request"),
        ("GET", "{base}/jobs?limit=0", {}, 400, "invalid_request"),
        ("GET", "{base}/jobs?status=running", {}, 400, "invalid_request"),
        ("GET", "{base}/jobs?page=2", {}, 400, "invalid_request"),
        ("GET", "{base}/job/job_01JR8Z6Q3V4W5X6Y7Z8A9B0C1Z", {}, 404, "job_not_found"),
        ("GET", "/v2/agent/prj_01JR8Z6Q3V4W5X6Y7Z8A9B0C1Z/jobs", {}, 404, "project_not_found"),
        ("GET", "/v2/agent/nonsense/job/nonsense", {}, 404, "project_not_found"),
        ("PUT", "{base}/job/{job}", {}, 405, "method_not_allowed"),
        ("GET", "/v2/agent/{project}", {}, 404, "not_found"),
    ],
)
def test_real_error_responses_match_the_document(live, method, path, kwargs, status, code):
    api, project, token = live
    job = api.call("POST", f"/v2/agent/{project.id}/job", token=token, json={"prompt": "x"}).get_json()
    path = path.format(base=f"/v2/agent/{project.id}", job=job["id"], project=project.id)
    response = api.call(method, path, token=token, **kwargs)
    assert (response.status_code, response.get_json()["code"]) == (status, code)


@pytest.mark.parametrize("authorization", [None, "Basic abc", "Bearer cdk_not_a_real_key"])
def test_unauthorized_responses_match_the_document(live, authorization):
    api, project, _token = live
    headers = {"Authorization": authorization} if authorization else {}
    for method, path in [
        ("POST", f"/v2/agent/{project.id}/job"),
        ("GET", f"/v2/agent/{project.id}/jobs"),
        ("GET", f"/v2/agent/{project.id}/job/{JOB_ID}"),
    ]:
        response = api.call(method, path, headers=headers, json={"prompt": "x"} if method == "POST" else None)
        assert response.status_code == 401


def test_rate_limited_responses_match_the_document(live):
    api, project, token = live
    statuses = [
        api.call("POST", f"/v2/agent/{project.id}/job", token=token, json={"prompt": "x"}).status_code for _ in range(7)
    ]
    assert statuses == [201] * 6 + [429]


def test_health_endpoints_match_the_document(live):
    api, _project, _token = live
    assert api.call("GET", "/healthz").get_json() == {"status": "ok"}
    assert api.call("GET", "/readyz").get_json() == {"status": "ready"}


def test_responses_without_redis_match_the_document(tmp_path):
    dead = f"redis://127.0.0.1:{free_port()}/0"
    app = create_app(make_settings(dead, tmp_path))
    api = Api(app, ResponseValidator(openapi_document(app.extensions["copydesk"].settings.base_url, MODELS)))
    assert api.call("GET", "/readyz").status_code == 503
    assert api.call("GET", "/healthz").status_code == 200
    token = "cdk_" + "a" * 44
    assert api.call("GET", f"/v2/agent/{PROJECT_ID}/job/{JOB_ID}", token=token).status_code == 503


def test_job_status_enum_is_the_models(document):
    assert document["components"]["schemas"]["JobStatus"]["enum"] == [s.value for s in JobStatus]
    Draft202012Validator.check_schema(document["components"]["schemas"]["Job"])
