"""The API's contract over real HTTP: every error code, scopes, idempotency, pagination, limits."""

import json

import requests

from bot import context
from bot.app import create_app
from service.settings import Settings
from tests.harness import LiveServer


def problem_of(response, status, code):
    assert response.status_code == status, response.text
    # The anchor service's clients expect application/json; problem+json only when asked for (test_problem_types).
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert body["code"] == code and body["status"] == status
    assert body["error"] == body["detail"] and body["title"] and body["type"]
    return body


def test_a_body_nested_deeper_than_64_levels_is_invalid_json_on_every_write(stack, caplog):
    job = stack.create("Add an FAQ").json()
    for path in (f"/v2/agent/{stack.project_id}/job", f"/v2/agent/{stack.project_id}/job/{job['id']}/message"):
        for depth in (65, 1_000, 20_000):
            body = '{"prompt": "x", "deep": ' + "[" * depth + "]" * depth + "}"
            response = stack.api.post(path, data=body, headers={"Content-Type": "application/json"})
            assert "levels deep" in problem_of(response, 400, "invalid_json")["detail"]
    nested = '{"prompt": "x", "ok": ' + "[" * 62 + "]" * 62 + "}"  # 63 levels: parsed, then refused by field
    problem = problem_of(
        stack.api.post(f"/v2/agent/{stack.project_id}/job", data=nested, headers={"Content-Type": "application/json"}),
        400,
        "invalid_request",
    )
    assert problem["field"] == "ok"
    assert "RecursionError" not in caplog.text and "Traceback" not in caplog.text


def test_bad_json_and_bad_fields_are_400_naming_the_field(stack):
    url = f"/v2/agent/{stack.project_id}/job"
    headers = {"Content-Type": "application/json"}
    problem_of(stack.api.post(url, data="{not json", headers=headers), 400, "invalid_json")
    problem_of(stack.api.post(url, data="[1, 2]", headers=headers), 400, "invalid_request")
    cases = [
        ({}, "prompt"),
        ({"prompt": ""}, "prompt"),
        ({"prompt": 5}, "prompt"),
        ({"prompt": "x" * 20_001}, "prompt"),
        ({"prompt": "hi", "colour": "red"}, "colour"),
        ({"prompt": "hi", "model": "openai:nope"}, "model"),
        ({"prompt": "hi", "ref": "bad ref.."}, "ref"),
        ({"prompt": "hi", "asDraft": "yes"}, "asDraft"),
    ]
    for body, field in cases:
        problem = problem_of(stack.api.post(url, json=body), 400, "invalid_request")
        assert problem["field"] == field, (body, problem)
    assert stack.api.get(f"/v2/agent/{stack.project_id}/jobs").json()["jobs"] == []  # nothing stored


