"""The docs check's navigation findings on small real sites of each framework, after edits like the agent's."""

from service.agent.docs_check import DocsProblem, check_docs


def edit(workspace, path: str, old: str, new: str) -> None:
    """Replace one exact piece of text, like the agent's edit_file."""
    text = workspace.read(path).decode()
    assert text.count(old) == 1, f"{old!r} is not unique in {path}"
    workspace.write(path, text.replace(old, new).encode())


def line_of(workspace, path: str, needle: str) -> int:
    return next(n for n, line in enumerate(workspace.read(path).decode().splitlines(), 1) if needle in line)


# --- Mintlify ------------------------------------------------------------------------------------------

NEW_MDX = "---\ntitle: Rollbacks\ndescription: Undo a deploy\n---\n\nSee [requirements](deploy#requirements).\n"


def test_mintlify_new_page_listed_in_navigation_passes(open_site):
    workspace = open_site("mintlify")
    workspace.write("docs/guides/rollbacks.mdx", NEW_MDX.encode())
    edit(workspace, "docs/docs.json", '"guides/deploy",', '"guides/deploy",\n"guides/rollbacks",')
    report = check_docs(workspace)
    assert report.problems == [] and report.pages_checked == 1


def test_mintlify_new_page_missing_from_navigation(open_site):
    workspace = open_site("mintlify")
    workspace.write("docs/guides/rollbacks.mdx", NEW_MDX.encode())
    workspace.write("docs/snippets/extra.mdx", b"<Tip>Snippets are not pages.</Tip>\n")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "docs/guides/rollbacks.mdx",
            1,
            "new page is not in the navigation, so readers cannot find it: add "
            '"guides/rollbacks" to the `pages` of a group in docs/docs.json',
        )
    ]


def test_mintlify_nav_entry_without_a_page(open_site):
    workspace = open_site("mintlify")
    edit(workspace, "docs/docs.json", '"guides/deploy",', '"guides/deploy",\n"guides/ghost",')
    assert check_docs(workspace).problems == [
        DocsProblem(
            "docs/docs.json",
            line_of(workspace, "docs/docs.json", "guides/ghost"),
            "navigation entry `guides/ghost` points to no page (looked for docs/guides/ghost.mdx, docs/guides/ghost.md); "
            "create the page or fix the entry",
        )
    ]


def test_mintlify_deleting_a_listed_page_breaks_its_entry_and_links(open_site):
    workspace = open_site("mintlify")
    workspace.delete("docs/quickstart.mdx")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "docs/docs.json",
            line_of(workspace, "docs/docs.json", '"quickstart"'),
            "navigation entry `quickstart` points to docs/quickstart.mdx, which this run moved or deleted; "
            "update the entry to the page's new path or remove it",
        ),
        # Root-relative links and links in JSX components; legacy.mdx's quickstart#nope too: its anchor may come
        # from something the check cannot see (a theme's hook), and the page it is on is gone now.
        DocsProblem("docs/index.mdx", 6, "link to /quickstart, which this run moved or deleted"),
        DocsProblem("docs/index.mdx", 9, "link to /quickstart, which this run moved or deleted"),
        DocsProblem("docs/legacy.mdx", 5, "link to quickstart#nope, which this run moved or deleted"),
    ]


def test_mintlify_invalid_docs_json(open_site):
    workspace = open_site("mintlify")
    edit(workspace, "docs/docs.json", '"guides/deploy",', '"guides/deploy",,')
    [problem] = check_docs(workspace).problems
    assert (problem.path, problem.line) == ("docs/docs.json", line_of(workspace, "docs/docs.json", ",,"))
    assert problem.message.startswith("docs/docs.json is not valid JSON (Expecting value")
    assert problem.message.endswith("; fix it so the site builds")


def test_mintlify_old_problems_in_untouched_pages_are_not_reported(open_site):
    workspace = open_site("mintlify")
    edit(workspace, "docs/guides/deploy.mdx", "A server.", "A server with 2 GB of memory.")
    report = check_docs(workspace)
    assert report.ok and report.pages_checked == 1


