"""The dashboard's webhook pages over HTTP: add an endpoint and see its secret once, list, rotate, delete, the
delivery log after real attempts to a receiver on 127.0.0.1, send again, the address guard, who may see and change
them, and CSRF."""

import re
import time

import pytest

from tests.harness import LiveServer, deliver_webhooks
from tests.webhook_receivers import Receiver, stored_values

TEST_SECONDS = 60  # each test's bound; the dashboard fixture alone takes a few seconds
SECRET = re.compile(r'value="(whsec_[A-Za-z0-9+/=]+)"')


pytestmark = pytest.mark.usefixtures("time_bound")


@pytest.fixture
def allow_private(monkeypatch):
    # Set before `dash` builds its settings from the environment, as the operator's setting would be.
    monkeypatch.setenv("COPYDESK_WEBHOOK_ALLOW_PRIVATE", "true")


@pytest.fixture
def hooked_dash(allow_private, dash):
    """The dashboard with webhooks to 127.0.0.1 allowed (the operator's setting on)."""
    assert dash.ctx.settings.webhook_allow_private
    return dash


@pytest.fixture
def receiver():
    """A receiver on 127.0.0.1 that verifies signatures and fails its first delivery on purpose."""
    handler = Receiver(fail_first=1)
    with LiveServer(handler) as server:
        handler.url = f"{server.url}/hooks"
        yield handler


def hooks_path(project) -> str:
    return f"/dashboard/projects/{project.id}/webhooks"


def add(session, project, url: str, events=("job.created",), description: str = "CI board", page: str = "", **kwargs):
    """Send the page's add form (with the CSRF token of `page`, the webhooks page by default)."""
    return session.form(
        hooks_path(project),
        {"url": url, "events": list(events), "description": description},
        page=page or hooks_path(project),
        **kwargs,
    )


def secret_on(page) -> str:
    found = SECRET.search(page.text)
    assert found, page.text
    return found.group(1)