def test_the_prompt_limit_is_in_characters_not_bytes(stack):
    # Sent as raw UTF-8 (40,000 bytes); \u-escaped it would be 120,000 bytes, over the body limit.
    body = json.dumps({"prompt": "é" * 20_000}, ensure_ascii=False).encode()
    response = stack.api.post(
        f"/v2/agent/{stack.project_id}/job", data=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 201


def test_message_takes_only_a_prompt(stack):
    job = stack.create().json()
    problem = problem_of(
        stack.api.post(
            f"/v2/agent/{stack.project_id}/job/{job['id']}/message", json={"prompt": "x", "model": "scripted:x"}
        ),
        400,
        "invalid_request",
    )
    assert problem["field"] == "model"


def test_media_type_and_size(stack):
    url = f"/v2/agent/{stack.project_id}/job"
    problem_of(
        stack.api.post(url, data="prompt=hi", headers={"Content-Type": "text/plain"}), 415, "unsupported_media_type"
    )
    problem_of(
        stack.api.post(url, data=json.dumps({"prompt": "x" * 70_000}), headers={"Content-Type": "application/json"}),
        413,
        "payload_too_large",
    )


def test_authentication(stack):
    url = f"{stack.url}/v2/agent/{stack.project_id}/jobs"
    for headers in (
        {},
        {"Authorization": "Basic abc"},
        {"Authorization": "Bearer cdk_wrong"},
        {"Authorization": "Bearer " + stack.key[:-1] + ("A" if stack.key[-1] != "A" else "B")},
    ):
        response = requests.get(url, headers=headers, timeout=10)
        problem_of(response, 401, "unauthorized")
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    [key] = stack.ctx.services.keys.all()
    assert key.last_used_at is None
    assert stack.api.get(url).status_code == 200
    [key] = stack.ctx.services.keys.all()
    assert key.last_used_at is not None
    stack.ctx.services.keys.revoke(key.id)
    problem_of(stack.api.get(url), 401, "unauthorized")


def test_keys_are_stored_hashed(stack):
    keys = stack.ctx.services.redis.keys("cd:apikey:*")
    stored = b"".join(stack.ctx.services.redis.get(k) for k in keys)
    assert stack.key.encode() not in stored and stack.key.startswith("cdk_") and len(stack.key) >= 36


def test_a_key_of_another_account_sees_nothing(stack, make_repo):
    services = stack.ctx.services
    job = stack.create().json()
    other_repo = make_repo({"a.md": "# A\n"}, name="other")
    other = stack.ctx.local.register(services.projects, path=other_repo, ref="main", account="acme")
    _, acme_key = services.keys.create(account="acme")
    acme = requests.Session()
    acme.headers["Authorization"] = f"Bearer {acme_key}"
    base = f"{stack.url}/v2/agent/{stack.project_id}"
    # Create answers 400 (the anchor service's description of it has no 404), naming the project, never more.
    refused = problem_of(acme.post(f"{base}/job", json={"prompt": "x"}, timeout=10), 400, "invalid_request")
    assert refused["field"] == "projectId"
    attempts = [
        ("post", f"{base}/job/{job['id']}/message", {"prompt": "x"}),
        ("get", f"{base}/job/{job['id']}", None),
        ("get", f"{base}/jobs", None),
        ("get", f"{base}/job/{job['id']}/messages", None),
        ("post", f"{base}/job/{job['id']}/archive", None),
    ]
    for method, url, body in attempts:
        problem_of(acme.request(method, url, json=body, timeout=10), 404, "project_not_found")
    # And the job is not reachable through the other account's own project either.
    problem_of(acme.get(f"{stack.url}/v2/agent/{other.id}/job/{job['id']}", timeout=10), 404, "job_not_found")
    assert stack.job(job["id"])["status"] == "active"


def test_a_key_narrowed_to_projects_sees_only_those(stack, make_repo):
    services = stack.ctx.services
    second = stack.ctx.local.register(services.projects, path=make_repo({"b.md": "b"}, name="second"), ref="main")
    _, narrow = services.keys.create(account="local", projects=[second.id])
    headers = {"Authorization": f"Bearer {narrow}"}
    problem_of(
        requests.get(f"{stack.url}/v2/agent/{stack.project_id}/jobs", headers=headers, timeout=10),
        404,
        "project_not_found",
    )
    assert requests.get(f"{stack.url}/v2/agent/{second.id}/jobs", headers=headers, timeout=10).status_code == 200


def test_a_read_only_key_reads_and_every_write_is_403_forbidden(stack, openapi_validator):
    from service.models import KeyAccess
    from tests.harness import CheckedSession

    job = stack.create().json()
    made, plaintext = stack.ctx.services.keys.create(account="local", access=KeyAccess.READ_ONLY)
    reader = CheckedSession(stack.url, openapi_validator)  # every answer checked against the OpenAPI document
    reader.headers["Authorization"] = f"Bearer {plaintext}"
    base = f"/v2/agent/{stack.project_id}"
    for path in (
        f"{base}/job/{job['id']}",
        f"{base}/jobs",
        f"{base}/job/{job['id']}/messages",
        f"{base}/job/{job['id']}/events?after=0",
        f"{base}/webhooks",
        "/v2/agent/usage",
    ):
        assert reader.get(path).status_code == 200, path
    for path, body in (
        (f"{base}/job", {"prompt": "x"}),
        (f"{base}/job/{job['id']}/message", {"prompt": "x"}),
        (f"{base}/job/{job['id']}/archive", None),
        (f"{base}/job/{job['id']}/cancel", None),
        (f"{base}/webhooks", {"url": "https://example.com/hook"}),
    ):
        problem_of(reader.post(path, json=body), 403, "forbidden")
    assert stack.job(job["id"])["status"] == "active" and len(stack.conversation(job["id"])) == 1
    key = stack.ctx.services.keys.find(made.id)
    assert key.use_count == 11 and key.last_used_at


def test_unknown_project_and_job(stack):
    problem_of(stack.api.get("/v2/agent/prj_01JD0000000000000000000000/jobs"), 404, "project_not_found")
    problem_of(stack.api.get("/v2/agent/whatever/jobs"), 404, "project_not_found")
    problem_of(stack.api.get(f"/v2/agent/{stack.project_id}/job/job_01JD0000000000000000000000"), 404, "job_not_found")
    problem_of(stack.api.get(f"/v2/agent/{stack.project_id}/job/not-an-id"), 404, "job_not_found")
    problem_of(stack.api.get("/v2/agent/nowhere"), 404, "not_found")


def test_wrong_method_is_405_with_allow(stack):
    response = stack.api.delete(f"{stack.url}/v2/agent/{stack.project_id}/job")
    problem_of(response, 405, "method_not_allowed")
    assert "POST" in response.headers["Allow"]


def test_idempotent_create(stack):
    headers = {"Idempotency-Key": "order-42"}
    url = f"/v2/agent/{stack.project_id}/job"
    first = stack.api.post(url, json={"prompt": "same"}, headers=headers)
    again = stack.api.post(url, data='{ "prompt" : "same" }', headers={**headers, "Content-Type": "application/json"})
    assert first.status_code == again.status_code == 201
    assert first.json()["id"] == again.json()["id"]
    problem_of(stack.api.post(url, json={"prompt": "different"}, headers=headers), 409, "idempotency_conflict")
    assert (
        stack.api.post(url, json={"prompt": "same"}, headers={"Idempotency-Key": "order-43"}).json()["id"]
        != first.json()["id"]
    )
    assert len(stack.api.get(f"/v2/agent/{stack.project_id}/jobs").json()["jobs"]) == 2


def test_list_pages_newest_first_and_filters_by_status(stack):
    ids = [stack.create(f"job {i}").json()["id"] for i in range(5)]
    stack.api.post(f"/v2/agent/{stack.project_id}/job/{ids[1]}/archive")
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = stack.api.get(f"/v2/agent/{stack.project_id}/jobs", params=params).json()
        seen += [j["id"] for j in page["jobs"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))
    archived = stack.api.get(f"/v2/agent/{stack.project_id}/jobs", params={"status": "archived"}).json()
    assert [j["id"] for j in archived["jobs"]] == [ids[1]]
    active = stack.api.get(f"/v2/agent/{stack.project_id}/jobs", params={"status": "active"}).json()
    assert len(active["jobs"]) == 4
    for params, field in (
        ({"status": "running"}, "status"),
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "²"}, "limit"),
        ({"cursor": "nope"}, "cursor"),
        ({"page": "2"}, "page"),
    ):
        problem = problem_of(stack.api.get(f"/v2/agent/{stack.project_id}/jobs", params=params), 400, "invalid_request")
        assert problem["field"] == field


