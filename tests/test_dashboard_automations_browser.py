"""The automation pages in a real headless chromium: create one from a template, run it now, read its history;
each page checked against WCAG 2.1 A and AA and photographed (the list is the README's picture)."""

import re

from service.automations import manage
from tests.flow_scripts import FAQ, finish
from tests.test_dashboard_browser import shot


def test_an_admin_creates_an_automation_from_a_template_runs_it_and_reads_its_history(
    dash, browser_page, screenshots, axe_source
):
    page = browser_page
    project = dash.projects["local"]
    page.goto(dash.login_link())
    page.goto(f"{dash.url}/dashboard/accounts/local/projects")
    page.get_by_role("link", name="manage automations").click()
    page.get_by_role("link", name="Update docs from code changes").click()
    shot(page, screenshots, "automation-new", axe_source)
    page.get_by_role("button", name="Create automation").click()
    assert "needs `trigger.repository`" in page.get_by_role("alert").inner_text()  # its blank, still empty
    page.get_by_label("Source repository (code change)").fill("/srv/git/api.git")
    page.get_by_role("button", name="Create automation").click()
    page.get_by_role("heading", name="Edit Update docs from code changes").wait_for()
    [automation] = dash.ctx.services.automations.of_project(project.id)
    assert automation.template == "update-docs-from-code-changes"

    page.get_by_label("Note for the agent (optional)").fill("The v2 release renamed --out to --output.")
    page.get_by_role("button", name="Run now").click()
    page.get_by_role("heading", name=re.compile("^Runs of")).wait_for()
    assert "queued" in page.locator("table.runs").inner_text()
    dash.script([FAQ, finish()])
    dash.drain()
    page.reload()
    row = page.locator("table.runs tbody tr").first.inner_text()
    assert "review needed" in row and "#1" in row and "manual" in row
    shot(page, screenshots, "automation-runs", axe_source)
    manage.create(dash.ctx.services, project, {"template": "fix-broken-links", "enabled": False})
    manage.create(
        dash.ctx.services, project, {"template": "draft-changelog-entry", "trigger": {"repository": "/srv/git/api.git"}}
    )
    page.get_by_role("link", name="Automations").click()
    table = page.locator("table.automations").inner_text()
    assert "review needed" in table and "disabled" in table and "next run" in table and "no runs yet" in table
    shot(page, screenshots, "automations", axe_source)