def test_legacy_mint_json_navigation(open_site):
    workspace = open_site("mint.json")
    workspace.write("setup/upgrade.mdx", b"---\ntitle: Upgrade\n---\n")
    edit(workspace, "mint.json", '"setup/install"', '"setup/install", "setup/uninstall"')
    assert [(p.path, p.message.split(":")[0]) for p in check_docs(workspace).problems] == [
        (
            "mint.json",
            "navigation entry `setup/uninstall` points to no page (looked for setup/uninstall.mdx, "
            "setup/uninstall.md); create the page or fix the entry",
        ),
        ("setup/upgrade.mdx", "new page is not in the navigation, so readers cannot find it"),
    ]


# --- MkDocs --------------------------------------------------------------------------------------------


def test_mkdocs_new_page_in_nav_passes_and_drafts_need_no_entry(open_site):
    workspace = open_site("mkdocs")
    workspace.write(
        "documentation/guide/faq.md",
        b"---\ntitle: FAQ\n---\n\n# FAQ\n\n[Options](usage.md#options_1)\n[Advanced](usage.md#advanced)\n",
    )
    workspace.write("documentation/drafts/next.md", b"# Next\n")
    edit(
        workspace,
        "mkdocs.yml",
        "      - Usage: guide/usage.md\n",
        "      - Usage: guide/usage.md\n      - FAQ: guide/faq.md\n",
    )
    assert check_docs(workspace).problems == []


def test_mkdocs_new_page_missing_from_nav(open_site):
    workspace = open_site("mkdocs")
    workspace.write("documentation/guide/faq.md", b"# FAQ\n")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "documentation/guide/faq.md",
            1,
            "new page is not in the navigation, so readers cannot find it: add "
            "`- Title: guide/faq.md` to `nav:` in mkdocs.yml",
        )
    ]


def test_mkdocs_new_nav_entry_without_a_page_and_old_ones_left_be(open_site):
    workspace = open_site("mkdocs")
    edit(workspace, "mkdocs.yml", "  - Home: index.md\n", "  - Home: index.md\n  - Changelog: changelog.md\n")
    # "guide/removed-long-ago.md" was broken before this run, so it is not reported.
    assert check_docs(workspace).problems == [
        DocsProblem(
            "mkdocs.yml",
            line_of(workspace, "mkdocs.yml", "changelog.md"),
            "navigation entry `changelog.md` points to no page (looked for documentation/changelog.md); create the page "
            "or fix the entry",
        )
    ]


def test_mkdocs_moving_a_page_breaks_its_nav_entry(open_site):
    workspace = open_site("mkdocs")
    workspace.move("documentation/guide/usage.md", "documentation/guide/use.md")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "documentation/guide/use.md",
            1,
            "new page is not in the navigation, so readers cannot find it: "
            "add `- Title: guide/use.md` to `nav:` in mkdocs.yml",
        ),
        DocsProblem(
            "mkdocs.yml",
            16,
            "navigation entry `guide/usage.md` points to documentation/guide/usage.md, "
            "which this run moved or deleted; update the entry to the page's new path or "
            "remove it",
        ),
    ]
    edit(workspace, "mkdocs.yml", "Usage: guide/usage.md", "Usage: guide/use.md")
    assert check_docs(workspace).problems == []


def test_mkdocs_yaml_that_does_not_parse(open_site):
    workspace = open_site("mkdocs")
    edit(workspace, "mkdocs.yml", "  - Home: index.md\n", "  - Home: index.md\n    - Bad: [x\n")
    [problem] = check_docs(workspace).problems
    assert (problem.path, problem.line) == ("mkdocs.yml", line_of(workspace, "mkdocs.yml", "Bad: [x"))
    assert problem.message.startswith("mkdocs.yml is not valid YAML (")


# --- Docusaurus ----------------------------------------------------------------------------------------


def test_docusaurus_new_doc_in_an_autogenerated_folder_passes(open_site):
    workspace = open_site("docusaurus")
    workspace.write("website/docs/reference/cli.md", b"---\ntitle: CLI\n---\n\n# CLI\n")
    assert check_docs(workspace).problems == []


