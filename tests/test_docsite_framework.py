"""The framework interface: every framework module provides it, readers work over the tree they are handed, and
Docusaurus's doc-id rule is one function that navigation, routing and the suggested entry share."""

import pytest

from service.agent.docs_check import check_docs
from service.agent.docsite import detect
from service.agent.docsite.docusaurus_routes import doc_id
from service.agent.docsite.framework import AddsToPages, ChecksPages
from service.agent.docsite.tree import Tree

CONFIG = "module.exports = {presets: [['classic', {docs: {sidebarPath: './sidebars.js'}}]]};\n"


@pytest.mark.parametrize(
    "relative, front, expected",
    [
        ("intro.md", {}, "intro"),
        ("02-intro.md", {}, "intro"),
        # Number prefixes leave the folders too, and a front matter `id` replaces the file name only.
        ("01-guides/02-setup.md", {}, "guides/setup"),
        ("01-guides/02-setup.md", {"id": "start"}, "guides/start"),
        ("guides/setup.mdx", {"id": 7}, "guides/7"),
        ("01-guides/02-setup.md", {"parse_number_prefixes": False}, "01-guides/02-setup"),
        ("01-guides/02-setup.md", {"id": " "}, "guides/setup"),
    ],
)
def test_doc_id_follows_docusaurus(relative, front, expected):
    assert doc_id(relative, front) == expected


def test_sidebar_ids_are_the_docs_ids_and_the_suggestion_names_one(open_workspace):
    workspace = open_workspace(
        {
            "docusaurus.config.js": CONFIG,
            "sidebars.js": "module.exports = {docs: ['intro', 'guides/start']};\n",
            "docs/01-intro.md": "# Intro\n",
            "docs/01-guides/02-setup.md": "---\nid: start\n---\n\n# Setup\n",
        }
    )
    site = detect.detect_site(workspace)
    navigation = detect.read_navigation(Tree(workspace), site)
    assert [(e.ref, e.found) for e in navigation.entries] == [("intro", True), ("guides/start", True)]
    # A new page with its own `id`, in a numbered folder: the id to list keeps neither prefix nor file name.
    workspace.write("docs/01-guides/03-deploy.md", b"---\nid: shipping\n---\n\n# Deploy\n")
    [problem] = check_docs(workspace, site).problems
    assert "add 'guides/shipping' to a sidebar in sidebars.js" in problem.message
    workspace.write("sidebars.js", b"module.exports = {docs: ['intro', 'guides/start', 'guides/shipping']};\n")
    assert check_docs(workspace, site).problems == []


def test_a_sidebar_id_written_with_the_file_name_is_not_the_doc(open_workspace):
    # Docusaurus refuses a sidebar naming `guides/setup` when the doc's front matter says `id: start`.
    workspace = open_workspace(
        {
            "docusaurus.config.js": CONFIG,
            "sidebars.js": "module.exports = {docs: ['guides/start']};\n",
            "docs/guides/setup.md": "---\nid: start\n---\n\n# Setup\n",
        }
    )
    site = detect.detect_site(workspace)
    workspace.write("sidebars.js", b"module.exports = {docs: ['guides/start', '01-guides/setup', 'guides/setup']};\n")
    broken = [p.message for p in check_docs(workspace, site).problems]
    assert len(broken) == 2 and all("points to no page" in m for m in broken)


def test_every_framework_reads_the_tree_it_is_handed(open_workspace):
    # The start view's navigation is read from the start tree: a page deleted since is still listed there.
    workspace = open_workspace(
        {
            "mkdocs.yml": "site_name: S\nnav:\n  - index.md\n  - old.md\n",
            "docs/index.md": "# Home\n",
            "docs/old.md": "# Old\n",
        }
    )
    site = detect.detect_site(workspace)
    workspace.delete("docs/old.md")
    with workspace.start_view() as start:
        assert detect.navigation_order(Tree(start), site) == ["docs/index.md", "docs/old.md"]
    assert detect.navigation_order(Tree(workspace), site) == ["docs/index.md"]


def test_only_frameworks_that_add_to_pages_are_asked_for_extras():
    adds = {name for name, module in detect.FRAMEWORKS.items() if isinstance(module, AddsToPages)}
    assert adds == {"hugo", "mkdocs"}
    checks = {name for name, module in detect.FRAMEWORKS.items() if isinstance(module, ChecksPages)}
    assert checks == {"mkdocs"}
