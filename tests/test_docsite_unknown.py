"""Unknown means unknown: on a site whose framework or routing the check does not know, links whose landing
depends on that routing are not judged (said once), what it can know is still checked, and the overview says
what it guessed and how sure it is."""

from service.agent.docs_check import check_docs
from service.agent.docsite.detect import detect_site


def messages(report) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in report.problems]


NOTE = "links of the form `/x` are not checked: the site's routing is unknown"

# A docs folder built by something the check does not know (a custom static-site script): pages link to each
# other both by route (`/guide/setup`) and by file.
PLAIN = {
    "README.md": "# Tool\n\nSee [the docs](docs/index.md).\n",
    "docs/index.md": "# Tool docs\n\n- [Setup](/guide/setup) ([as a file](guide/setup.md#install))\n"
                     "- [API](/api/)\n",
    "docs/guide/setup.md": "# Setup\n\n## Install\n\nBack to [the start](/).\n",
    "docs/api/index.md": "# API\n\nSee [setup](../guide/setup.md).\n",
}


def test_root_relative_links_on_an_unknown_site_are_said_once_and_not_judged(open_workspace):
    workspace = open_workspace(PLAIN)
    workspace.write("docs/guide/deploy.md", b"# Deploy\n\nAfter [setup](/guide/setup), see [API](/api/) and "
                                            b"[nowhere](/no/such/route).\n")
    report = check_docs(workspace)
    assert report.problems == [] and report.notes == [NOTE]
    assert report.to_text().count("not checked") == 1


def test_what_can_be_known_is_still_checked_on_an_unknown_site(open_workspace):
    workspace = open_workspace(PLAIN)
    workspace.write("docs/guide/deploy.md", b"# Deploy\n\n[typo](setup.mdd) [anchor](setup.md#instal) "
                                            b"[route](/guide/setup)\n")
    assert messages(check_docs(workspace)) == [
        ("docs/guide/deploy.md", "broken anchor: setup.md#instal (docs/guide/setup.md has no heading or id "
                                 "`instal`); did you mean #install?"),
        ("docs/guide/deploy.md", "broken link: setup.mdd (no file docs/guide/setup.mdd)")]


def test_a_move_reports_relative_links_but_not_root_relative_ones(open_workspace):
    workspace = open_workspace(PLAIN)
    workspace.move("docs/guide/setup.md", "docs/setup.md")
    report = check_docs(workspace)
    assert messages(report) == [
        ("docs/api/index.md", "link to ../guide/setup.md, which this run moved or deleted"),
        ("docs/index.md", "link to guide/setup.md#install, which this run moved or deleted")]
    # The moved page's own `/` link is root-relative too.
    assert report.notes == [NOTE]


def test_the_overview_says_what_was_guessed_and_never_that_there_is_no_navigation(open_workspace):
    site = detect_site(open_workspace(PLAIN))
    text = site.describe()
    assert site.framework == "markdown" and not site.explicit_nav
    assert text.startswith("Docs site: no known docs framework; guessed plain Markdown.")
    assert "`/x`" in text and "no navigation file" not in text
