"""The webhook endpoint: signatures, redeliveries, ping, unknown events, and the queue behind it."""

import hashlib
import hmac
import json
import uuid

import pytest
import redis
import rq
from flask import Flask
from redis.backoff import NoBackoff
from redis.retry import Retry

from bot import context
from bot.github import inbound
from bot.worker import run_worker
from service.api import problems
from service.ids import UlidGenerator
from service.projectstate import DisabledReason
from service.queues import GITHUB_EVENT_TASK, github_events_queue
from service.settings import Settings
from service.store.projects import ProjectStore
from tests.conftest import free_port
from tests.github_event_fixtures import pull_of_a_completed_job
from tests.harness import LiveServer, drain_queues

SECRET = "webhook-secret-for-tests"
QUEUE = "copydesk-hooks-test"
REPO = "acme/docs"
COMMENT = {
    "action": "created",
    "issue": {"number": 1, "pull_request": {}},
    "comment": {"id": 7, "body": "hi"},
    "repository": {"id": 1, "full_name": "acme/docs"},
    "installation": {"id": 9},
}


@pytest.fixture
def client(redis_client):
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024 + 1  # the API's limit, as the real app sets it
    problems.register(app)
    app.register_blueprint(inbound.create_blueprint(secret=SECRET, redis_client=redis_client, queue_name=QUEUE))
    return app.test_client()


@pytest.fixture
def queue(redis_client):
    return rq.Queue(github_events_queue(QUEUE), connection=redis_client)


def deliver(
    client,
    event: str,
    payload,
    *,
    delivery: str | None = None,
    secret: str = SECRET,
    signature: str | None = None,
    sha1: bool = False,
):
    body = json.dumps(payload).encode()
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "Content-Type": "application/json",
    }
    if sha1:
        headers["X-Hub-Signature"] = "sha1=" + hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()
    elif signature is not None:
        headers["X-Hub-Signature-256"] = signature
    else:
        headers["X-Hub-Signature-256"] = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return client.post(inbound.HOOK_PATH, data=body, headers=headers)


def test_a_signed_delivery_is_queued_with_its_event_id_and_payload(client, queue):
    response = deliver(client, "issue_comment", COMMENT, delivery="d-1")
    assert response.status_code == 202
    assert response.get_json() == {"status": "queued"}
    [job] = queue.get_jobs()
    assert job.func_name == GITHUB_EVENT_TASK
    assert job.args == ("issue_comment", "d-1", COMMENT)
    assert job.timeout == inbound.JOB_TIMEOUT_SECONDS
    assert job.retries_left == 3 and job.retry_intervals == [0]  # at once: the worker runs no RQ scheduler
    assert rq.Queue(QUEUE, connection=queue.connection).count == 0  # not behind the runs


