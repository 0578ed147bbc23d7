"""Links resolved by each framework's own rules, on small sites modelled on real ones: root-relative and
component links, `$ref` navigation, literate-nav, sidebars with slugs, Sphinx roles, Starlight sidebars,
multi-language layouts, and problems that were already there."""

import json

from service.agent.docs_check import DocsProblem, check_docs
from service.agent.docsite.detect import detect_site, navigation_order
from service.agent.docsite.tree import Tree
from service.agent.overview import repository_overview


def messages(report) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in report.problems]


# --- Mintlify --------------------------------------------------------------------------------------------------

MINTLIFY = {
    "docs.json": json.dumps(
        {
            "name": "Acme",
            "theme": "mint",
            "navigation": {
                "languages": [
                    {
                        "language": "en",
                        "groups": [{"group": "Start", "pages": ["index", "quickstart", "guides/deploy"]}],
                    },
                    {"$ref": "./fr.json"},
                ]
            },
            "redirects": {"$ref": "./redirects.json"},
        },
        indent=2,
    ),
    "fr.json": json.dumps(
        {"language": "fr", "groups": [{"group": "Début", "pages": ["fr/index", "fr/quickstart"]}]}, indent=2
    ),
    "redirects.json": json.dumps([{"source": "/old/:slug*", "destination": "/guides/:slug*"}]),
    ".mintignore": "drafts/\n",
    "index.mdx": "---\ntitle: Home\n---\n\nStart with the [quickstart](/quickstart#install).\n\n"
    '<Card title="Deploy" href="/guides/deploy">\n  Ship it.\n</Card>\n',
    "quickstart.mdx": "---\ntitle: Quickstart\n---\n\n## Install\n\nRun it. See [old docs](/old/deploy).\n",
    "guides/deploy.mdx": "---\ntitle: Deploy\n---\n\nBack to [the start](/quickstart).\n",
    "fr/index.mdx": "---\ntitle: Accueil\n---\n\nVoir [démarrage](/fr/quickstart).\n",
    "fr/quickstart.mdx": "---\ntitle: Démarrage\n---\n\n## Installer\n",
}


def test_mintlify_root_relative_and_component_links_resolve_and_break_on_a_move(open_workspace):
    workspace = open_workspace(MINTLIFY)
    workspace.write("index.mdx", MINTLIFY["index.mdx"].replace("Ship it.", "Ship it today.").encode())
    assert check_docs(workspace).problems == []
    workspace = open_workspace(MINTLIFY)
    workspace.move("guides/deploy.mdx", "deploy.mdx")
    assert ("index.mdx", "link to /guides/deploy, which this run moved or deleted") in messages(check_docs(workspace))


def test_mintlify_redirects_and_broken_root_relative_links(open_workspace):
    workspace = open_workspace(MINTLIFY)
    workspace.write("guides/deploy.mdx", b"---\ntitle: Deploy\n---\n\n[moved](/old/anything) [typo](/quickstar)\n")
    assert messages(check_docs(workspace)) == [("guides/deploy.mdx", "broken link: /quickstar (no file quickstar)")]


def test_mintlify_ref_files_list_pages_and_their_entries_are_checked(open_workspace):
    workspace = open_workspace(MINTLIFY)
    site = detect_site(workspace)
    assert site.nav_files == ["docs.json", "fr.json", "redirects.json"]
    workspace.write("fr/guide.mdx", b"---\ntitle: Guide\n---\n")
    assert messages(check_docs(workspace)) == [
        (
            "fr/guide.mdx",
            'new page is not in the navigation, so readers cannot find it: add "fr/guide" to the '
            "`pages` of a group in fr.json",
        )
    ]
    workspace.delete("fr/guide.mdx")
    workspace.delete("fr/quickstart.mdx")
    problems = check_docs(workspace).problems
    assert (
        DocsProblem(
            "fr.json",
            8,
            "navigation entry `fr/quickstart` points to fr/quickstart.mdx, which this run "
            "moved or deleted; update the entry to the page's new path or remove it",
        )
        in problems
    )
    assert DocsProblem("fr/index.mdx", 5, "link to /fr/quickstart, which this run moved or deleted") in problems