def test_docusaurus_new_doc_missing_from_sidebars_then_added(open_site):
    workspace = open_site("docusaurus")
    workspace.write("website/docs/guides/02-deploy.md", b"---\ntitle: Deploy\n---\n\n# Deploy\n")
    workspace.write("website/docs/guides/hidden.md", b"---\nunlisted: true\n---\n\n# Hidden\n")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "website/docs/guides/02-deploy.md",
            1,
            "new page is not in the navigation, so readers cannot find it: add 'guides/deploy' to a sidebar in "
            "website/sidebars.ts (or set its front matter `id` and list that)",
        )
    ]
    edit(workspace, "website/sidebars.ts", "'guides/setup',", "'guides/setup', 'guides/deploy',")
    assert check_docs(workspace).problems == []


def test_docusaurus_sidebar_entry_without_a_doc(open_site):
    workspace = open_site("docusaurus")
    edit(workspace, "website/sidebars.ts", "    'intro',\n", "    'intro',\n    'guides/ghost',\n")
    # 'guides/retired' in legacySidebar was broken before this run and is left be.
    assert check_docs(workspace).problems == [
        DocsProblem(
            "website/sidebars.ts",
            6,
            "navigation entry `guides/ghost` points to no page (looked for "
            "website/docs/guides/ghost.md, website/docs/guides/ghost.mdx); create the page or "
            "fix the entry",
        )
    ]


def test_docusaurus_deleting_a_doc_listed_by_its_front_matter_id(open_site):
    workspace = open_site("docusaurus")
    workspace.delete("website/docs/renamed.md")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "website/sidebars.ts",
            10,
            "navigation entry `custom-id` points to website/docs/renamed.md, which this run "
            "moved or deleted; update the entry to the page's new path or remove it",
        )
    ]


# --- Sphinx --------------------------------------------------------------------------------------------


def test_sphinx_new_page_in_a_myst_toctree_passes(open_site):
    workspace = open_site("sphinx")
    workspace.write("docs/guide/extra.md", b"# Extra\n")
    edit(workspace, "docs/guide/usage.md", "advanced\n", "advanced\nextra\n")
    assert check_docs(workspace).problems == []


def test_sphinx_new_page_missing_from_toctrees(open_site):
    workspace = open_site("sphinx")
    workspace.write("docs/guide/extra.md", b"# Extra\n")
    workspace.write("docs/orphan.rst", b":orphan:\n\nOrphan\n======\n")
    workspace.write("docs/drafts/later.rst", b"Later\n=====\n")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "docs/guide/extra.md",
            1,
            "new page is not in the navigation, so readers cannot find it: add `guide/extra` "
            "to the toctree in docs/index.rst",
        )
    ]


def test_sphinx_toctree_entry_without_a_document(open_site):
    workspace = open_site("sphinx")
    edit(workspace, "docs/index.rst", "   install\n", "   install\n   Upgrading <upgrade>\n")
    # `old-missing` was broken before this run and is left be.
    assert check_docs(workspace).problems == [
        DocsProblem(
            "docs/index.rst",
            9,
            "navigation entry `Upgrading <upgrade>` points to no page (looked for docs/upgrade.rst, "
            "docs/upgrade.md); create the page or fix the entry",
        )
    ]


def test_sphinx_deleting_a_document_breaks_its_toctree_entry(open_site):
    workspace = open_site("sphinx")
    workspace.delete("docs/guide/advanced.md")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "docs/guide/usage.md",
            7,
            "navigation entry `advanced` points to docs/guide/advanced.md, which this run moved "
            "or deleted; update the entry to the page's new path or remove it",
        )
    ]


# --- Plain Markdown ------------------------------------------------------------------------------------


def test_plain_markdown_has_no_navigation_to_check(open_site):
    workspace = open_site("markdown")
    workspace.write("docs/faq.md", b"# FAQ\n\n[Setup](setup.md#setup)\n")
    assert check_docs(workspace).problems == []