@pytest.mark.parametrize("signature", [None, "sha256=" + "0" * 64, "sha256=nothex", "md5=abc"])
def test_a_wrong_or_missing_signature_is_refused_and_nothing_is_stored(client, queue, redis_client, signature):
    if signature is None:
        response = client.post(
            inbound.HOOK_PATH,
            data=json.dumps(COMMENT),
            headers={"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "d-2", "Content-Type": "application/json"},
        )
    else:
        response = deliver(client, "issue_comment", COMMENT, delivery="d-2", signature=signature)
    assert response.status_code == 401
    assert response.mimetype == "application/json"  # problem details, as plain JSON unless asked otherwise
    assert response.get_json()["code"] == "unauthorized"
    assert queue.count == 0
    assert redis_client.keys("cd:gh:*") == []


def test_a_signature_made_with_another_secret_is_refused(client, queue):
    assert deliver(client, "issue_comment", COMMENT, secret="not-the-secret").status_code == 401
    assert queue.count == 0


def test_only_the_sha256_signature_counts(client, queue):
    # A correct SHA-1 signature alone is what a downgrade would send.
    assert deliver(client, "issue_comment", COMMENT, sha1=True).status_code == 401
    assert queue.count == 0


def test_a_redelivery_is_acknowledged_but_not_queued_again(client, queue):
    assert deliver(client, "issue_comment", COMMENT, delivery="d-3").status_code == 202
    again = deliver(client, "issue_comment", COMMENT, delivery="d-3")
    assert again.status_code == 200
    assert again.get_json() == {"status": "duplicate"}
    assert queue.count == 1


def test_a_replayed_body_under_a_new_delivery_id_is_acknowledged_but_not_queued(client, queue):
    # X-GitHub-Delivery is not signed: whoever captured a delivery can send it again under any id.
    assert deliver(client, "issue_comment", COMMENT, delivery="d-6").status_code == 202
    for replay in ("d-7", str(uuid.uuid4())):
        again = deliver(client, "issue_comment", COMMENT, delivery=replay)
        assert again.status_code == 200 and again.get_json() == {"status": "duplicate"}
    assert queue.count == 1
    other = {**COMMENT, "comment": {"id": 8, "body": "hi"}}  # a new event, however alike, is taken
    assert deliver(client, "issue_comment", other, delivery="d-8").status_code == 202
    assert queue.count == 2


def test_a_signed_comment_that_is_not_unicode_text_is_refused_and_not_queued(client, queue, redis_client):
    payload = {**COMMENT, "comment": {"id": 9, "body": "@copydesk fix \ud800 this"}}
    response = deliver(client, "issue_comment", payload)
    assert response.status_code == 400
    assert response.get_json()["code"] == "invalid_request" and response.get_json()["field"] == "comment.body"
    assert queue.count == 0 and redis_client.keys("cd:gh:*") == []


@pytest.mark.parametrize("depth", [65, 5_000])
def test_a_signed_body_nested_too_deep_is_invalid_json_not_a_crash(client, queue, depth):
    payload = {
        **COMMENT,
        "comment": {
            "id": 7,
            "body": "hi",
            "x": json.loads("[" * (depth - 2) + "]" * (depth - 2)) if depth < 900 else None,
        },
    }
    body = json.dumps(payload).encode()
    if depth >= 900:  # json.dumps itself cannot nest this deep: build the text directly
        body = body.replace(b'"x": null', b'"x": ' + b"[" * depth + b"]" * depth)
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    response = client.post(
        inbound.HOOK_PATH,
        data=body,
        headers={
            "X-GitHub-Event": "issue_comment",
            "X-GitHub-Delivery": f"deep-{depth}",
            "X-Hub-Signature-256": signature,
            "Content-Type": "application/json",
        },
    )
    assert response.status_code == 400
    assert response.get_json()["code"] == "invalid_json"
    assert queue.count == 0


def test_a_signed_form_encoded_payload_nested_too_deep_is_invalid_json(client, queue):
    import urllib.parse

    body = urllib.parse.urlencode({"payload": '{"action": "created", "x": ' + "[" * 5000 + "]" * 5000 + "}"}).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    response = client.post(
        inbound.HOOK_PATH,
        data=body,
        headers={
            "X-GitHub-Event": "issue_comment",
            "X-GitHub-Delivery": "deep-form",
            "X-Hub-Signature-256": signature,
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    assert response.status_code == 400 and response.get_json()["code"] == "invalid_json"
    assert queue.count == 0


def test_ping_is_answered(client, queue):
    response = deliver(client, "ping", {"zen": "Keep it logically awesome.", "hook_id": 1})
    assert response.status_code == 200
    assert response.get_json() == {"status": "pong"}
    assert queue.count == 0


@pytest.mark.parametrize(
    "event,payload",
    [
        ("star", {"action": "created"}),
        ("issue_comment", {**COMMENT, "action": "edited"}),
        ("pull_request", {"action": "opened"}),
    ],
)
def test_events_without_a_handler_answer_204(client, queue, redis_client, event, payload):
    response = deliver(client, event, payload)
    assert response.status_code == 204
    assert response.data == b""
    assert queue.count == 0
    assert redis_client.keys("cd:gh:delivery:*") == []


def test_a_payload_larger_than_the_api_limit_is_taken(client, queue):
    # GitHub's payloads reach megabytes (a big installation, a long review); 64 KiB is the API's limit only.
    big = {**COMMENT, "comment": {"id": 7, "body": "x" * 200_000}}
    assert deliver(client, "issue_comment", big).status_code == 202
    assert queue.count == 1


def test_a_delivery_that_cannot_be_queued_answers_503_and_can_be_redelivered(client, queue, redis_client):
    # A key of the wrong type where RQ keeps its queue makes the real enqueue fail inside Redis.
    redis_client.set(queue.key, "not a list")
    failed = deliver(client, "issue_comment", COMMENT, delivery="d-4")
    assert failed.status_code == 503
    assert failed.get_json()["code"] == "unavailable"
    assert not redis_client.exists("cd:gh:delivery:d-4")
    redis_client.delete(queue.key)
    assert deliver(client, "issue_comment", COMMENT, delivery="d-4").status_code == 202
    assert queue.count == 1


def test_a_body_that_is_not_json_is_refused(client, queue):
    body = b"payload=not-json"
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    response = client.post(
        inbound.HOOK_PATH,
        data=body,
        headers={
            "X-GitHub-Event": "issue_comment",
            "X-GitHub-Delivery": "d-5",
            "X-Hub-Signature-256": signature,
            "Content-Type": "text/plain",
        },
    )
    assert response.status_code == 415
    assert queue.count == 0


def test_the_endpoint_refuses_to_exist_without_a_secret(redis_client):
    with pytest.raises(ValueError, match="GITHUB_WEBHOOK_SECRET"):
        inbound.create_blueprint(secret="", redis_client=redis_client, queue_name=QUEUE)


def test_redis_down_answers_503():
    app = Flask(__name__)
    problems.register(app)
    down = redis.Redis(port=free_port(), retry=Retry(NoBackoff(), 0))  # nothing listens there
    app.register_blueprint(inbound.create_blueprint(secret=SECRET, redis_client=down, queue_name=QUEUE))
    assert deliver(app.test_client(), "issue_comment", COMMENT).status_code == 503


@pytest.fixture
def live(github, redis_client, redis_url, tmp_path, monkeypatch):
    """The endpoint on a real HTTP server that the emulated GitHub delivers to, acme/docs on GitHub, and the
    worker's environment (its task builds its own context from it, as in production)."""
    settings = Settings(redis_url=redis_url, data_dir=tmp_path / "data", queue_name=QUEUE)
    for name, value in {
        **settings.to_env(),
        "GITHUB_APP_ID": str(github.app.id),
        "GITHUB_PRIVATE_KEY": github.app.private_key_pem,
        "GITHUB_WEBHOOK_SECRET": github.app.webhook_secret,
        "GITHUB_API_URL": github.url,
        "GITHUB_WEB_URL": github.url,
    }.items():
        monkeypatch.setenv(name, value)
    app = Flask(__name__)
    problems.register(app)
    app.register_blueprint(
        inbound.create_blueprint(secret=github.app.webhook_secret, redis_client=redis_client, queue_name=QUEUE)
    )
    github.add_repo(REPO, {"README.md": "# Docs\n"})
    with LiveServer(app) as server:
        github.deliver_to(server.url + inbound.HOOK_PATH)
        yield github


def work_on_events(redis_client) -> None:
    """A burst worker on the events queue only: the runs a comment queues are not this file's subject."""
    events = rq.Queue(github_events_queue(QUEUE), connection=redis_client)
    rq.SimpleWorker([events], connection=redis_client).work(burst=True, logging_level="WARNING")


def test_deliveries_from_github_run_their_handlers_in_the_worker_once(live, redis_client):
    github = live
    github.install("acme", [REPO])
    [delivery] = github.deliveries
    assert delivery.status == 202
    drain_queues(redis_client, QUEUE)
    projects = ProjectStore(redis_client, UlidGenerator())
    project = projects.find_by_repository("github", REPO)
    assert project is not None and project.enabled

    projects.disable(project.id, DisabledReason.ADMIN)
    assert github.redeliver(delivery.id).status == 200
    assert rq.Queue(github_events_queue(QUEUE), connection=redis_client).count == 0
    assert not projects.get(project.id).enabled  # the redelivery did not run the handler again


def test_a_delivery_whose_handler_fails_is_retried_and_acted_on_once(live, redis_client):
    github = live
    github.install("acme", [REPO])
    work_on_events(redis_client)
    bot = context.build(Settings.from_env()).github_bot()
    project = bot.services.projects.find_by_repository("github", REPO)
    job, number = pull_of_a_completed_job(github, bot, project, "README.md", "# Docs\n\nMore.\n")
    github.set_permission(REPO, "alice", "write")
    # Enough failures of the permission check to outlast the GitHub client's own retries once.
    github.inject("secondary", count=4, retry_after=0, match="collaborators")
    comment = github.comment(REPO, number, "alice", "@copydesk-test add a FAQ link")
    github.flush_deliveries()
    [rq_job] = rq.Queue(github_events_queue(QUEUE), connection=redis_client).get_jobs()
    work_on_events(redis_client)

    rq_job.refresh()
    assert rq_job.get_status() == rq.job.JobStatus.FINISHED and rq_job.retries_left < 3
    followups = [m for m in bot.services.jobs.conversation(job.id) if m.role.value == "user"][1:]
    assert [(m.author, m.source) for m in followups] == [("alice", "github")]
    assert github.reactions(comment["comment"]["id"]) == [("copydesk-test[bot]", "eyes")]


def test_the_worker_serves_github_events_before_queued_runs(live, redis_client):
    github = live
    runs = rq.Queue(QUEUE, connection=redis_client)
    run = runs.enqueue("time.sleep", 0)  # queued first, as a run waiting when a delivery comes in
    github.install("acme", [REPO])
    github.flush_deliveries()
    [event] = rq.Queue(github_events_queue(QUEUE), connection=redis_client).get_jobs()
    run_worker(context.build(Settings.from_env()), burst=True)

    run.refresh()
    event.refresh()
    assert event.get_status() == run.get_status() == rq.job.JobStatus.FINISHED
    assert event.ended_at <= run.started_at
