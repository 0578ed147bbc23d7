"""GET job and create are answered in front of Flask (service/api/hot_paths.py): every answer must be the Flask
route's, and a request must have the same effects either way (one use of the key, one job)."""

import functools
import io
import json

import pytest
import requests
from flask import Flask
from werkzeug.test import Client, EnvironBuilder, run_wsgi_app

from bot.app import create_app
from service.api.hot_paths import HotPaths
from service.models import KeyAccess
from service.projectstate import DisabledReason
from service.settings import Settings
from tests.conftest import free_port
from tests.harness import within_one_window

HEADERS = ("Content-Type", "Content-Length", "WWW-Authenticate", "Retry-After", "Allow", "RateLimit-Limit")
# What differs between two creates that both succeed: the new job's id and times, and what follows from them.
PER_JOB = ("id", "createdAt", "updatedAt", "branch")


def answer(wsgi, method: str, path: str, headers: dict, data: bytes | None) -> tuple:
    response = Client(wsgi).open(path, method=method, headers={"X-Request-Id": "req_same", **headers}, data=data)
    kept = tuple((name, response.headers.get(name)) for name in HEADERS)
    return response.status, kept, response.get_data(), response.headers


def answers(app: Flask, path: str, method: str = "GET", data: bytes | None = None, **headers: str):
    """The same request answered by HotPaths and by Flask's own route (both inside the Edge, which adds the same
    headers to either): status, chosen headers, body and all headers of each."""
    fast = HotPaths(app, app.extensions["copydesk"])
    flask = functools.partial(Flask.wsgi_app, app)
    return answer(fast, method, path, headers, data), answer(flask, method, path, headers, data)


def same(fast: tuple, flask: tuple) -> bool:
    return fast[:3] == flask[:3]


def test_every_answer_to_get_job_is_the_flask_routes(stack):
    services, project = stack.ctx.services, stack.project_id
    job = stack.create().json()["id"]
    other = stack.ctx.local.register(services.projects, path=stack.repo, ref="main")
    revoked, revoked_plain = services.keys.create(account="local", name="gone")
    services.keys.revoke(revoked.id)
    _, narrow = services.keys.create(account="local", projects=[other.id])
    _, stranger = services.keys.create(account="elsewhere")
    app = create_app(stack.settings, stack.ctx)
    bearer = f"Bearer {stack.key}"
    cases = [
        (f"/v2/agent/{project}/job/{job}", {"Authorization": bearer}),
        (f"/v2/agent/{project}/job/{job}", {"Authorization": bearer, "Accept": "application/problem+json"}),
        (f"/v2/agent/{project}/job/{job}", {}),
        (f"/v2/agent/{project}/job/{job}", {"Authorization": "Basic eDp5"}),
        (f"/v2/agent/{project}/job/{job}", {"Authorization": "Bearer cdk_" + "a" * 44}),
        (f"/v2/agent/{project}/job/{job}", {"Authorization": f"Bearer {revoked_plain}"}),
        (f"/v2/agent/{project}/job/{job}", {"Authorization": f"Bearer {narrow}"}),
        (
            f"/v2/agent/{project}/job/{job}",
            {"Authorization": f"Bearer {stranger}", "Accept": "application/problem+json"},
        ),
        (f"/v2/agent/{other.id}/job/{job}", {"Authorization": bearer}),
        (f"/v2/agent/{project}/job/job_doesnotexist", {"Authorization": bearer}),
        (f"/v2/agent/{project}/job/not-a-job-id", {"Authorization": bearer}),
        (f"/v2/agent/prj_doesnotexist/job/{job}", {"Authorization": bearer}),
        (f"/v2/agent/usage/job/{job}", {"Authorization": bearer}),
    ]
    for path, headers in cases:
        fast, flask = answers(app, path, **headers)
        assert same(fast, flask), (path, headers, fast[:3], flask[:3])
    assert answers(app, f"/v2/agent/{project}/job/{job}", Authorization=bearer)[0][0] == "200 OK"