def test_the_conversation_pages_oldest_first_and_refuses_bad_paging(stack):
    job = stack.create("prompt 0").json()
    for i in range(1, 7):
        assert stack.message(job["id"], f"prompt {i}").status_code == 200
    url = f"/v2/agent/{stack.project_id}/job/{job['id']}/messages"
    whole = stack.api.get(url).json()
    assert [m["content"] for m in whole["messages"]] == [f"prompt {i}" for i in range(7)]
    assert whole["nextCursor"] is None
    seen, cursor, pages = [], None, 0
    while True:
        page = stack.api.get(url, params={"limit": 3, **({"cursor": cursor} if cursor else {})}).json()
        assert page["usage"] == whole["usage"]  # the job's totals on every page
        seen += [m["content"] for m in page["messages"]]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == [f"prompt {i}" for i in range(7)] and pages == 3
    exact = stack.api.get(url, params={"limit": 7}).json()
    assert len(exact["messages"]) == 7 and exact["nextCursor"] is None
    other = stack.create("another job").json()
    foreign_cursor = stack.api.get(f"/v2/agent/{stack.project_id}/job/{other['id']}/messages").json()
    for params, field in (
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "x"}, "limit"),
        ({"cursor": "nope"}, "cursor"),
        ({"cursor": foreign_cursor["messages"][0]["id"]}, "cursor"),
        ({"after": "1"}, "after"),
    ):
        problem = problem_of(stack.api.get(url, params=params), 400, "invalid_request")
        assert problem["field"] == field


