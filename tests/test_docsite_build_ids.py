"""Anchors and files the build makes that a page's text shows only indirectly: attr_list's `{ id=… }`,
superfences' code block ids, `pymdownx.tabbed` tab ids, ids a page-rewriting MkDocs hook writes; Sphinx's
`name.*` image wildcard and `html_additional_pages`. Small sites modelled on real ones (MkDocs Material, Sphinx)."""

from service.agent.docs_check import check_docs
from service.agent.docsite.pages import Mode, parse_page


def messages(report) -> list[tuple[str, int, str]]:
    return [(p.path, p.line, p.message.split(" (")[0]) for p in report.problems]


# --- MkDocs Material ---------------------------------------------------------------------------------------------

SETTINGS_PAGE = """# Setting up the header

## Configuration

### Header bar <small>sticky</small> { id=header-bar }

Turn it on:

=== ":material-cog: Basic"

    ``` { .yaml .no-copy #header-example }
    theme:
      features: [header.sticky]
    ```

=== "... or advanced"

    Read on.

<!-- md:option theme.header.sticky -->
"""

HOOK = """import re


def on_page_markdown(markdown, *, page, config, files):
    return re.sub(r"<!-- md:option (\\S+) -->", lambda m: f"`{m[1]}` {{ #+{m[1]} }}", markdown)
"""

MATERIAL = {
    "mkdocs.yml": "site_name: Lantern\ntheme:\n  name: material\nnav:\n  - index.md\n  - header.md\n"
    "markdown_extensions:\n  - attr_list\n  - pymdownx.superfences\n  - pymdownx.tabbed:\n"
    "      alternate_style: true\n      combine_header_slug: true\n"
    "      slugify: !!python/object/apply:pymdownx.slugs.slugify\n        kwds:\n          case: lower\n"
    "hooks:\n  - overrides/hooks/options.py\n",
    "docs/index.md": "# Lantern\n",
    "docs/header.md": SETTINGS_PAGE,
    "overrides/hooks/options.py": HOOK,
}

LINKING_PAGE = """# Lantern

- [The bar](header.md#header-bar) and [its example](header.md#header-example).
- Tabs: [basic](header.md#header-bar-basic), [advanced](header.md#header-bar--or-advanced).
- The option [sticky](header.md#+theme.header.sticky).
- Wrong: [bar](header.md#header-bars), [tab](header.md#header-bar-expert), [slug](header.md#sticky-header).
"""


def test_attr_list_key_ids_and_code_block_ids_are_anchors():
    anchors = parse_page(SETTINGS_PAGE, Mode.MARKDOWN).anchors
    assert {"header-bar", "header-example"} <= anchors
    assert "header-bar-small-sticky-small" not in anchors


def test_tab_ids_and_hook_ids_are_valid_anchors_and_others_still_broken(open_workspace):
    workspace = open_workspace(MATERIAL)
    workspace.write("docs/index.md", LINKING_PAGE.encode())
    assert sorted(messages(check_docs(workspace))) == [
        ("docs/index.md", 6, "broken anchor: header.md#header-bar-expert"),
        ("docs/index.md", 6, "broken anchor: header.md#header-bars"),
        ("docs/index.md", 6, "broken anchor: header.md#sticky-header"),
    ]


def test_without_slugify_or_hooks_tabs_and_option_ids_are_not_anchors(open_workspace):
    plain = dict(MATERIAL)
    plain["mkdocs.yml"] = (
        "site_name: Lantern\nnav:\n  - index.md\n  - header.md\nmarkdown_extensions:\n  - attr_list\n"
        "  - pymdownx.tabbed:\n      alternate_style: true\n"
    )
    workspace = open_workspace(plain)
    workspace.write("docs/index.md", LINKING_PAGE.encode())
    broken = [message for _, _, message in messages(check_docs(workspace))]
    assert "broken anchor: header.md#header-bar-basic" in broken
    assert "broken anchor: header.md#+theme.header.sticky" in broken
    assert "broken anchor: header.md#header-bar" not in broken


# --- Sphinx ------------------------------------------------------------------------------------------------------

SPHINX = {
    "docs/conf.py": 'project = "Lantern"\nhtml_static_path = ["_static"]\n'
    "html_additional_pages = {'overview': 'overview.html'}\n",
    "docs/index.rst": "Lantern\n=======\n\n.. toctree::\n\n   intl\n",
    "docs/intl.rst": "Translations\n============\n",
    "docs/_static/flow.svg": "<svg/>",
    "docs/_static/flow.png": b"\x89PNG\0",
}

INTL_PAGE = """Translations
============

.. figure:: /_static/flow.*

   How a message is translated.

.. image:: _static/missing.*

The `whole table of contents <overview.html>`_ and `the old index <index-old.html>`_.
"""


def test_image_wildcards_and_additional_pages_resolve(open_workspace):
    workspace = open_workspace(SPHINX)
    workspace.write("docs/intl.rst", INTL_PAGE.encode())
    assert messages(check_docs(workspace)) == [
        ("docs/intl.rst", 8, "broken link: _static/missing.*"),
        ("docs/intl.rst", 10, "broken link: index-old.html"),
    ]
