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
    "docs/index.md": "# Tool docs\n\n- [Setup](/guide/setup) ([as a file](guide/setup.md#install))\n- [API](/api/)\n",
    "docs/guide/setup.md": "# Setup\n\n## Install\n\nBack to [the start](/).\n",
    "docs/api/index.md": "# API\n\nSee [setup](../guide/setup.md).\n",
}


def test_root_relative_links_on_an_unknown_site_are_said_once_and_not_judged(open_workspace):
    workspace = open_workspace(PLAIN)
    workspace.write(
        "docs/guide/deploy.md",
        b"# Deploy\n\nAfter [setup](/guide/setup), see [API](/api/) and [nowhere](/no/such/route).\n",
    )
    report = check_docs(workspace)
    assert report.problems == [] and report.notes == [NOTE]
    assert report.to_text().count("not checked") == 1


def test_what_can_be_known_is_still_checked_on_an_unknown_site(open_workspace):
    workspace = open_workspace(PLAIN)
    workspace.write(
        "docs/guide/deploy.md", b"# Deploy\n\n[typo](setup.mdd) [anchor](setup.md#instal) [route](/guide/setup)\n"
    )
    assert messages(check_docs(workspace)) == [
        (
            "docs/guide/deploy.md",
            "broken anchor: setup.md#instal (docs/guide/setup.md has no heading or id "
            "`instal`); did you mean #install?",
        ),
        ("docs/guide/deploy.md", "broken link: setup.mdd (no file docs/guide/setup.mdd)"),
    ]


def test_a_move_reports_relative_links_but_not_root_relative_ones(open_workspace):
    workspace = open_workspace(PLAIN)
    workspace.move("docs/guide/setup.md", "docs/setup.md")
    report = check_docs(workspace)
    assert messages(report) == [
        ("docs/api/index.md", "link to ../guide/setup.md, which this run moved or deleted"),
        ("docs/index.md", "link to guide/setup.md#install, which this run moved or deleted"),
    ]
    # The moved page's own `/` link is root-relative too.
    assert report.notes == [NOTE]


def test_the_overview_says_what_was_guessed_and_never_that_there_is_no_navigation(open_workspace):
    site = detect_site(open_workspace(PLAIN))
    text = site.describe()
    assert site.framework == "markdown" and not site.explicit_nav
    assert text.startswith("Docs site: no known docs framework; guessed plain Markdown.")
    assert "`/x`" in text and "no navigation file" not in text


# --- frameworks detected but whose routing is not modelled -------------------------------------------------

NEXTRA = {
    "package.json": '{"dependencies": {"next": "15", "nextra": "4", "nextra-theme-docs": "4"}}\n',
    "next.config.mjs": "import nextra from 'nextra'\n\nconst withNextra = nextra({ latex: true })\n\n"
    "export default withNextra({ reactStrictMode: true })\n",
    "content/_meta.js": "export default { index: 'Introduction', guide: 'Guide' }\n",
    "content/index.mdx": "# Kit\n\nSee [the guide](/guide/setup) or [as a file](./guide/setup.mdx).\n",
    "content/guide/setup.mdx": "# Setup\n\n## Options\n",
}


def test_nextra_is_named_and_only_its_relative_links_are_judged(open_workspace):
    workspace = open_workspace(NEXTRA)
    site = detect_site(workspace)
    assert (site.framework, site.docs_root) == ("nextra", "content")
    assert site.describe().startswith("Docs site: Nextra (detected from next.config.mjs, which uses nextra).")
    workspace.write(
        "content/guide/deploy.mdx",
        b"# Deploy\n\n[setup](/guide/setup#options) [typo](/guide/setp) [file](./setup.mdx#option)\n",
    )
    report = check_docs(workspace)
    assert [p.message for p in report.problems] == [
        "broken anchor: ./setup.mdx#option (content/guide/setup.mdx has no heading or id `option`); did you mean "
        "#options?"
    ]
    assert len(report.notes) == 1 and "Nextra" in report.notes[0]  # no claim about a missing navigation entry


