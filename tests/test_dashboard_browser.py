"""The dashboard in a real headless chromium: sign-in through the emulated GitHub, keys made and revoked on the
page and used with the API, rights per person, live job progress, CSRF, the one-time login link; each page is
photographed for the README."""

import re

import pytest
import requests

from bot import demo_repo

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running

WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def shot(page, folder, name: str, axe: str | None = None) -> None:
    """Photograph the page and, given axe's source, check it against WCAG 2.1 A and AA (labels, contrast, ...)."""
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
    if axe is not None:
        page.evaluate(axe)  # through the DevTools protocol, so the page's CSP does not stop it
        found = page.evaluate(
            "async (tags) => (await axe.run(document, {runOnly: tags})).violations.map("
            "v => `${v.id}: ${v.help} (${v.nodes.map(n => n.target.join(' ')).join(', ')})`)",
            WCAG_AA,
        )
        assert found == [], f"{name}: " + "; ".join(found)


def sign_in_with_github(page, dash, login: str) -> None:
    """Through the sign-in page, GitHub's authorize page and back, as a person would."""
    dash.github.sign_in_browser(login)
    page.goto(f"{dash.url}/dashboard/")
    page.get_by_role("link", name="Sign in with GitHub").click()
    page.get_by_role("button", name=re.compile("^Authorize")).click()
    page.wait_for_url(f"{dash.url}/dashboard/")


def api(dash, key: str, method: str, path: str, **kwargs) -> requests.Response:
    return requests.request(
        method, f"{dash.url}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=10, **kwargs
    )


def test_an_admin_signs_in_makes_a_key_uses_it_and_revokes_it(dash, browser_page, screenshots, axe_source):
    page = browser_page
    page.goto(f"{dash.url}/dashboard/signin")
    shot(page, screenshots, "sign-in", axe_source)
    sign_in_with_github(page, dash, "alice")
    shot(page, screenshots, "accounts", axe_source)
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name").fill("docs CI")
    page.get_by_label("Only these projects:").check()
    page.get_by_label(re.compile("acme/docs")).check()
    page.get_by_label("Expires").select_option("30")
    page.get_by_role("button", name="Create key").click()
    key = page.get_by_label(re.compile("API key")).input_value()
    assert key.startswith("cdk_")
    shot(page, screenshots, "key-created", axe_source)
    page.get_by_role("button", name="Copy").click()
    page.get_by_role("button", name="Copied").wait_for()
    page.reload()  # the page came from a redirect: a reload neither sends the form again nor shows the key
    assert key not in page.content() and "shown once already" in page.content()
    assert len(dash.ctx.services.keys.of_account("acme")) == 1

    project = dash.projects["acme/docs"].id
    assert api(dash, key, "GET", f"/v2/agent/{project}/jobs").status_code == 200
    assert api(dash, key, "GET", f"/v2/agent/{dash.projects['globex/site'].id}/jobs").status_code == 404

    page.get_by_role("link", name="Back to the API keys").click()
    row = page.locator("tr", has_text="docs CI")
    assert "expires in" in row.inner_text() and "read-write" in row.inner_text() and key not in page.content()
    shot(page, screenshots, "api-keys", axe_source)
    row.get_by_role("button", name=re.compile("^Revoke")).click()
    assert "revoked" in page.locator("tr", has_text="docs CI").inner_text()
    assert api(dash, key, "GET", f"/v2/agent/{project}/jobs").status_code == 401
    assert "alice revoked" in page.locator(".audit").inner_text()


def test_a_read_only_key_from_the_page_gets_403_on_create(dash, browser_page):
    page = browser_page
    sign_in_with_github(page, dash, "alice")
    page.goto(f"{dash.url}/dashboard/accounts/acme/keys")
    # By keyboard alone: the first Tab reaches the skip link, the form's controls take focus and Enter sends it.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.get_by_label("Name").focus()
    page.keyboard.type("reader")
    page.get_by_role("radio", name=re.compile("Read-write")).focus()
    page.keyboard.press("ArrowDown")  # moves the choice to read-only
    assert page.get_by_role("radio", name=re.compile("Read-only")).is_checked()
    page.get_by_label("Name").focus()
    page.keyboard.press("Enter")
    key = page.get_by_label(re.compile("API key")).input_value()
    project = dash.projects["acme/docs"].id
    refused = api(dash, key, "POST", f"/v2/agent/{project}/job", json={"prompt": "Add a page"})
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    assert api(dash, key, "GET", f"/v2/agent/{project}/jobs").status_code == 200