def test_every_refused_create_is_answered_as_the_flask_route_does(stack_factory):
    stack = stack_factory(rate_limit_per_hour=2, max_body_bytes=200)
    services, project = stack.ctx.services, stack.project_id
    _, reader = services.keys.create(account="local", access=KeyAccess.READ_ONLY)
    _, stranger = services.keys.create(account="elsewhere")
    disabled = stack.ctx.local.register(services.projects, path=stack.repo, ref="main")
    services.projects.disable(disabled.id, DisabledReason.ADMIN)
    app = create_app(stack.settings, stack.ctx)
    json_type = {"Content-Type": "application/json"}
    auth = {"Authorization": f"Bearer {stack.key}", **json_type}
    good = b'{"prompt": "Add an FAQ"}'
    path = f"/v2/agent/{project}/job"
    cases = [
        (path, good, json_type),
        (path, good, {"Authorization": f"Bearer {reader}", **json_type}),
        (path, good, {"Authorization": f"Bearer {stranger}", **json_type}),
        ("/v2/agent/prj_doesnotexist/job", good, auth),
        (f"/v2/agent/{disabled.id}/job", good, auth),
        (path, good, {**auth, "Content-Type": "text/plain"}),
        (path, b'{"prompt": "' + b"x" * 300 + b'"}', auth),
        (path, b'{"prompt": ', {**auth, "Accept": "application/problem+json"}),
        (path, b"[1, 2]", auth),
        (path, b'{"prompt": "x", "model": "no-such-model"}', auth),
        (path, b'{"prompt": "x", "colour": "blue"}', auth),
        (path, b'{"prompt": "\\ud800"}', auth),
    ]
    for where, data, headers in cases:
        fast, flask = answers(app, where, "POST", data, **headers)
        assert same(fast, flask), (where, data, headers, fast[:3], flask[:3])
        assert not fast[0].startswith("2"), fast
    assert services.jobs.page(project, status=None, limit=10, cursor=None)[0] == []  # none of them made a job
    # The hourly quota of 2: one create each way, then each way's 429 (its reset a second apart at most).
    within_one_window(3600, needed=60)
    fast, flask = answers(app, path, "POST", good, **auth)
    assert fast[0] == flask[0] == "201 CREATED"
    assert _job_fields(fast[2]) == _job_fields(flask[2])
    assert fast[3]["Location"] == f"{path}/{json.loads(fast[2])['id']}"
    assert [(a[3]["RateLimit-Limit"], a[3]["RateLimit-Remaining"]) for a in (fast, flask)] == [("2", "1"), ("2", "0")]
    fast, flask = answers(app, path, "POST", good, **auth)
    assert fast[0] == flask[0] == "429 TOO MANY REQUESTS"
    assert json.loads(fast[2])["code"] == json.loads(flask[2])["code"] == "rate_limited"
    assert {"Retry-After", "RateLimit-Reset"} <= set(fast[3].keys()) & set(flask[3].keys())
    assert len(services.jobs.page(project, status=None, limit=10, cursor=None)[0]) == 2


def test_a_replayed_create_is_answered_as_the_flask_route_does(stack):
    app = create_app(stack.settings, stack.ctx)
    headers = {"Authorization": f"Bearer {stack.key}", "Content-Type": "application/json", "Idempotency-Key": "k1"}
    first, replay = answers(app, f"/v2/agent/{stack.project_id}/job", "POST", b'{"prompt": "Add an FAQ"}', **headers)
    assert first[0] == replay[0] == "201 CREATED" and first[2] == replay[2]
    assert "RateLimit-Remaining" in first[3] and "RateLimit-Remaining" not in replay[3]  # a replay used no quota
    fast, flask = answers(app, f"/v2/agent/{stack.project_id}/job", "POST", b'{"prompt": "Other"}', **headers)
    assert same(fast, flask) and fast[0].startswith("4"), fast


def _job_fields(body: bytes) -> dict:
    return {name: value for name, value in json.loads(body).items() if name not in PER_JOB}


