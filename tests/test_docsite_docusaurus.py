"""Docusaurus configs read as literals (options after nested plugin options, docs plugins) and versioned docs
(`versions.json`, `versioned_docs/`, `versioned_sidebars/`), on small sites modelled on real ones."""

import json

from service.agent.docs_check import DocsProblem, check_docs
from service.agent.docsite.detect import detect_site, navigation_order
from service.agent.docsite.tree import Tree
from service.agent.overview import repository_overview

# The shape of testing-library-docs' docusaurus.config.js: a remark plugin with options before `path`.
PRESET_CONFIG = """module.exports = {
  title: 'Testing Library',
  baseUrl: '/',
  presets: [
    [
      '@docusaurus/preset-classic',
      {
        docs: {
          showLastUpdateAuthor: true,
          remarkPlugins: [
            [require('@docusaurus/remark-plugin-npm2yarn'), {sync: true}],
          ],
          editUrl: 'https://github.com/acme/docs/edit/main/',
          path: './content',
          routeBasePath: 'guides',
          sidebarPath: './sidebars.js',
        },
        blog: {path: './blog', feedOptions: {type: 'all'}},
      },
    ],
  ],
  plugins: [],
};
"""

PLUGIN_CONFIG = """import type {Config} from '@docusaurus/types';

const config: Config = {
  presets: [['classic', {docs: false, blog: {showReadingTime: true}}]],
  plugins: [
    ['@docusaurus/plugin-content-docs', {id: 'community', path: 'community', routeBasePath: 'community'}],
    [
      '@docusaurus/plugin-content-docs',
      {remarkPlugins: [[mdxMermaid, {theme: {light: 'neutral'}}]], path: 'reference', routeBasePath: '/'},
    ],
  ],
};

export default config;
"""


def test_docs_options_after_nested_plugin_options_come_from_the_preset(open_workspace):
    workspace = open_workspace(
        {
            "docusaurus.config.js": PRESET_CONFIG,
            "sidebars.js": "module.exports = {docs: ['intro']};\n",
            "content/intro.mdx": "---\ntitle: Intro\n---\n\nSee [me](/guides/intro).\n",
            "blog/2024-01-01-hello.md": "# Hello\n",
        }
    )
    site = detect_site(workspace)
    assert (site.docs_root, site.routing["route_base"], site.nav_files) == ("content", "/guides", ["sidebars.js"])
    workspace.write(
        "content/intro.mdx", b"---\ntitle: Intro\n---\n\nSee [me](/guides/intro) or [gone](/guides/nope).\n"
    )
    assert [p.message for p in check_docs(workspace).problems] == [
        "broken link: /guides/nope (no doc has the route /guides/nope)"
    ]


def test_docs_options_come_from_the_default_content_docs_plugin(open_workspace):
    workspace = open_workspace(
        {"docusaurus.config.ts": PLUGIN_CONFIG, "reference/api.md": "# API\n", "community/help.md": "# Help\n"}
    )
    site = detect_site(workspace)
    # The `community` instance's pages are pages of the site too.
    assert (site.docs_root, site.routing["route_base"], site.page_count) == ("reference", "/", 2)


# --- versioned docs --------------------------------------------------------------------------------------------

VERSIONED = {
    "docusaurus.config.js": "module.exports = {presets: [['classic', {docs: {sidebarPath: "
    "require.resolve('./sidebars.js')}}]]};\n",
    "sidebars.js": "module.exports = {docs: ['intro', 'api']};\n",
    "versions.json": json.dumps(["2.0", "1.0"]),
    "docs/intro.md": "# Intro (next)\n\n[api](/docs/next/api)\n",
    "docs/api.md": "# API (next)\n",
    "versioned_docs/version-2.0/intro.md": "# Intro 2.0\n\n[api](/docs/api) [old intro](/docs/1.0/intro)\n",
    "versioned_docs/version-2.0/api.md": "# API 2.0\n",
    "versioned_docs/version-1.0/intro.md": "# Intro 1.0\n",
    "versioned_sidebars/version-2.0-sidebars.json": json.dumps({"docs": ["intro", "api"]}, indent=2),
    # Docusaurus 2 betas wrote versioned ids and sidebar names with the version prefix.
    "versioned_sidebars/version-1.0-sidebars.json": json.dumps(
        {"version-1.0/docs": [{"type": "doc", "id": "version-1.0/intro"}]}, indent=2
    ),
}