def test_a_member_cannot_make_keys_and_another_account_sees_none_of_the_projects(
    dash, browser_page, screenshots, axe_source
):
    page = browser_page
    sign_in_with_github(page, dash, "bob")
    assert page.get_by_role("link", name="API keys").count() == 0
    page.goto(f"{dash.url}/dashboard/accounts/acme/keys")
    assert "Only an admin of acme" in page.content()
    shot(page, screenshots, "member-refused", axe_source)
    page.goto(f"{dash.url}/dashboard/accounts/acme/projects")
    assert dash.projects["acme/docs"].id in page.content()

    page.context.clear_cookies()
    sign_in_with_github(page, dash, "carol")
    text = page.content()
    assert "globex" in text and "acme" not in text
    page.goto(f"{dash.url}/dashboard/projects/{dash.projects['acme/docs'].id}/jobs")
    assert "Project not found" in page.content() and "acme/docs" not in page.content()


def test_the_login_link_works_once_and_a_job_page_turns_completed_without_a_reload(
    dash, chromium, browser_page, screenshots, make_repo, axe_source
):
    page = browser_page
    link = dash.login_link()
    page.goto(link)
    assert page.url == f"{dash.url}/dashboard/"
    other = chromium.new_context()
    try:
        again = other.new_page()
        again.goto(link)
        assert "used already" in again.content()
    finally:
        other.close()

    # The demo's repository and script, so the pictures show what `make demo` does.
    project = dash.ctx.local.register(
        dash.ctx.services.projects, path=make_repo(demo_repo.FILES, name="acme-widgets"), ref="main"
    )
    _key, key = dash.ctx.services.keys.create(account="local", name="demo")
    job = api(
        dash, key, "POST", f"/v2/agent/{project.id}/job", json={"prompt": demo_repo.PROMPT, "model": "scripted:demo"}
    ).json()
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(f"{dash.url}/dashboard/projects/{project.id}/jobs/{job['id']}")
    assert page.locator("#job-status").inner_text() == "active"
    page.evaluate("window.stillHere = true")
    dash.drain()
    page.locator("#job-status", has_text="completed").wait_for(timeout=20_000)
    assert page.evaluate("window.stillHere") is True  # the same document: no reload
    # Told by the job's event stream (through the session-authorised route), not by polling.
    assert any(f"/jobs/{job['id']}/events" in url for url in asked)
    assert not any("/live?" in url for url in asked[: asked.index(next(u for u in asked if "/events" in u))])
    assert "+# Troubleshooting" in page.locator("pre.diff").inner_text()
    shot(page, screenshots, "job", axe_source)
    page.goto(f"{dash.url}/dashboard/projects/{project.id}/jobs")
    assert demo_repo.PROMPT[:60] in page.locator("table.jobs").inner_text()
    shot(page, screenshots, "jobs", axe_source)
    page.goto(f"{dash.url}/dashboard/accounts/local/projects")
    shot(page, screenshots, "projects", axe_source)
    page.goto(f"{dash.url}/local/{project.id}/pulls/1")
    assert project.repository not in page.content()
    shot(page, screenshots, "local-pull-request", axe_source)
    page.goto(f"{dash.url}/local/{project.id}")
    assert "#1 " in page.locator("main").inner_text() and project.repository not in page.content()
    shot(page, screenshots, "local-repository", axe_source)


def test_a_form_sent_without_its_csrf_token_is_refused(dash, browser_page, screenshots, axe_source):
    page = browser_page
    page.goto(dash.login_link())
    page.goto(f"{dash.url}/dashboard/accounts/local/keys")
    page.get_by_label("Name").fill("sneaky")
    page.evaluate("document.querySelectorAll('input[name=csrf_token]').forEach(e => e.remove())")
    page.get_by_role("button", name="Create key").click()
    assert "Form expired" in page.content()
    assert dash.ctx.services.keys.of_account("local") == []
    shot(page, screenshots, "csrf-refused", axe_source)
