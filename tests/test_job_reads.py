"""GET job is answered before Flask (service/api/job_reads.py): every answer must be the Flask route's, byte for
byte, and count the key's use once."""

import functools

import pytest
import requests
from flask import Flask
from werkzeug.test import Client

from bot.app import create_app
from service.api.job_reads import JobReads
from service.settings import Settings
from tests.conftest import free_port

HEADERS = ("Content-Type", "Content-Length", "WWW-Authenticate", "Retry-After", "Allow")


def answers(app: Flask, path: str, **headers: str) -> tuple[tuple, tuple]:
    """The same request answered by JobReads and by Flask's own route (both inside the Edge, which adds the same
    headers to either): status, chosen headers and body of each."""
    services = app.extensions["copydesk"]
    fast, flask = JobReads(app, services), functools.partial(Flask.wsgi_app, app)
    results = []
    for wsgi in (fast, flask):
        response = Client(wsgi).get(path, headers={"X-Request-Id": "req_same", **headers})
        kept = tuple((name, response.headers.get(name)) for name in HEADERS)
        results.append((response.status, kept, response.get_data()))
    return results[0], results[1]


def test_every_answer_to_get_job_is_the_flask_routes(stack):
    services, project = stack.ctx.services, stack.project_id
    job = stack.create().json()["id"]
    other = stack.ctx.local.register(services.projects, path=stack.repo, ref="main")
    other_job = services.jobs.find(job)
    revoked, revoked_plain = services.keys.create(account="local", name="gone")
    services.keys.revoke(revoked.id)
    _, narrow = services.keys.create(account="local", projects=[other.id])
    _, stranger = services.keys.create(account="elsewhere")
    app = stack_app(stack)
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
    assert other_job is not None
    for path, headers in cases:
        fast, flask = answers(app, path, **headers)
        assert fast == flask, (path, headers)
    assert answers(app, f"/v2/agent/{project}/job/{job}", Authorization=bearer)[0][0] == "200 OK"


def stack_app(stack) -> Flask:
    return create_app(stack.settings, stack.ctx)


@pytest.mark.parametrize("job_path", ["job_doesnotexist", "{job}"])
def test_get_job_counts_the_keys_use_once_whatever_it_answers(stack, job_path):
    job = stack.create().json()["id"]
    keys = stack.ctx.services.keys
    (key,) = keys.all()
    for _ in range(3):
        stack.api.get(f"/v2/agent/{stack.project_id}/job/{job_path.format(job=job)}")
    assert keys.find(key.id).use_count == key.use_count + 3


def test_what_is_not_a_plain_get_of_a_job_goes_to_flask(stack):
    job = stack.create().json()["id"]
    base = f"{stack.url}/v2/agent/{stack.project_id}/job/{job}"
    auth = {"Authorization": f"Bearer {stack.key}"}
    head = requests.head(base, headers=auth, timeout=10)
    assert head.status_code == 200 and head.headers["Content-Length"] == stack.api.get(base).headers["Content-Length"]
    assert requests.get(base + "/", headers=auth, timeout=10).status_code == 404  # Flask's routing, as before
    assert requests.get(f"{base}ö", headers=auth, timeout=10).json()["code"] == "job_not_found"
    merged = requests.get(base.replace("/job/", "/job//"), headers=auth, timeout=10, allow_redirects=False)
    assert merged.status_code == 308 and merged.headers["Location"].endswith(f"/job/{job}")


def test_get_job_without_redis_is_the_flask_routes_503(tmp_path):
    settings = Settings(redis_url=f"redis://127.0.0.1:{free_port()}/0", data_dir=tmp_path / "data")
    app = create_app(settings)
    fast, flask = answers(app, "/v2/agent/prj_x/job/job_y", Authorization="Bearer cdk_" + "a" * 44)
    assert fast == flask and fast[0] == "503 SERVICE UNAVAILABLE"