def test_mintlify_mintignore_pages_need_no_entry(open_workspace):
    workspace = open_workspace(MINTLIFY)
    workspace.write("drafts/idea.mdx", b"---\ntitle: Idea\n---\n")
    assert check_docs(workspace).problems == []


def test_mintlify_overview_lists_the_default_language_and_names_the_others(open_workspace):
    workspace = open_workspace(MINTLIFY)
    site = detect_site(workspace)
    assert [lang.code for lang in site.languages] == ["en", "fr"]
    text = repository_overview(workspace, site=site, nav_order=navigation_order(Tree(workspace), site))
    assert "Docs pages in the repository in the default language (en): 3" in text
    assert "Translations (not listed here): fr (fr/, 2 pages)" in text
    assert "Pages (3 of 3, in navigation order):\nindex.mdx\nquickstart.mdx\nguides/deploy.mdx" in text
    assert "fr/index.mdx" not in text
    assert "Default language: en; translations: fr (fr/)" in site.describe()


# --- Docusaurus ------------------------------------------------------------------------------------------------

DOCUSAURUS = {
    "docusaurus.config.js": "module.exports = {baseUrl: '/', presets: [['classic', {docs: {sidebarPath: "
    "require.resolve('./sidebars.js')}}]]};\n",
    "sidebars.js": "module.exports = {docs: ['intro', {type: 'category', label: 'Queries', items: ["
    "'queries/about', 'queries/01-bytext']}, 'api/react']};\n",
    "docs/intro.md": "---\nid: intro\n---\n\n# Intro\n\nSee [queries](queries/about.mdx#priority) and "
    "[by text](/docs/queries/bytext) and ![logo](/img/logo.png).\n",
    "docs/queries/about.mdx": "---\ntitle: About\n---\n\n## Priority\n\nUse [the API](../api/react.mdx).\n",
    "docs/queries/01-bytext.mdx": "---\ntitle: ByText\n---\n\nBack to [about](./about).\n",
    "docs/api/react.mdx": "---\ntitle: React\nslug: /react-api\n---\n\nSee [about](queries/about.mdx) and "
    '[intro](/docs/intro) and <Link to="/docs/react-api">me</Link>.\n',
    "static/img/logo.png": b"\x89PNG\0",
}


def test_docusaurus_links_resolve_from_the_docs_folder_and_by_route(open_workspace):
    workspace = open_workspace(DOCUSAURUS)
    workspace.write("docs/api/react.mdx", DOCUSAURUS["docs/api/react.mdx"].replace("See", "Also see").encode())
    workspace.write("docs/intro.md", DOCUSAURUS["docs/intro.md"].replace("# Intro", "# Introduction").encode())
    assert check_docs(workspace).problems == []


def test_docusaurus_a_move_breaks_file_links_and_routes(open_workspace):
    workspace = open_workspace(DOCUSAURUS)
    workspace.move("docs/queries/about.mdx", "docs/guides/about.mdx")
    assert [m for m in messages(check_docs(workspace)) if not m[1].startswith(("navigation", "new page"))] == [
        ("docs/api/react.mdx", "link to queries/about.mdx, which this run moved or deleted"),
        ("docs/intro.md", "link to queries/about.mdx#priority, which this run moved or deleted"),
        ("docs/queries/01-bytext.mdx", "link to ./about, which this run moved or deleted"),
    ]


def test_docusaurus_broken_routes_in_a_new_page(open_workspace):
    workspace = open_workspace(DOCUSAURUS)
    workspace.write(
        "docs/api/vue.mdx",
        b"---\ntitle: Vue\n---\n\n[ok](/docs/react-api) [no](/docs/queries/byrole) "
        b"[blog](/blog/hello) [gone](../queries/byrole.md) [category](/docs/category/queries)\n",
    )
    assert messages(check_docs(workspace)) == [
        (
            "docs/api/vue.mdx",
            "new page is not in the navigation, so readers cannot find it: add 'api/vue' to a "
            "sidebar in sidebars.js (or set its front matter `id` and list that)",
        ),
        ("docs/api/vue.mdx", "broken link: ../queries/byrole.md (no file docs/queries/byrole.md)"),
        ("docs/api/vue.mdx", "broken link: /docs/queries/byrole (no doc has the route /docs/queries/byrole)"),
    ]


