"""The dashboard over HTTP: sign-in with GitHub (through the emulator) and with the operator's link, sessions,
CSRF, headers, who sees and manages what, keys and the API, and a clear page for every odd case."""

import json
import re
import time
from pathlib import Path

import requests

from bot.dashboard import access
from service import billing
from service.agent.model import Usage
from service.models import JobStatus, MessageStatus
from service.projectstate import DisabledReason
from service.store.jobs import RunOutcome
from tests.dashboard_fixtures import Browserless
from tests.flow_scripts import FAQ, finish
from tests.webhook_receivers import stored_values


def create_job(dash, project, prompt: str = "Add an FAQ") -> dict:
    """A job created through the API with a fresh key of the local account; its record."""
    _key, key = dash.ctx.services.keys.create(account="local")
    response = requests.post(
        f"{dash.url}/v2/agent/{project.id}/job",
        json={"prompt": prompt},
        headers={"Authorization": f"Bearer {key}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text
    return response.json()


def test_signing_in_with_github_shows_the_accounts_with_roles(dash):
    alice = dash.signed_in("alice")
    home = alice.get("/dashboard/")
    assert home.status_code == 200 and "alice" in home.text and "acme" in home.text and "globex" not in home.text
    assert "admin" in home.text
    cookie = next(c for c in alice.cookies if c.name == "copydesk-session")
    assert cookie.has_nonstandard_attr("HttpOnly") and not cookie.secure  # Secure only on https (below)
    # The session in Redis keeps the user token sealed, never in plain text; the cookie is not the Redis key.
    store = dash.ctx.services.redis
    stored = b"".join(store.get(k) for k in store.keys("cd:dash:session:*"))
    assert b"ghu_" not in stored and b'"sealed_token": "gAAAA' in stored
    assert not store.exists(f"cd:dash:session:{cookie.value}")


def test_the_session_cookie_is_httponly_lax_and_secure_on_https(dash):
    from bot.app import create_app

    settings = dash.ctx.settings.with_overrides(base_url="https://copydesk.example")
    client = create_app(settings).test_client()
    answer = client.get(f"/dashboard/login/link?token={dash.login_link().rsplit('=', 1)[1]}")
    header = answer.headers["Set-Cookie"]
    assert header.startswith("__Host-copydesk-session=") and "Secure" in header and "HttpOnly" in header
    assert "SameSite=Lax" in header and "Path=/" in header


def test_every_page_has_a_csp_and_the_other_security_headers(dash):
    operator = dash.operator()
    for path in (
        "/dashboard/signin",
        "/dashboard/",
        "/dashboard/accounts/local/keys",
        f"/dashboard/projects/{dash.projects['local'].id}/jobs",
        "/dashboard/nope/at/all/x",
    ):
        response = operator.get(path)
        csp = response.headers.get("Content-Security-Policy", "")
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp, path
        assert (
            response.headers["X-Content-Type-Options"] == "nosniff" and response.headers["Cache-Control"] == "no-store"
        )
    assert "<script>" not in operator.get("/dashboard/").text  # no inline scripts for the CSP to forbid


def test_the_login_link_works_once(dash):
    link = dash.login_link()
    first, second = requests.Session(), requests.Session()
    assert first.get(link, timeout=10).url.endswith("/dashboard/")
    refused = second.get(link, timeout=10)
    assert refused.status_code == 403 and "used already" in refused.text
    assert second.get(f"{dash.url}/dashboard/", timeout=10).url.endswith("/dashboard/signin?next=/dashboard/")


def test_a_form_post_without_the_csrf_token_is_refused_and_changes_nothing(dash):
    operator = dash.operator()
    refused = operator.post(
        "/dashboard/accounts/local/keys", data={"name": "x", "scope": "all", "access": "read_write", "expiry": "90"}
    )
    assert refused.status_code == 403 and "security token" in refused.text
    wrong = operator.post(
        "/dashboard/accounts/local/keys",
        data={"csrf_token": "nope", "name": "x", "scope": "all", "access": "read_write", "expiry": "90"},
    )
    assert wrong.status_code == 403
    assert dash.ctx.services.keys.of_account("local") == []


def test_sessions_end_on_sign_out_and_after_idle_and_absolute_time(dash):
    operator = dash.operator()
    out = operator.form("/dashboard/logout", {})
    assert out.url.endswith("/dashboard/signin")
    assert operator.get("/dashboard/", allow_redirects=False).status_code == 303
    idle = dash.operator()
    age_sessions(dash, seen_at=dash.ctx.settings.session_idle_seconds + 5)
    assert idle.get("/dashboard/", allow_redirects=False).status_code == 303
    old = dash.operator()
    age_sessions(dash, created_at=dash.ctx.settings.session_max_seconds + 5)
    assert old.get("/dashboard/", allow_redirects=False).status_code == 303


def test_a_key_made_on_the_page_works_with_the_api_until_revoked(dash):
    alice = dash.signed_in("alice")
    project = dash.projects["acme/docs"]
    created = alice.form(
        "/dashboard/accounts/acme/keys",
        {"name": "ci", "scope": "chosen", "projects": project.id, "access": "read_write", "expiry": "30"},
        page="/dashboard/accounts/acme/keys",
    )
    assert created.status_code == 200
    plaintext = re.search(r'value="(cdk_[0-9A-Za-z]+)"', created.text).group(1)
    api = {"Authorization": f"Bearer {plaintext}"}
    listed = requests.get(f"{dash.url}/v2/agent/{project.id}/jobs", headers=api, timeout=10)
    assert listed.status_code == 200
    keys = alice.get("/dashboard/accounts/acme/keys").text
    assert plaintext not in keys and plaintext[:16] in keys
    assert "expires in 29 days" in keys or "expires in 30 days" in keys
    assert "alice" in keys and ">1<" in keys  # creator and use count
    key = dash.ctx.services.keys.of_account("acme")[0]
    alice.form(f"/dashboard/accounts/acme/keys/{key.id}/revoke", {}, page="/dashboard/accounts/acme/keys")
    assert requests.get(f"{dash.url}/v2/agent/{project.id}/jobs", headers=api, timeout=10).status_code == 401
    audit = [(e.actor, e.action) for e in dash.ctx.services.keys.audit("acme")]
    assert audit == [("alice", "revoked"), ("alice", "created")]
    gone = alice.form("/dashboard/accounts/acme/keys/key_000000000000/revoke", {}, page="/dashboard/accounts/acme/keys")
    assert gone.status_code == 404 and "no key" in gone.text


def test_a_read_only_key_reads_but_gets_403_on_writes_and_an_expired_key_gets_401(dash):
    project = dash.projects["local"]
    keys = dash.ctx.services.keys
    from service.models import KeyAccess

    _key, read_only = keys.create(account="local", name="ro", access=KeyAccess.READ_ONLY)
    headers = {"Authorization": f"Bearer {read_only}", "Content-Type": "application/json"}
    assert requests.get(f"{dash.url}/v2/agent/{project.id}/jobs", headers=headers, timeout=10).status_code == 200
    refused = requests.post(f"{dash.url}/v2/agent/{project.id}/job", headers=headers, json={"prompt": "x"}, timeout=10)
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    assert dash.ctx.services.jobs.page(project.id, status=None, limit=5, cursor=None)[0] == []
    key, expiring = keys.create(account="local", name="old", expires_in_days=7)
    stored = dash.ctx.services.redis.get(f"cd:apikey:{key.id}").decode()
    dash.ctx.services.redis.set(f"cd:apikey:{key.id}", stored.replace(key.expires_at, "2020-01-01T00:00:00.000Z"))
    expired = requests.get(
        f"{dash.url}/v2/agent/{project.id}/jobs", headers={"Authorization": f"Bearer {expiring}"}, timeout=10
    )
    assert expired.status_code == 401 and "expired" in expired.json()["detail"]
    page = dash.operator().get("/dashboard/accounts/local/keys").text
    assert "expired" in page and "read-only" in page


def test_at_most_ten_new_keys_per_account_per_hour(dash):
    operator = dash.operator()
    for n in range(10):
        made = operator.form(
            "/dashboard/accounts/local/keys",
            {"name": f"k{n}", "scope": "all", "access": "read_only", "expiry": "never"},
        )
        assert made.status_code == 200, made.text
    refused = operator.form(
        "/dashboard/accounts/local/keys", {"name": "k11", "scope": "all", "access": "read_only", "expiry": "7"}
    )
    assert refused.status_code == 429 and "10 API keys per hour" in refused.text
    assert len(dash.ctx.services.keys.of_account("local")) == 10


def test_bad_key_forms_get_a_clear_page(dash):
    operator = dash.operator()
    for data, words in (
        ({"name": "", "scope": "all", "access": "read_only", "expiry": "90"}, "give the key a name"),
        ({"name": "x", "scope": "chosen", "access": "read_only", "expiry": "90"}, "at least one"),
        ({"name": "x", "scope": "all", "access": "admin", "expiry": "90"}, "read-only or read-write"),
        ({"name": "x", "scope": "all", "access": "read_only", "expiry": "365"}, "never"),
        (
            {
                "name": "x",
                "scope": "chosen",
                "projects": dash.projects["acme/docs"].id,
                "access": "read_only",
                "expiry": "90",
            },
            "has no project",
        ),
    ):
        page = operator.form("/dashboard/accounts/local/keys", data)
        assert page.status_code == 400 and words in page.text, (data, page.text[:300])


def test_a_member_cannot_manage_keys_and_another_accounts_projects_stay_hidden(dash):
    bob = dash.signed_in("bob")
    assert "member" in bob.get("/dashboard/").text
    page = bob.get("/dashboard/accounts/acme/keys")
    assert page.status_code == 403 and "Only an admin of acme" in page.text
    post = bob.form(
        "/dashboard/accounts/acme/keys", {"name": "x", "scope": "all", "access": "read_write", "expiry": "90"}
    )
    assert post.status_code == 403 and dash.ctx.services.keys.of_account("acme") == []
    assert bob.get("/dashboard/accounts/acme/projects").status_code == 200
    carol = dash.signed_in("carol")
    for path in (
        "/dashboard/accounts/acme/projects",
        f"/dashboard/projects/{dash.projects['acme/docs'].id}/jobs",
        f"/local/{dash.projects['local'].id}",
    ):
        hidden = carol.get(path)
        assert hidden.status_code == 404 and "acme/docs" not in hidden.text, path


def test_odd_sign_ins_get_clear_pages(dash):
    # No installation at all.
    dave = dash.signed_in("dave")
    home = dave.get("/dashboard/")
    assert home.status_code == 403 and "No installations" in home.text
    # A callback with a state this browser never started, and one used twice.
    stranger = requests.Session()
    forged = stranger.get(f"{dash.url}/dashboard/login/github/callback?code=abc&state=forged", timeout=10)
    assert forged.status_code == 400 and "Sign-in link expired" in forged.text
    # The person pressed Cancel on GitHub.
    cancelled = stranger.get(f"{dash.url}/dashboard/login/github/callback?error=access_denied&state=x", timeout=10)
    assert cancelled.status_code == 400 and "cancelled" in cancelled.text
    # The GitHub authorization is revoked: the next check with GitHub ends the session with a clear page.
    alice = dash.signed_in("alice")
    dash.github.revoke_authorization("alice")
    stale_sessions(dash)
    revoked = alice.get("/dashboard/accounts/acme/keys")
    assert revoked.status_code == 401 and "authorization ended" in revoked.text
    assert alice.get("/dashboard/", allow_redirects=False).status_code == 303


def test_roles_are_checked_again_with_github_and_fail_closed(dash):
    alice = dash.signed_in("alice")
    dash.github.add_member("acme", "alice", "member")  # demoted on GitHub
    assert alice.get("/dashboard/accounts/acme/keys").status_code == 200  # cached briefly
    stale_sessions(dash)
    assert alice.get("/dashboard/accounts/acme/keys").status_code == 403
    dash.github.add_member("acme", "alice", "admin")
    stale_sessions(dash)
    dash.github.inject("server", 10, match="memberships")  # GitHub cannot answer: no admin rights
    page = alice.get("/dashboard/accounts/acme/keys")
    assert page.status_code == 403


def test_with_github_down_the_role_check_waits_a_while_before_asking_again(dash):
    alice = dash.signed_in("alice")
    stale_sessions(dash)
    dash.github.inject("server", 100, match="/user/installations")  # GitHub answers none of these checks

    def asked() -> int:
        return sum(1 for r in list(dash.github.requests) if r.path == "/user/installations")

    before = asked()
    assert alice.get("/dashboard/accounts/acme/keys").status_code == 403  # no admin rights: fail closed
    first = asked()
    assert first > before
    again = alice.get("/dashboard/accounts/acme/keys")
    assert again.status_code == 403 and "Admins only" in again.text  # still closed, still seeing acme
    assert asked() == first  # the request right after did not wait on GitHub again
    # Once the retry interval has passed, GitHub is asked again.
    age_sessions(dash, checked_at=access.ROLE_TTL_SECONDS + 1)
    assert alice.get("/dashboard/accounts/acme/keys").status_code == 403
    assert asked() > first


def test_a_new_api_key_is_sealed_while_it_waits_for_its_page(dash):
    operator = dash.operator()
    keys = "/dashboard/accounts/local/keys"
    posted = operator.form(
        keys,
        {"name": "sealed", "scope": "all", "access": "read_only", "expiry": "90"},
        page=keys,
        allow_redirects=False,
    )
    assert posted.status_code == 303
    at_rest = stored_values(dash.ctx.services.redis)
    plaintext = re.search(r'value="(cdk_[0-9A-Za-z]+)"', operator.get(posted.headers["Location"]).text).group(1)
    assert plaintext.encode() not in at_rest and plaintext.removeprefix("cdk_").encode() not in at_rest


def stale_sessions(dash) -> None:
    """Make every session's cached roles older than their time to live."""
    age_sessions(dash, checked_at=access.ROLE_TTL_SECONDS + 5)


def age_sessions(dash, **seconds_ago) -> None:
    """Move the given clocks of every session (seen_at, created_at, checked_at) that many seconds back."""
    store = dash.ctx.services.redis
    for key in store.keys("cd:dash:session:*"):
        record = json.loads(store.get(key))
        record.update({name: time.time() - ago for name, ago in seconds_ago.items()})
        store.set(key, json.dumps(record), keepttl=True)


def test_local_pull_request_page_is_sanitised_and_its_comment_box_sends_a_follow_up(dash):
    project = dash.projects["local"]
    dash.script([FAQ, finish()], [])
    _key, plaintext = dash.ctx.services.keys.create(account="local")
    job = requests.post(
        f"{dash.url}/v2/agent/{project.id}/job",
        json={"prompt": "Add an FAQ"},
        timeout=10,
        headers={"Authorization": f"Bearer {plaintext}"},
    ).json()
    dash.drain()
    pull = dash.ctx.local.pull(project.id, 1)
    pull.body += "\n\n<script>alert(1)</script> [x](javascript:alert(2)) **bold**"
    dash.ctx.local._save(pull)
    operator = dash.operator()
    page = operator.get(f"/local/{project.id}/pulls/1")
    assert "<script>alert(1)" not in page.text and "&lt;script&gt;" in page.text
    assert 'href="javascript:' not in page.text and "<strong>bold</strong>" in page.text
    assert project.repository not in page.text and ">open<" in page.text
    sent = operator.form(
        f"/local/{project.id}/pulls/1/comments",
        {"body": "Please add a Windows section"},
        page=f"/local/{project.id}/pulls/1",
    )
    assert sent.status_code == 200
    conversation = dash.ctx.services.jobs.conversation(job["id"])
    assert conversation[-1].content == "Please add a Windows section" and conversation[-1].source == "local"
    assert dash.ctx.services.jobs.get(job["id"]).status is JobStatus.ACTIVE
    assert "Please add a Windows section" in operator.get(f"/local/{project.id}/pulls/1").text


def test_admins_switch_projects_and_the_operator_adds_local_ones(dash, make_repo):
    alice = dash.signed_in("alice")
    project = dash.projects["acme/docs"]
    page = alice.get("/dashboard/accounts/acme/projects").text
    assert project.id in page and "0 active" in page and "enabled" in page
    alice.form(f"/dashboard/accounts/acme/projects/{project.id}/disable", {}, page="/dashboard/accounts/acme/projects")
    assert dash.ctx.services.projects.get(project.id).enabled is False
    assert "an admin switched it off" in alice.get("/dashboard/accounts/acme/projects").text
    alice.form(f"/dashboard/accounts/acme/projects/{project.id}/enable", {}, page="/dashboard/accounts/acme/projects")
    assert dash.ctx.services.projects.get(project.id).enabled is True
    # Only the operator adds local projects; a GitHub admin is told so.
    refused = alice.form(
        "/dashboard/accounts/acme/projects",
        {"repository": "/tmp/x.git", "ref": "main"},
        page="/dashboard/accounts/acme/projects",
    )
    assert refused.status_code == 403 and "Only the operator" in refused.text
    bob = dash.signed_in("bob")
    member = bob.form(
        f"/dashboard/accounts/acme/projects/{project.id}/disable", {}, page="/dashboard/accounts/acme/projects"
    )
    assert member.status_code == 403 and dash.ctx.services.projects.get(project.id).enabled is True
    operator = dash.operator()
    added = operator.form(
        "/dashboard/accounts/local/projects",
        {"repository": str(make_repo({"a.md": "# A\n"}, name="added")), "ref": "main"},
        page="/dashboard/accounts/local/projects",
    )
    assert added.status_code == 200 and added.text.count("Project id") == 2
    wrong = operator.form(
        "/dashboard/accounts/local/projects",
        {"repository": "/nowhere.git", "ref": "main"},
        page="/dashboard/accounts/local/projects",
    )
    assert wrong.status_code == 400 and "does not exist" in wrong.text


def test_the_jobs_list_pages_and_filters_newest_first(dash):
    project = dash.projects["local"]
    jobs = dash.ctx.services.jobs
    made = [
        jobs.create(
            project, prompt=f"prompt number {n} " + "x" * 200, model="scripted:demo", ref="main", as_draft=False
        )[0]
        for n in range(23)
    ]
    jobs.archive(made[0].id)
    operator = dash.operator()
    first = operator.get(f"/dashboard/projects/{project.id}/jobs").text
    assert first.index("prompt number 22") < first.index("prompt number 21") and "prompt number 2 " not in first
    assert "x" * 200 not in first and "…" in first  # an excerpt
    older = re.search(r'href="(/dashboard/projects/[^"]+cursor=[^"]+)"', first).group(1)
    second = operator.get(older.replace("&amp;", "&")).text
    assert "prompt number 2 " in second and "prompt number 0 " in second and "cursor=" not in second
    archived = operator.get(f"/dashboard/projects/{project.id}/jobs?status=archived").text
    assert "prompt number 0 " in archived and "prompt number 1 " not in archived
    bad = operator.get(f"/dashboard/projects/{project.id}/jobs?status=finished")
    assert bad.status_code == 400 and "status" in bad.text


def test_the_job_page_sends_follow_ups_archives_and_says_why_a_job_failed(dash):
    project = dash.projects["local"]
    dash.script([FAQ, finish()], [])
    _key, key = dash.ctx.services.keys.create(account="local")
    headers = {"Authorization": f"Bearer {key}"}
    failing = requests.post(
        f"{dash.url}/v2/agent/{project.id}/job", json={"prompt": "Fix", "ref": "nope"}, headers=headers, timeout=10
    ).json()
    job = requests.post(
        f"{dash.url}/v2/agent/{project.id}/job", json={"prompt": "Add an FAQ"}, headers=headers, timeout=10
    ).json()
    dash.drain()
    operator = dash.operator()
    failed = operator.get(f"/dashboard/projects/{project.id}/jobs/{failing['id']}").text
    assert "The job failed" in failed and "ref_not_found" in failed and "nope" in failed
    path = f"/dashboard/projects/{project.id}/jobs/{job['id']}"
    done = operator.get(path).text
    assert "completed" in done and "+# FAQ" in done and "docs/faq.md" in done and 'id="pr-link"' in done
    operator.form(f"{path}/message", {"prompt": "And a Windows section"}, page=path)
    assert [m.content for m in dash.ctx.services.jobs.conversation(job["id"])][-1] == "And a Windows section"
    empty = operator.form(f"{path}/message", {"prompt": "  "}, page=path)
    assert empty.status_code == 400 and "must not be empty" in empty.text
    operator.form(f"{path}/archive", {}, page=path)
    assert dash.ctx.services.jobs.get(job["id"]).status is JobStatus.ARCHIVED
    archived = operator.get(path).text
    assert "Send a follow-up" not in archived and "archived" in archived
    # The page's live part answers on its own, for the page's script.
    live = operator.get(f"{path}/live")
    assert live.status_code == 200 and 'data-status="archived"' in live.text and "<html" not in live.text
    updated = dash.ctx.services.jobs.get(job["id"]).updated_at
    assert operator.get(f"{path}/live", params={"since": updated}).status_code == 200  # not active: always sent
    operator.form(
        f"/dashboard/projects/{project.id}/jobs/{failing['id']}/message",
        {"prompt": "again"},
        page=f"/dashboard/projects/{project.id}/jobs/{failing['id']}",
    )
    active = dash.ctx.services.jobs.get(failing["id"])
    live_path = f"/dashboard/projects/{project.id}/jobs/{failing['id']}/live"
    assert operator.get(live_path, params={"since": active.updated_at}).status_code == 204  # unchanged
    assert operator.get(live_path, params={"since": "2020-01-01T00:00:00.000Z"}).status_code == 200
    gone = operator.get(f"/dashboard/projects/{project.id}/jobs/job_01JD0000000000000000000000")
    assert gone.status_code == 404 and "no job" in gone.text


def test_a_sign_in_finished_in_another_browser_or_with_a_bad_code_is_refused(dash):
    dash.github.sign_in_browser("alice")
    started = requests.Session()
    authorize = started.get(f"{dash.url}/dashboard/login/github", timeout=10)
    state = re.search(r'name="state" value="([^"]+)"', authorize.text).group(1)
    # Another browser (no sign-in cookie of this flow) brings the state back: refused, and the state is used up.
    other = requests.Session()
    stolen = other.get(f"{dash.url}/dashboard/login/github/callback?code=x&state={state}", timeout=10)
    assert stolen.status_code == 400 and "did not start here" in stolen.text
    again = started.get(f"{dash.url}/dashboard/login/github/callback?code=x&state={state}", timeout=10)
    assert again.status_code == 400 and "Sign-in link expired" in again.text
    # The right browser with a code GitHub never issued.
    authorize = started.get(f"{dash.url}/dashboard/login/github", timeout=10)
    state = re.search(r'name="state" value="([^"]+)"', authorize.text).group(1)
    refused = started.get(f"{dash.url}/dashboard/login/github/callback?code=forged&state={state}", timeout=10)
    assert refused.status_code == 400 and "GitHub refused the sign-in" in refused.text
    assert started.get(f"{dash.url}/dashboard/", allow_redirects=False, timeout=10).status_code == 303


def test_github_down_during_sign_in_gets_a_clear_page(dash):
    dash.github.inject("server", 20, match="GET /user")
    dash.github.sign_in_browser("alice")
    session = requests.Session()
    authorize = session.get(f"{dash.url}/dashboard/login/github", timeout=10)
    fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', authorize.text))
    page = session.post(authorize.url, data={**fields, "decision": "authorize"}, timeout=30)
    assert page.status_code == 502 and "could not" in page.text.lower()
    assert session.get(f"{dash.url}/dashboard/", allow_redirects=False, timeout=10).status_code == 303


def test_the_job_events_route_streams_to_the_session_and_hides_the_job_from_others(dash):
    project = dash.projects["local"]
    dash.script([FAQ, finish()], [])
    job = create_job(dash, project)
    dash.drain()
    path = f"/dashboard/projects/{project.id}/jobs/{job['id']}/events"
    stream = dash.operator().get(f"{path}?after=0")
    assert stream.status_code == 200 and stream.headers["Content-Type"].startswith("text/event-stream")
    assert "event: job.created" in stream.text and "event: job.completed" in stream.text
    hidden = dash.signed_in("carol").get(f"{path}?after=0")
    assert hidden.status_code == 404 and "event:" not in hidden.text


def test_a_follow_up_from_the_dashboard_is_refused_past_the_accounts_monthly_cap_as_on_the_api(dash):
    project = dash.projects["local"]
    dash.script([FAQ, finish()], [])
    job = create_job(dash, project)
    dash.drain()
    usage = dash.ctx.services.usage
    usage.add("local", "local", None, {"inputTokens": 10, "outputTokens": 0})
    usage.set_cap("local", "local", 10)
    refused = dash.operator().form(
        f"/dashboard/projects/{project.id}/jobs/{job['id']}/message", {"prompt": "And a glossary"}
    )
    assert refused.status_code == 429
    assert [m.content for m in dash.ctx.services.jobs.conversation(job["id"])][-1] != "And a glossary"


def test_a_github_user_named_like_a_local_account_sees_none_of_it_and_their_keys_stay_on_github(dash):
    local = dash.projects["local"]
    operator = dash.operator()
    operator.form(
        "/dashboard/accounts/local/keys",
        {"name": "operator's", "scope": "all", "access": "read_write", "expiry": "90"},
        page="/dashboard/accounts/local/keys",
    )
    operators_key = dash.ctx.services.keys.of_account("local")[0]
    assert operators_key.host == "local"
    dash.github.add_user("local")  # a GitHub user whose login is the default local account's name
    dash.github.add_installation("local")
    namesake = dash.signed_in("local")
    assert "local" in namesake.get("/dashboard/").text
    projects = namesake.get("/dashboard/accounts/local/projects")
    assert projects.status_code == 200 and local.id not in projects.text
    for path in (f"/dashboard/projects/{local.id}/jobs", f"/local/{local.id}"):
        assert namesake.get(path).status_code == 404, path
    keys = "/dashboard/accounts/local/keys"
    assert operators_key.prefix not in namesake.get(keys).text  # neither the key nor its audit line
    chosen = namesake.form(
        keys, {"name": "x", "scope": "chosen", "projects": local.id, "access": "read_write", "expiry": "90"}, page=keys
    )
    assert chosen.status_code == 400 and "has no project" in chosen.text
    revoke = namesake.form(f"{keys}/{operators_key.id}/revoke", {}, page=keys)
    assert revoke.status_code == 404 and dash.ctx.services.keys.find(operators_key.id).revoked_at is None
    made = namesake.form(keys, {"name": "mine", "scope": "all", "access": "read_write", "expiry": "90"}, page=keys)
    plaintext = re.search(r'value="(cdk_[0-9A-Za-z]+)"', made.text).group(1)
    theirs = requests.get(
        f"{dash.url}/v2/agent/{local.id}/jobs", headers={"Authorization": f"Bearer {plaintext}"}, timeout=10
    )
    assert theirs.status_code == 404
    assert [k.host for k in dash.ctx.services.keys.of_account("local")] == ["github", "local"]


def test_keys_stored_before_the_code_host_was_recorded_keep_working_as_they_did():
    from service.models import ApiKey, Project

    local = Project(id="prj_1", account="local", host="local", repository="/srv/r.git", web_url="", ref="main")
    github = Project(id="prj_2", account="local", host="github", repository="local/r", web_url="", ref="main")
    by_operator = ApiKey.from_dict(
        {"id": "key_a", "account": "local", "hash": "", "created_at": "", "created_by": "operator"}
    )
    by_a_github_login = ApiKey.from_dict(
        {"id": "key_b", "account": "local", "hash": "", "created_at": "", "created_by": "local"}
    )
    assert by_operator.allows(local) and by_operator.allows(github)
    assert not by_a_github_login.allows(local) and by_a_github_login.allows(github)


def test_an_admin_cannot_switch_on_a_project_its_code_host_disabled(dash):
    project = dash.projects["acme/docs"]
    dash.ctx.services.projects.disable(project.id, DisabledReason.INSTALLATION_REMOVED)
    alice = dash.signed_in("alice")
    listing = "/dashboard/accounts/acme/projects"
    page = alice.get(listing).text
    assert "uninstalled or lost this repository" in page and "Enable this project" not in page
    refused = alice.form(f"{listing}/{project.id}/enable", {}, page=listing)
    assert refused.status_code == 409 and "not by an admin" in refused.text
    # Switching it "off" again must not turn GitHub's reason into the admin's own, which could then be undone.
    assert alice.form(f"{listing}/{project.id}/disable", {}, page=listing).status_code == 200
    assert alice.form(f"{listing}/{project.id}/enable", {}, page=listing).status_code == 409
    stored = dash.ctx.services.projects.get(project.id)
    assert stored.enabled is False and stored.disabled_reason == "installation_removed"


def test_an_admin_switch_made_before_a_suspension_outlasts_it_and_the_page_says_both(dash):
    project = dash.projects["acme/docs"]
    alice = dash.signed_in("alice")
    listing = "/dashboard/accounts/acme/projects"
    assert alice.form(f"{listing}/{project.id}/disable", {}, page=listing).status_code == 200
    dash.ctx.services.projects.disable(project.id, DisabledReason.INSTALLATION_SUSPENDED)
    page = alice.get(listing).text
    assert "installation is suspended; an admin switched it off too" in page
    assert alice.form(f"{listing}/{project.id}/enable", {}, page=listing).status_code == 409
    dash.ctx.services.projects.enable(project.id, by_host=True)
    assert "an admin switched it off" in alice.get(listing).text
    assert alice.form(f"{listing}/{project.id}/enable", {}, page=listing).status_code == 200
    assert dash.ctx.services.projects.get(project.id).enabled


def test_a_follow_up_to_an_archived_job_is_refused_before_any_quota_is_used_and_checked_like_the_api(dash):
    project = dash.projects["local"]
    jobs, limiter = dash.ctx.services.jobs, dash.ctx.services.limiter
    job, _ = jobs.create(project, prompt="Add an FAQ", model="scripted:demo", ref="main", as_draft=False)
    path = f"/dashboard/projects/{project.id}/jobs/{job.id}"
    operator = dash.operator()
    too_long = operator.form(f"{path}/message", {"prompt": "x" * (dash.ctx.settings.max_prompt_chars + 1)}, page=path)
    assert too_long.status_code == 400 and "is longer than" in too_long.text  # the API's own words
    jobs.archive(job.id)
    before = limiter.consume(project.id).remaining
    refused = operator.form(f"{path}/message", {"prompt": "And a glossary"}, page=path)
    assert limiter.consume(project.id).remaining == before - 1  # only this check's own unit was used
    assert refused.status_code == 409 and "Job archived" in refused.text and "takes no more messages" in refused.text


def test_reloading_the_new_key_page_makes_no_second_key_and_shows_the_key_only_once(dash):
    operator = dash.operator()
    keys = "/dashboard/accounts/local/keys"
    made = operator.form(keys, {"name": "once", "scope": "all", "access": "read_write", "expiry": "90"}, page=keys)
    plaintext = re.search(r'value="(cdk_[0-9A-Za-z]+)"', made.text).group(1)
    assert made.history[0].status_code == 303 and plaintext not in made.history[0].headers["Location"]
    assert made.url.endswith("/new") and plaintext not in made.url
    reloaded = operator.get(made.url)
    assert reloaded.status_code == 200 and plaintext not in reloaded.text and "shown once already" in reloaded.text
    assert len(dash.ctx.services.keys.of_account("local")) == 1
    assert dash.ctx.services.redis.keys("cd:dash:once:*") == []  # nothing of the key is left server-side


def test_a_github_session_ends_when_its_user_token_does(dash):
    from tests.github_emulator.routes_oauth import TOKEN_TTL

    alice = dash.signed_in("alice")
    operator = dash.operator()
    age_sessions(dash, created_at=TOKEN_TTL.total_seconds() - 30)  # the token is about to lapse
    assert alice.get("/dashboard/", allow_redirects=False).status_code == 303
    assert operator.get("/dashboard/", allow_redirects=False).status_code == 200  # within the 12 h of sessions


def test_signing_out_without_a_live_session_just_goes_to_the_sign_in_page(dash):
    stranger = Browserless(dash.url)
    gone = stranger.post("/dashboard/logout", data={})
    assert gone.status_code == 200 and gone.url.endswith("/dashboard/signin") and "Form expired" not in gone.text
    expired = dash.operator()
    token = expired.csrf()
    age_sessions(dash, seen_at=dash.ctx.settings.session_idle_seconds + 5)
    out = expired.post("/dashboard/logout", data={"csrf_token": token})
    assert out.url.endswith("/dashboard/signin") and "Form expired" not in out.text
    live = dash.operator()  # a live session still needs its token: no one signs another out from elsewhere
    assert live.post("/dashboard/logout", data={}).status_code == 403


def test_the_readme_names_the_referrer_policy_the_app_sends(dash):
    sent = requests.get(f"{dash.url}/dashboard/signin", timeout=10).headers["Referrer-Policy"]
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert set(re.findall(r"Referrer-Policy: ([a-z-]+)", readme)) == {sent}


def test_the_job_page_shows_cached_input_and_billable_tokens(dash):
    project = dash.projects["local"]
    dash.script([FAQ, finish()])
    job = create_job(dash, project)
    dash.drain()
    jobs = dash.ctx.services.jobs
    message = jobs.add_message(job["id"], prompt="And a glossary")[1]
    jobs.start_next(job["id"])
    run = Usage.billed(12_000, 300, cache_read=10_000, cache_write=1_500, rates=billing.ANTHROPIC)
    jobs.finish_message(job["id"], message.id, RunOutcome(reply="Added.", usage=run.to_api()))
    page = dash.operator().get(f"/dashboard/projects/{project.id}/jobs/{job['id']}").text
    assert "12,000 in (10,000 read from cache, 1,500 written)" in page
    assert f'<span id="billable-tokens">{run.billable_tokens:,}</span> billable' in page
    assert run.billable_tokens == 500 + 1_000 + 1_875 + 300


def test_the_job_page_cancels_an_active_job_and_refuses_a_second_cancel(dash):
    project = dash.projects["local"]
    job = create_job(dash, project)
    operator = dash.operator()
    path = f"/dashboard/projects/{project.id}/jobs/{job['id']}"
    assert "Cancel the running round" in operator.get(path).text  # active: the message waits for a worker
    cancelled = operator.form(f"{path}/cancel", {}, page=path)
    assert cancelled.status_code == 200 and "Cancel the running round" not in cancelled.text
    settled = dash.ctx.services.jobs.get(job["id"])
    assert settled.status is JobStatus.COMPLETED and settled.pr_link is None  # a first round cancelled
    [message] = dash.ctx.services.jobs.conversation(job["id"])
    assert message.status is MessageStatus.CANCELLED
    again = operator.form(f"{path}/cancel", {}, page=path)
    assert again.status_code == 409 and "Job not active" in again.text