GITBOOK = {
    ".gitbook.yaml": "root: ./docs/\n\nstructure:\n  readme: README.md\n  summary: SUMMARY.md\n",
    "docs/README.md": "# Widget handbook\n\nStart at [installing](getting-started/install.md).\n",
    "docs/SUMMARY.md": "# Table of contents\n\n* [Widget handbook](README.md)\n\n## Getting started\n\n"
    "* [Install](getting-started/install.md)\n  * [On Linux](/getting-started/linux.md)\n"
    "* [Support](https://support.example.com)\n",
    "docs/getting-started/install.md": "# Install\n\n## Linux\n\nSee [Linux](linux.md) and [the app](/app/login).\n",
    "docs/getting-started/linux.md": "# On Linux\n",
}


def test_gitbook_summary_is_the_navigation_and_root_relative_links_are_unknown(open_workspace):
    workspace = open_workspace(GITBOOK)
    site = detect_site(workspace)
    assert (site.framework, site.docs_root, site.nav_files, site.explicit_nav) == (
        "gitbook",
        "docs",
        ["docs/SUMMARY.md"],
        True,
    )
    assert site.describe().startswith("Docs site: GitBook (detected from .gitbook.yaml).")
    workspace.write("docs/getting-started/macos.md", b"# On macOS\n\nLike [Linux](linux.md) or [/app](/app/x).\n")
    report = check_docs(workspace)
    assert [(p.path, p.message) for p in report.problems] == [
        (
            "docs/getting-started/macos.md",
            "new page is not in the navigation, so readers cannot find it: add "
            "`* [Title](getting-started/macos.md)` to docs/SUMMARY.md",
        )
    ]
    assert report.notes == ["links of the form `/x` are not checked: GitBook's routes for them are not modelled"]
    workspace = open_workspace(GITBOOK)
    workspace.move("docs/getting-started/linux.md", "docs/linux.md")
    found = [(p.path, p.message) for p in check_docs(workspace).problems]
    assert ("docs/getting-started/install.md", "link to linux.md, which this run moved or deleted") in found
    assert any(path == "docs/SUMMARY.md" and "getting-started/linux.md" in message for path, message in found)


def test_a_summary_md_alone_is_a_guessed_gitbook_and_the_overview_says_so(open_workspace):
    files = {key: value for key, value in GITBOOK.items() if key != ".gitbook.yaml"}
    site = detect_site(open_workspace(files))
    assert (site.framework, site.docs_root, site.guessed) == ("gitbook", "docs", True)
    assert site.describe().startswith(
        "Docs site: GitBook (guessed from docs/SUMMARY.md, a table of contents in GitBook's form)."
    )
    plain = detect_site(open_workspace({"SUMMARY.md": "# Summary\n\nThis quarter went well.\n", "a.md": "# A\n"}))
    assert plain.framework == "markdown"


def test_routes_a_theme_or_another_plugin_serves_are_said_once_on_known_frameworks(open_workspace):
    workspace = open_workspace(
        {
            "mkdocs.yml": "site_name: Kit\nnav:\n  - index.md\n  - setup.md\n",
            "docs/index.md": "# Kit\n",
            "docs/setup.md": "# Setup\n",
        }
    )
    workspace.write("docs/index.md", b"# Kit\n\n[blog](/blog/) [tags](/tags/) [setup](/setup/) [typo](/setp.md)\n")
    report = check_docs(workspace)
    assert report.notes == [
        "links of the form `/x` to routes outside the docs pages (the theme's, a blog's, other "
        "plugins' or app pages) are not checked"
    ]
    assert report.problems == []  # `/setp.md`'s first folder is no page's either: not the check's to judge


def test_route_like_relative_links_are_unknown_but_file_links_are_checked_on_nextra_and_gitbook(open_workspace):
    workspace = open_workspace(NEXTRA)
    workspace.write(
        "content/guide/deploy.mdx", b"# Deploy\n\n[setup route](../setup/options) [file typo](./setp.mdx)\n"
    )
    report = check_docs(workspace)
    assert [p.message for p in report.problems] == ["broken link: ./setp.mdx (no file content/guide/setp.mdx)"]
    assert any("relative links without a file extension" in note for note in report.notes)
    # Legacy GitBook builds serve x.md as x.html (and README.md as index.html).
    workspace = open_workspace(GITBOOK)
    workspace.write(
        "docs/getting-started/linux.md",
        b"# On Linux\n\n[install](install.html#linux) [home](../index.html) [route](setup-guide) [gone](remove.html)\n",
    )
    report = check_docs(workspace)
    assert [p.message for p in report.problems] == [
        "broken link: remove.html (no file docs/getting-started/remove.html)"
    ]
    assert any("relative links without a file extension" in note for note in report.notes)