def test_versioned_routes_go_to_their_version(open_workspace):
    workspace = open_workspace(VERSIONED)
    workspace.write(
        "docs/guide.md",
        b"# Guide\n\n[next](/docs/next/api) [latest](/docs/api) [old](/docs/1.0/intro) "
        b"[not in 1.0](/docs/1.0/api) [nope](/docs/next/nope)\n",
    )
    workspace.write("sidebars.js", b"module.exports = {docs: ['intro', 'api', 'guide']};\n")
    assert [(p.path, p.message) for p in check_docs(workspace).problems] == [
        ("docs/guide.md", "broken link: /docs/1.0/api (no doc has the route /docs/1.0/api)"),
        ("docs/guide.md", "broken link: /docs/next/nope (no doc has the route /docs/next/nope)"),
    ]


def test_versioned_pages_are_listed_by_their_versioned_sidebars(open_workspace):
    workspace = open_workspace(VERSIONED)
    workspace.write("versioned_docs/version-2.0/faq.md", b"# FAQ\n")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "versioned_docs/version-2.0/faq.md",
            1,
            "new page is not in the navigation, so readers cannot find it: add "
            "'faq' to a sidebar in versioned_sidebars/version-2.0-sidebars.json (or set its front matter `id` and list "
            "that)",
        )
    ]
    workspace.write(
        "versioned_sidebars/version-2.0-sidebars.json", json.dumps({"docs": ["intro", "api", "faq"]}).encode()
    )
    assert check_docs(workspace).problems == []


def test_deleting_a_versioned_page_reports_its_sidebar_entry_and_links(open_workspace):
    workspace = open_workspace(VERSIONED)
    workspace.delete("versioned_docs/version-1.0/intro.md")
    problems = [(p.path, p.message) for p in check_docs(workspace).problems]
    assert problems == [
        ("versioned_docs/version-2.0/intro.md", "link to /docs/1.0/intro, which this run moved or deleted"),
        (
            "versioned_sidebars/version-1.0-sidebars.json",
            "navigation entry `version-1.0/intro` points to "
            "versioned_docs/version-1.0/intro.md, which this run moved or deleted; update the entry to the page's new "
            "path or remove it",
        ),
    ]


def test_versions_are_described_but_the_overview_lists_the_current_docs(open_workspace):
    workspace = open_workspace(VERSIONED)
    site = detect_site(workspace)
    assert site.page_count == 2 and site.routing["current_route"] == "/docs/next"
    assert "released versions (2.0, 1.0) are copies in versioned_docs/version-<name>/" in site.describe()
    text = repository_overview(workspace, site=site, nav_order=navigation_order(Tree(workspace), site))
    assert "Pages (2 of 2, in navigation order):\ndocs/intro.md\ndocs/api.md" in text
    assert "versioned_docs/version-2.0/intro.md" not in text


def test_odd_versions_files_are_tolerated(open_workspace):
    for listing in ("{not json", json.dumps({"2.0": True}), json.dumps(["../../etc", "", 3, "a/b", "2.0"])):
        workspace = open_workspace(
            {**VERSIONED, "versions.json": listing, "versioned_sidebars/version-2.0-sidebars.json": "{oops"}
        )
        site = detect_site(workspace)
        assert [v.name for v in site.routing["versions"]] in ([], ["2.0"])
        workspace.write("docs/intro.md", b"# Intro (next)\n\n[api](/docs/next/api) again\n")
        assert check_docs(workspace).problems == []


def test_routes_into_a_folder_a_build_step_fills_are_not_judged(open_workspace):
    # The shape of a site whose rule pages a prebuild script writes from the packages' READMEs: the folder is kept
    # in git by a `.gitkeep` alone.
    workspace = open_workspace(
        {
            "docusaurus.config.js": "module.exports = {presets: [['classic', {docs: {}}]]};\n",
            "docs/intro.md": "# Intro\n",
            "docs/rules/.gitkeep": "",
        }
    )
    workspace.write(
        "docs/guide.md",
        b"# Guide\n\n[rule](/docs/rules/no-empty#options), [all rules](/docs/rules), [file](rules/no-empty.md), "
        b"[gone](/docs/gone), [gone file](gone.md)\n",
    )
    report = check_docs(workspace)
    assert [p.message for p in report.problems if p.path == "docs/guide.md"] == [
        "broken link: /docs/gone (no doc has the route /docs/gone)",
        "broken link: gone.md (no file docs/gone.md or gone.md)",
    ]
    assert "links into folders a build step fills" in report.to_text(20_000)