def test_docusaurus_versioned_docs_resolve_against_their_version(open_workspace):
    workspace = open_workspace(
        {
            **DOCUSAURUS,
            "versioned_docs/version-1.0/queries/about.mdx": "---\ntitle: About 1.0\n---\n\n## Priority\n",
            "versioned_docs/version-1.0/intro.md": "# Intro 1.0\n\n[about](queries/about.mdx)\n",
        }
    )
    workspace.write(
        "versioned_docs/version-1.0/guide.md",
        b"# Guide\n\n[about](queries/about.mdx#priority) [current](/docs/1.0/intro) [nope](queries/nope.mdx)\n",
    )
    assert messages(check_docs(workspace)) == [
        (
            "versioned_docs/version-1.0/guide.md",
            "broken link: queries/nope.mdx (no file versioned_docs/version-1.0/queries/nope.mdx or queries/nope.mdx)",
        )
    ]


# --- MkDocs ----------------------------------------------------------------------------------------------------

MKDOCS_LITERATE = {
    "mkdocs.yml": "site_name: X\nplugins:\n  - search\n  - literate-nav:\n      nav_file: SUMMARY.md\n",
    "docs/SUMMARY.md": "- [Home](index.md)\n- [Guide](guide/)\n",
    "docs/guide/SUMMARY.md": "- [Install](install.md)\n",
    "docs/index.md": "# Home\n\n> ## Quoted heading\n\n[install](guide/install.md#step-one) "
    "[quoted](#quoted-heading) [custom](guide/install.md#custom-id)\n\n"
    "[types of sites]: Project sites are explained below.\n\n"
    '<a class="x"\n   href="guide/README.md">guide</a>\n',
    "docs/guide/README.md": "# Guide\n\nSee [the home page](../).\n",
    "docs/guide/install.md": "# Install\n\n## Step one\n\n## Options { #custom-id .big }\n\nSee [home](../../) and "
    "[the guide](../).\n",
}


def test_mkdocs_literate_nav_readme_index_attr_list_and_blockquote_headings(open_workspace):
    workspace = open_workspace(MKDOCS_LITERATE)
    site = detect_site(workspace)
    assert (site.nav_files, site.explicit_nav) == (["docs/SUMMARY.md"], True)
    workspace.write("docs/index.md", MKDOCS_LITERATE["docs/index.md"].replace("# Home", "# Home page").encode())
    assert check_docs(workspace).problems == []


def test_mkdocs_literate_nav_new_page_flagged_then_clean_once_listed(open_workspace):
    workspace = open_workspace(MKDOCS_LITERATE)
    workspace.write("docs/guide/faq.md", b"# FAQ\n")
    assert messages(check_docs(workspace)) == [
        (
            "docs/guide/faq.md",
            "new page is not in the navigation, so readers cannot find it: add "
            "`- [Title](faq.md)` to the list in docs/guide/SUMMARY.md",
        )
    ]
    workspace.write("docs/guide/SUMMARY.md", b"- [Install](install.md)\n- [FAQ](faq.md)\n")
    assert check_docs(workspace).problems == []


def test_mkdocs_heading_renamed_breaks_attr_list_free_anchor_links(open_workspace):
    workspace = open_workspace(MKDOCS_LITERATE)
    workspace.write(
        "docs/guide/install.md", MKDOCS_LITERATE["docs/guide/install.md"].replace("Step one", "First step").encode()
    )
    assert messages(check_docs(workspace)) == [
        (
            "docs/index.md",
            "link to guide/install.md#step-one: this run removed the anchor `step-one` from "
            "docs/guide/install.md (a heading was renamed or deleted); point the link at the new "
            "heading",
        )
    ]


def test_mkdocs_root_relative_links_start_at_the_docs_folder_and_theme_assets_are_not_judged(open_workspace):
    workspace = open_workspace(MKDOCS_LITERATE)
    workspace.write(
        "docs/guide/more.md",
        b"# More\n\n[ok](/guide/install.md) [theme](/assets/stylesheets/main.css) [missing](/guide/nope.md)\n",
    )
    workspace.write("docs/guide/SUMMARY.md", b"- [Install](install.md)\n- [More](more.md)\n")
    assert messages(check_docs(workspace)) == [
        ("docs/guide/more.md", "broken link: /guide/nope.md (no file docs/guide/nope.md)")
    ]