def test_rate_limit_per_project(redis_url, tmp_path, make_repo, openapi_validator):
    settings = Settings(redis_url=redis_url, data_dir=tmp_path, model="scripted:x", rate_limit_per_hour=2)
    ctx = context.build(settings)
    project = ctx.local.register(ctx.services.projects, path=make_repo({"a.md": "a"}), ref="main")
    _, key = ctx.services.keys.create(account="local")
    with LiveServer(create_app(settings, ctx)) as server:
        url = f"{server.url}/v2/agent/{project.id}/job"
        headers = {"Authorization": f"Bearer {key}"}
        first = requests.post(url, json={"prompt": "a"}, headers=headers, timeout=10)
        assert (first.headers["RateLimit-Limit"], first.headers["RateLimit-Remaining"]) == ("2", "1")
        job = first.json()
        second = requests.post(f"{url}/{job['id']}/message", json={"prompt": "b"}, headers=headers, timeout=10)
        assert second.headers["RateLimit-Remaining"] == "0"
        third = requests.post(url, json={"prompt": "c"}, headers=headers, timeout=10)
        problem_of(third, 429, "rate_limited")
        assert 0 < int(third.headers["Retry-After"]) <= 3600
        assert third.headers["RateLimit-Remaining"] == "0"
        openapi_validator.validate("POST", f"/v2/agent/{project.id}/job", 429, third.json(), third.headers)
        # Reads are not limited.
        assert requests.get(f"{url}/{job['id']}", headers=headers, timeout=10).status_code == 200


def test_an_unexpected_error_is_a_500_without_a_trace(stack):
    job = stack.create().json()
    stack.ctx.services.redis.set(f"cd:job:{job['id']}", b"{corrupt")
    response = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}")
    body = problem_of(response, 500, "internal_error")
    assert body["requestId"] == response.headers["X-Request-Id"]
    assert "Traceback" not in response.text and "JSONDecodeError" not in response.text


def test_store_down_is_503_and_not_ready(tmp_path):
    settings = Settings(redis_url="redis://127.0.0.1:1/0", data_dir=tmp_path, model="scripted:x")
    with LiveServer(create_app(settings)) as server:
        response = requests.get(
            f"{server.url}/v2/agent/prj_01JD0000000000000000000000/jobs",
            headers={"Authorization": "Bearer cdk_" + "a" * 44},
            timeout=10,
        )
        problem_of(response, 503, "unavailable")
        assert response.headers["Retry-After"]
        problem_of(requests.get(f"{server.url}/readyz", timeout=10), 503, "unavailable")
        assert requests.get(f"{server.url}/healthz", timeout=10).status_code == 200


def test_openapi_document_is_served_without_auth(stack):
    response = requests.get(f"{stack.url}/v2/openapi.json", timeout=10)
    assert response.status_code == 200 and response.json()["openapi"].startswith("3.1")