def wait_for(check, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return value


def test_an_added_endpoint_shows_its_secret_once_and_is_listed(hooked_dash):
    operator = hooked_dash.operator()
    project = hooked_dash.projects["local"]
    empty = operator.get(hooks_path(project))
    assert empty.status_code == 200 and "No webhook endpoints yet" in empty.text
    assert '<label for="hook-url">' in empty.text and 'value="job.completed"' in empty.text

    posted = add(
        operator, project, "http://127.0.0.1:9/hook", events=["job.created", "pr.opened"], allow_redirects=False
    )
    assert posted.status_code == 303 and posted.headers["Location"] == f"{hooks_path(project)}/secret"
    at_rest = stored_values(hooked_dash.ctx.services.redis)
    shown = operator.get(posted.headers["Location"])
    secret = secret_on(shown)
    assert 'data-copy="new-secret"' in shown.text and "never shows it again" in shown.text
    # Sealed while it waited for the page, and in no URL.
    assert secret.removeprefix("whsec_").encode() not in at_rest and secret not in posted.headers["Location"]

    again = operator.get(f"{hooks_path(project)}/secret")
    assert again.url.endswith(hooks_path(project)) and "whsec_" not in again.text
    [endpoint] = hooked_dash.ctx.services.webhooks.of_project(project.id)
    assert endpoint.events == ["job.created", "pr.opened"] and endpoint.description == "CI board"
    for shown_field in ("http://127.0.0.1:9/hook", "CI board", "job.created", "pr.opened", "enabled", endpoint.id):
        assert shown_field in again.text, shown_field
    projects = operator.get("/dashboard/accounts/local/projects").text
    assert f'href="{hooks_path(project)}"' in projects


def test_rotating_shows_the_new_secret_once_and_delete_removes_the_endpoint(hooked_dash):
    operator = hooked_dash.operator()
    project = hooked_dash.projects["local"]
    first = secret_on(add(operator, project, "http://127.0.0.1:9/hook"))
    [endpoint] = hooked_dash.ctx.services.webhooks.of_project(project.id)
    rotated = operator.form(f"{hooks_path(project)}/{endpoint.id}/rotate", {}, page=hooks_path(project))
    second = secret_on(rotated)
    assert second != first and "previous secret" in rotated.text and rotated.history[0].status_code == 303
    assert "whsec_" not in operator.get(f"{hooks_path(project)}/secret").text
    assert hooked_dash.ctx.services.webhooks.find(endpoint.id).sealed_previous is not None

    deleted = operator.form(f"{hooks_path(project)}/{endpoint.id}/delete", {}, page=hooks_path(project))
    assert deleted.url.endswith(hooks_path(project)) and "No webhook endpoints yet" in deleted.text
    assert hooked_dash.ctx.services.webhooks.of_project(project.id) == []
    gone = operator.form(f"{hooks_path(project)}/{endpoint.id}/rotate", {}, page=hooks_path(project))
    assert gone.status_code == 404 and "no webhook endpoint" in gone.text


def test_signing_out_drops_a_secret_still_waiting_to_be_shown(hooked_dash):
    operator = hooked_dash.operator()
    project = hooked_dash.projects["local"]
    store = hooked_dash.ctx.services.redis
    posted = add(operator, project, "http://127.0.0.1:9/hook", allow_redirects=False)
    assert posted.status_code == 303 and posted.headers["Location"] == f"{hooks_path(project)}/secret"
    [session_key] = store.keys("cd:dash:session:*")
    session_hash = session_key.removeprefix(b"cd:dash:session:")
    assert [k for k in store.keys("*") if session_hash in k and k != session_key], "the secret is not waiting"

    out = operator.form("/dashboard/logout", {}, page=hooks_path(project))
    assert out.url.endswith("/dashboard/signin")
    assert [k for k in store.keys("*") if session_hash in k] == []  # nothing of the session is left, secret included
    assert operator.get(hooked_dash.login_link()).url.endswith("/dashboard/")
    again = operator.get(f"{hooks_path(project)}/secret")
    assert again.url.endswith(hooks_path(project)) and "whsec_" not in again.text


def test_the_delivery_log_shows_attempts_and_a_delivery_can_be_sent_again(hooked_dash, receiver):
    operator = hooked_dash.operator()
    project = hooked_dash.projects["local"]
    receiver.secrets.append(secret_on(add(operator, project, receiver.url)))
    [endpoint] = hooked_dash.ctx.services.webhooks.of_project(project.id)
    log_path = f"{hooks_path(project)}/{endpoint.id}"
    assert "No deliveries yet" in operator.get(log_path).text

    services = hooked_dash.ctx.services
    job, _ = services.jobs.create(project, prompt="Add an FAQ", model="scripted:demo", ref="main", as_draft=False)
    deliver_webhooks(hooked_dash.ctx)  # the worker's fan-out, once, in this process (first attempts too)
    failed = operator.get(log_path).text
    [delivery] = services.webhooks.log(endpoint.id)
    assert delivery.id in failed and job.id in failed and "job.created" in failed
    assert "pending" in failed and "HTTP 500" in failed and f"{delivery.latency_ms} ms" in failed

    resent = operator.form(f"{log_path}/deliveries/{delivery.id}/resend", {}, page=log_path)
    assert resent.url.endswith(f"{log_path}?resent={delivery.id}") and "is queued" in resent.text
    # A worker makes the attempt (as for the API's re-send), here this process's delivery lanes.
    deliver_webhooks(hooked_dash.ctx)
    wait_for(lambda: len(receiver.received) == 2, 10, "the re-sent delivery")
    assert [r["headers"]["webhook-id"] for r in receiver.received] == [delivery.id, delivery.id]
    assert all(r["verified"] for r in receiver.received), "the secret the page showed does not verify"
    after = operator.get(log_path).text
    row = after[after.index(f'<tr id="{delivery.id}">') :]
    assert "succeeded" in row and "HTTP 200" in row and "<td>2</td>" in row


def test_an_internal_url_is_refused_on_the_page_when_the_operator_has_not_allowed_it(dash):
    assert not dash.ctx.settings.webhook_allow_private
    operator = dash.operator()
    project = dash.projects["local"]
    refused = add(operator, project, "http://127.0.0.1:8000/hook", description="mine")
    assert refused.status_code == 400 and 'role="alert"' in refused.text
    assert "refused" in refused.text and "loopback, private or link-local" in refused.text
    assert 'value="http://127.0.0.1:8000/hook"' in refused.text and 'value="mine"' in refused.text  # kept to fix
    for url, events, says in (
        ("ftp://example.com/", [], "http"),
        ("", [], "required"),
        ("https://example.com/", ["job.exploded"], "event types"),
    ):
        answer = add(operator, project, url, events=events)
        assert answer.status_code == 400 and says in answer.text, (url, answer.text)
    assert dash.ctx.services.webhooks.of_project(project.id) == []


def test_only_admins_of_the_projects_account_see_or_change_its_webhooks(hooked_dash):
    project = hooked_dash.projects["acme/docs"]
    alice = hooked_dash.signed_in("alice")
    assert secret_on(add(alice, project, "http://127.0.0.1:9/hook")).startswith("whsec_")
    [endpoint] = hooked_dash.ctx.services.webhooks.of_project(project.id)
    assert f'href="{hooks_path(project)}"' in alice.get("/dashboard/accounts/acme/projects").text

    bob = hooked_dash.signed_in("bob")  # a member of acme, not an admin
    assert f'href="{hooks_path(project)}"' not in bob.get("/dashboard/accounts/acme/projects").text
    carol = hooked_dash.signed_in("carol")  # admin of globex only: acme's project reads as not there
    for person, status in ((bob, 403), (carol, 404)):
        assert person.get(hooks_path(project)).status_code == status
        assert person.get(f"{hooks_path(project)}/{endpoint.id}").status_code == status
        for action in ("rotate", "delete", "enable"):
            answer = person.form(f"{hooks_path(project)}/{endpoint.id}/{action}", {}, page="/dashboard/")
            assert answer.status_code == status and "whsec_" not in answer.text, (action, status)
        assert add(person, project, "http://127.0.0.1:9/other", page="/dashboard/").status_code == status
    assert hooked_dash.ctx.services.webhooks.of_project(project.id) == [endpoint]  # nothing changed
    # An endpoint id under a project the person administers, but not its own: not found.
    operator = hooked_dash.operator()
    local = hooked_dash.projects["local"]
    assert operator.get(hooks_path(project)).status_code == 404
    assert operator.get(f"{hooks_path(local)}/{endpoint.id}").status_code == 404
    assert hooked_dash.ctx.services.webhooks.find(endpoint.id) == endpoint


def test_webhook_forms_without_the_csrf_token_are_refused(hooked_dash):
    operator = hooked_dash.operator()
    project = hooked_dash.projects["local"]
    refused = operator.post(hooks_path(project), data={"url": "http://127.0.0.1:9/hook"})
    assert refused.status_code == 403 and "security token" in refused.text
    assert hooked_dash.ctx.services.webhooks.of_project(project.id) == []
    add(operator, project, "http://127.0.0.1:9/hook")
    [endpoint] = hooked_dash.ctx.services.webhooks.of_project(project.id)
    for action in ("rotate", "delete"):
        answer = operator.post(f"{hooks_path(project)}/{endpoint.id}/{action}", data={"csrf_token": "stale"})
        assert answer.status_code == 403 and "whsec_" not in answer.text
    assert hooked_dash.ctx.services.webhooks.find(endpoint.id) == endpoint
    anonymous = type(operator)(hooked_dash.url)
    assert anonymous.get(hooks_path(project), allow_redirects=False).status_code == 303  # to sign in


@pytest.fixture
def one_resend_a_minute(monkeypatch):
    # Set before `dash` builds its settings from the environment.
    monkeypatch.setenv("COPYDESK_WEBHOOK_RESENDS_PER_ENDPOINT", "1")


def test_send_again_is_rate_limited_on_the_page_as_on_the_api(one_resend_a_minute, hooked_dash, receiver):
    operator = hooked_dash.operator()
    project = hooked_dash.projects["local"]
    add(operator, project, receiver.url)
    [endpoint] = hooked_dash.ctx.services.webhooks.of_project(project.id)
    log_path = f"{hooks_path(project)}/{endpoint.id}"
    hooked_dash.ctx.services.jobs.create(
        project, prompt="Add an FAQ", model="scripted:demo", ref="main", as_draft=False
    )
    deliver_webhooks(hooked_dash.ctx)
    [delivery] = hooked_dash.ctx.services.webhooks.log(endpoint.id)
    resend = f"{log_path}/deliveries/{delivery.id}/resend"
    assert operator.form(resend, {}, page=log_path).status_code == 200  # followed to the log
    refused = operator.form(resend, {}, page=log_path, allow_redirects=False)
    assert refused.status_code == 429 and 0 < int(refused.headers["Retry-After"]) <= 60
    assert "limited to 1 a minute" in refused.text