def test_mkdocs_awesome_pages(open_workspace):
    workspace = open_workspace(
        {
            "mkdocs.yml": "site_name: X\nplugins:\n  - awesome-pages\n",
            "docs/index.md": "# Home\n",
            "docs/api/.pages": "nav:\n  - intro.md\n",
            "docs/api/intro.md": "# Intro\n",
            "docs/howto/.pages": "nav:\n  - first.md\n  - ...\n",
            "docs/howto/first.md": "# First\n",
        }
    )
    workspace.write("docs/api/extra.md", b"# Extra\n")
    workspace.write("docs/howto/second.md", b"# Second\n")
    assert [m[0] for m in messages(check_docs(workspace))] == ["docs/api/extra.md"]


AWESOME = {
    "mkdocs.yml": "site_name: X\nplugins:\n  - search\n  - awesome-pages\n",
    # A folder named in `nav:` is that folder (its own `.pages` applies), not a page `guide.md`; a folder not
    # named in a `nav:` without the rest marker is hidden.
    "docs/.pages": "nav:\n  - index.md\n  - guide\n  - Reference: reference\n",
    "docs/index.md": "# Home\n",
    "docs/guide/.pages": "title: Guide\nnav:\n  - install.md\n  - ... | regex=^usage-\n",
    "docs/guide/install.md": "# Install\n",
    "docs/guide/usage-basics.md": "# Usage\n",
    "docs/reference/api.md": "# API\n",
    "docs/reference/cli/.pages": "nav:\n  - run.md\n  - Internals:\n    - ... | flat\n",
    "docs/reference/cli/run.md": "# Run\n",
    "docs/reference/cli/deep/more.md": "# More\n",
    "docs/internal/notes.md": "# Notes\n",
}


def test_mkdocs_awesome_pages_folders_in_nav_and_rest_variants(open_workspace):
    workspace = open_workspace(AWESOME)
    workspace.write("docs/guide/usage-advanced.md", b"# Advanced\n")  # the `... | regex=` rest lists it
    workspace.write("docs/reference/extra.md", b"# Extra\n")  # reference/ has no `.pages`: everything is listed
    workspace.write("docs/reference/cli/deep/other.md", b"# Other\n")  # `... | flat` lists sub-folders' pages
    workspace.write("docs/internal/new.md", b"# New\n")  # internal/ is in no `nav:`, so it is hidden
    assert messages(check_docs(workspace)) == [
        (
            "docs/internal/new.md",
            "new page is not in the navigation, so readers cannot find it: name `internal` "
            "(or `...`) in the `nav:` of docs/.pages",
        )
    ]


def test_mkdocs_awesome_pages_renamed_folder_breaks_its_nav_entry(open_workspace):
    workspace = open_workspace(AWESOME)
    for name in ("install.md", "usage-basics.md", ".pages"):
        workspace.move(f"docs/guide/{name}", f"docs/setup/{name}")
    found = messages(check_docs(workspace))
    assert (
        "docs/.pages",
        "navigation entry `guide` points to no page (looked for docs/guide.md, "
        "docs/guide/index.md); create the page or fix the entry",
    ) in found
    # setup/ is named in no `nav:`, so its pages are hidden.
    assert (
        "docs/setup/install.md",
        "new page is not in the navigation, so readers cannot find it: name "
        "`install.md` (or `...`) in the `nav:` of docs/setup/.pages, and each folder of "
        "`setup` in its parent's `.pages`",
    ) in found


# --- Sphinx ----------------------------------------------------------------------------------------------------

SPHINX = {
    "docs/conf.py": "project = 'X'\nextensions = ['myst_parser']\n",
    "docs/index.rst": "X\n=\n\n.. _home:\n\nSee :doc:`guide/usage` and :ref:`usage-label`.\n\n.. toctree::\n\n"
    "   guide/usage\n   api\n",
    "docs/guide/usage.md": "(usage-label)=\n# Usage\n\nSee {doc}`../api` and {ref}`home`.\n",
    "docs/api.rst": "API\n===\n\nBack to :doc:`index` and :doc:`Usage </guide/usage>`.\n",
}