@pytest.mark.parametrize("job_path", ["job_doesnotexist", "{job}"])
def test_get_job_counts_the_keys_use_once_whatever_it_answers(stack, job_path):
    job = stack.create().json()["id"]
    keys = stack.ctx.services.keys
    (key,) = keys.all()
    for _ in range(3):
        stack.api.get(f"/v2/agent/{stack.project_id}/job/{job_path.format(job=job)}")
    assert keys.find(key.id).use_count == key.use_count + 3


def test_what_is_not_a_plain_get_or_create_goes_to_flask(stack):
    job = stack.create().json()["id"]
    base = f"{stack.url}/v2/agent/{stack.project_id}/job/{job}"
    auth = {"Authorization": f"Bearer {stack.key}"}
    head = requests.head(base, headers=auth, timeout=10)
    assert head.status_code == 200 and head.headers["Content-Length"] == stack.api.get(base).headers["Content-Length"]
    assert requests.get(base + "/", headers=auth, timeout=10).status_code == 404  # Flask's routing, as before
    assert requests.get(f"{base}ö", headers=auth, timeout=10).json()["code"] == "job_not_found"
    merged = requests.get(base.replace("/job/", "/job//"), headers=auth, timeout=10, allow_redirects=False)
    assert merged.status_code == 308 and merged.headers["Location"].endswith(f"/job/{job}")
    create = f"{stack.url}/v2/agent/{stack.project_id}/job"
    assert requests.put(create, headers=auth, timeout=10).status_code == 405
    assert requests.post(create + "/", headers=auth, json={"prompt": "x"}, timeout=10).status_code in (308, 404)


def test_creates_wait_for_replicas_through_flask(stack_factory):
    stack = stack_factory(redis_min_replicas=1, redis_replica_wait_ms=50)
    app = create_app(stack.settings, stack.ctx)
    headers = {"Authorization": f"Bearer {stack.key}", "Content-Type": "application/json"}
    response = Client(app).post(f"/v2/agent/{stack.project_id}/job", headers=headers, data=b'{"prompt": "x"}')
    # The job store has no replica: the durable-writes hook, which only Flask's route runs, refuses the answer.
    assert response.status_code == 503 and response.json["code"] == "unavailable"


def test_get_job_without_redis_is_the_flask_routes_503(tmp_path):
    settings = Settings(redis_url=f"redis://127.0.0.1:{free_port()}/0", data_dir=tmp_path / "data")
    app = create_app(settings)
    fast, flask = answers(app, "/v2/agent/prj_x/job/job_y", Authorization="Bearer cdk_" + "a" * 44)
    assert same(fast, flask) and fast[0] == "503 SERVICE UNAVAILABLE"
    fast, flask = answers(
        app, "/v2/agent/prj_x/job", "POST", b'{"prompt": "x"}', Authorization="Bearer cdk_" + "a" * 44
    )
    assert same(fast, flask) and fast[0] == "503 SERVICE UNAVAILABLE"


class _LongBody(io.RawIOBase):
    """A request body of 4 MB of spaces without a length; counts what was read of it."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        size = min(len(buffer), 4_000_000 - self.read_bytes)
        buffer[:size] = b" " * size
        self.read_bytes += size
        return size


def test_a_create_without_a_length_is_read_up_to_the_limit_only(stack):
    app = create_app(stack.settings, stack.ctx)
    results = []
    for wsgi in (HotPaths(app, app.extensions["copydesk"]), functools.partial(Flask.wsgi_app, app)):
        body = _LongBody()
        environ = EnvironBuilder(
            path=f"/v2/agent/{stack.project_id}/job",
            method="POST",
            headers={"Authorization": f"Bearer {stack.key}", "Content-Type": "application/json"},
        ).get_environ()
        environ.pop("CONTENT_LENGTH", None)
        environ.update({"wsgi.input": io.BufferedReader(body), "wsgi.input_terminated": True})
        answered, status, _headers = run_wsgi_app(wsgi, environ, buffered=True)
        results.append((status, body.read_bytes))
    (fast, fast_read), (flask, flask_read) = results
    assert fast == flask == "413 REQUEST ENTITY TOO LARGE"
    assert fast_read <= 2 * stack.settings.max_body_bytes and flask_read <= 2 * stack.settings.max_body_bytes