def test_sphinx_roles_resolve_and_rst_pages_are_checked(open_workspace):
    workspace = open_workspace(SPHINX)
    workspace.write(
        "docs/api.rst", (SPHINX["docs/api.rst"] + "\nMore text, :doc:`missing` and :ref:`nolabel`.\n").encode()
    )
    assert messages(check_docs(workspace)) == [
        ("docs/api.rst", "broken document reference: missing (no document docs/missing)"),
        ("docs/api.rst", "unknown label: nolabel (no page defines it with `.. _label:` or `(label)=`)"),
    ]


def test_sphinx_a_move_breaks_doc_roles_but_not_labels(open_workspace):
    workspace = open_workspace(SPHINX)
    workspace.move("docs/guide/usage.md", "docs/usage.md")
    found = messages(check_docs(workspace))
    assert ("docs/index.rst", "link to guide/usage, which this run moved or deleted") in found
    assert ("docs/api.rst", "link to /guide/usage, which this run moved or deleted") in found
    assert not any("usage-label" in message for _, message in found)


# --- Astro Starlight -------------------------------------------------------------------------------------------

STARLIGHT = {
    "astro.config.mjs": "import { defineConfig } from 'astro/config';\nimport starlight from '@astrojs/starlight';\n"
    "import sidebar from './sidebar.json';\n\nexport default defineConfig({\n  integrations: [\n"
    "    starlight({ title: 'Docs', sidebar }),\n  ],\n});\n",
    "sidebar.json": json.dumps(
        [
            {"label": "Start", "items": ["guides/setup", {"label": "Ref", "slug": "reference/api"}]},
            {"label": "More", "autogenerate": {"directory": "more"}},
        ],
        indent=2,
    ),
    "src/content/docs/index.mdx": "---\ntitle: Home\n---\n\nRead [setup](/guides/setup/) and [API](reference/api/).\n",
    "src/content/docs/guides/setup.md": "---\ntitle: Setup\n---\n\n## Install\n\n[Reference](../../reference/api/) "
    "![shot](/shots/a.png) [blog](/blog/)\n",
    "src/content/docs/reference/api.md": "---\ntitle: API\n---\n\nSee [setup](/guides/setup/#install).\n",
    "src/content/docs/more/tips.md": "---\ntitle: Tips\n---\n",
    "public/shots/a.png": b"\x89PNG\0",
    "src/content/blog/post.md": "---\ntitle: A post\n---\n[broken](nowhere.md)\n",
}


def test_starlight_site_sidebar_and_routes(open_workspace):
    workspace = open_workspace(STARLIGHT)
    site = detect_site(workspace)
    assert (site.framework, site.docs_root, site.nav_files) == ("starlight", "src/content/docs", ["sidebar.json"])
    workspace.write(
        "src/content/docs/guides/setup.md",
        STARLIGHT["src/content/docs/guides/setup.md"].replace("## Install", "## Install it").encode(),
    )
    assert messages(check_docs(workspace)) == [
        (
            "src/content/docs/reference/api.md",
            "link to /guides/setup/#install: this run removed the anchor `install` "
            "from src/content/docs/guides/setup.md (a heading was renamed or "
            "deleted); point the link at the new heading",
        )
    ]


def test_starlight_new_page_flagged_then_listed_and_moves_reported(open_workspace):
    workspace = open_workspace(STARLIGHT)
    workspace.write("src/content/docs/guides/deploy.md", b"---\ntitle: Deploy\n---\n")
    workspace.write("src/content/docs/more/extra.md", b"---\ntitle: Extra\n---\n")
    assert messages(check_docs(workspace)) == [
        (
            "src/content/docs/guides/deploy.md",
            "new page is not in the navigation, so readers cannot find it: add "
            "'guides/deploy' to the `sidebar` in sidebar.json",
        )
    ]
    workspace.write(
        "sidebar.json",
        STARLIGHT["sidebar.json"].replace('"guides/setup",', '"guides/setup", "guides/deploy",').encode(),
    )
    assert check_docs(workspace).problems == []
    workspace = open_workspace(STARLIGHT)
    workspace.move("src/content/docs/guides/setup.md", "src/content/docs/setup.md")
    found = messages(check_docs(workspace))
    assert ("src/content/docs/index.mdx", "link to /guides/setup/, which this run moved or deleted") in found
    assert (
        "src/content/docs/reference/api.md",
        "link to /guides/setup/#install, which this run moved or deleted",
    ) in found
    assert any(path == "sidebar.json" and "guides/setup" in message for path, message in found)
