"""Links inside containers are seen: MkDocs admonitions, content tabs, annotations and attr_list; footnotes; MDX
inside components; MyST directive bodies; reST directive bodies (Sphinx's and extensions'); reST links to a
section title; and files under a repository's own `_static/`. Small sites modelled on real ones."""

from service.agent.docs_check import check_docs
from service.agent.docsite.pages import Mode, parse_page


def messages(report) -> list[tuple[str, int, str]]:
    return [(p.path, p.line, p.message) for p in report.problems]


# --- MkDocs Material ---------------------------------------------------------------------------------------------

MATERIAL_PAGE = """# Install

!!! note "Before you start"
    Read the [overview](overview.md).

??? tip

    Collapsed, after a blank line: see [tips](tips.md).

???+ warning "Nested"
    !!! danger
        Deeper: [dangers](overview.md#dangers).

=== "pip"

    ```sh
    pip install orbit  # (1)!
    ```

    1.  The [index](overview.md){ .md-button } annotation.

=== "conda"

    Get it [from conda](tips.md).

        an indented code block in a tab: [not a link](nowhere.md)

A footnote[^1].

[^1]: See the [overview](overview.md).
"""

MKDOCS = {
    "mkdocs.yml": "site_name: Orbit\ntheme:\n  name: material\nmarkdown_extensions:\n  - admonition\n"
    "  - pymdownx.details\n  - pymdownx.superfences\n  - pymdownx.tabbed:\n      alternate_style: true\n"
    "  - attr_list\n  - footnotes\n",
    "docs/index.md": "# Orbit\n",
    "docs/install.md": MATERIAL_PAGE,
    "docs/overview.md": "# Overview\n\n## Dangers\n",
    "docs/tips.md": "# Tips\n",
}


def test_links_in_admonitions_tabs_annotations_and_footnotes_are_seen():
    links = [(link.line, link.target) for link in parse_page(MATERIAL_PAGE, Mode.MARKDOWN).links]
    assert links == [
        (4, "overview.md"),
        (8, "tips.md"),
        (12, "overview.md#dangers"),
        (20, "overview.md"),
        (24, "tips.md"),
        (30, "overview.md"),
    ]


def test_a_move_breaks_links_inside_containers(open_workspace):
    workspace = open_workspace(MKDOCS)
    workspace.move("docs/tips.md", "docs/guide/tips.md")
    assert [
        (path, line) for path, line, message in messages(check_docs(workspace)) if message.startswith("link to tips.md")
    ] == [("docs/install.md", 8), ("docs/install.md", 24)]


def test_broken_links_written_inside_containers_are_reported(open_workspace):
    workspace = open_workspace(MKDOCS)
    workspace.write(
        "docs/install.md",
        MATERIAL_PAGE.replace("(overview.md#dangers)", "(overview.md#danger)")
        .replace("[from conda](tips.md)", "[from conda](tip.md)")
        .encode(),
    )
    assert [(line, message.split(" (")[0]) for _, line, message in messages(check_docs(workspace))] == [
        (12, "broken anchor: overview.md#danger"),
        (24, "broken link: tip.md"),
    ]


def test_a_container_marker_inside_a_code_fence_is_code():
    text = "# T\n\n```md\n!!! note\n    [x](x.md)\n```\n\n[y](y.md)\n"
    assert [link.target for link in parse_page(text, Mode.MARKDOWN).links] == ["y.md"]


# --- MDX ---------------------------------------------------------------------------------------------------------


def test_links_inside_mdx_components_are_seen():
    text = (
        "import Tabs from '@theme/Tabs';\n\n<Tabs>\n  <TabItem value=\"a\">\n\n    See [setup](./setup.md).\n\n"
        "  </TabItem>\n</Tabs>\n"
    )
    assert [(link.line, link.target) for link in parse_page(text, Mode.MDX).links] == [(6, "./setup.md")]


# --- Sphinx: MyST and reST ----------------------------------------------------------------------------------------

SPHINX = {
    "docs/conf.py": 'project = "Orbit"\nextensions = ["myst_parser", "sphinx_design"]\nhtml_static_path = ["_static"]\n'
    'rst_epilog = """\n.. _Orbit site: https://orbit.example\n"""\n',
    "docs/index.rst": "Orbit\n=====\n\n.. toctree::\n\n   api\n   guide\n",
    "docs/api.rst": "API\n===\n\n.. _api-config:\n\nConfig\n------\n",
    "docs/guide.md": "# Guide\n\n(guide-top)=\n## Top\n",
    "docs/_static/logo.png": b"\x89PNG\0",
}

MYST_PAGE = """# Guide

(guide-top)=
## Top

```{note}
See {doc}`api` and [the config](api-config).
```

:::{dropdown} More
:open:

Read {ref}`api-config` and [missing](nothere.md).
:::

````{tab-set}
```{tab-item} One
:sync: one

{doc}`apx`
```
````

```{glossary}
Term
  Defined in {doc}`api`.
```

```{code-block} md
[not a link](nowhere.md)
```
"""


def test_links_in_myst_directive_bodies_are_checked(open_workspace):
    workspace = open_workspace(SPHINX)
    workspace.write("docs/guide.md", MYST_PAGE.encode())
    assert messages(check_docs(workspace)) == [
        ("docs/guide.md", 13, "broken link: nothere.md (no file docs/nothere.md)"),
        ("docs/guide.md", 20, "broken document reference: apx (no document docs/apx)"),
    ]


def test_a_label_renamed_inside_a_myst_directive_breaks_refs_to_it(open_workspace):
    workspace = open_workspace(
        {
            **SPHINX,
            "docs/guide.md": "# Guide\n\n```{note}\n(note-label)=\nA note.\n```\n",
            "docs/api.rst": "API\n===\n\nSee :ref:`note-label`.\n",
        }
    )
    workspace.write("docs/guide.md", b"# Guide\n\n```{note}\n(note-labels)=\nA note.\n```\n")
    assert [(p, m.split(" (")[0]) for p, _, m in messages(check_docs(workspace))] == [
        ("docs/api.rst", "link to note-label no longer resolves after this run")
    ]


RST_PAGE = """API
===

.. _api-config:

Config
------

.. data:: DEFAULT_TIMEOUT

   Seconds; see :ref:`api-config` and `the guide <guide.html>`_.

.. py:function:: connect(url)

   Opens a connection; see :doc:`guid`.

.. confval:: retries

   How often, see `the guide <guide.html#top>`_ and :ref:`api-confg`.

See `Config`_, `Orbit site`_ and `Configuration`_. The logo: `logo <_static/logo.png>`_,
`banner <_static/banner.png>`_ and `theme css <_static/pygments.css>`_.
"""


def test_links_in_rest_directive_bodies_and_to_section_titles_are_checked(open_workspace):
    workspace = open_workspace(SPHINX)
    workspace.write("docs/api.rst", RST_PAGE.encode())
    assert messages(check_docs(workspace)) == [
        ("docs/api.rst", 15, "broken document reference: guid (no document docs/guid)"),
        ("docs/api.rst", 19, "unknown label: api-confg (no page defines it with `.. _label:` or `(label)=`)"),
        # docutils gives a reference inside a paragraph the paragraph's first line.
        ("docs/api.rst", 21, "broken link: _static/banner.png (no file docs/_static/banner.png)"),
        (
            "docs/api.rst",
            21,
            "broken reference: `configuration`_ (this page has no section title or target named `configuration`)",
        ),
    ]


def test_default_role_any_references_are_checked_where_they_cannot_be_python_objects(open_workspace):
    workspace = open_workspace({**SPHINX, "docs/conf.py": SPHINX["docs/conf.py"] + 'default_role = "any"\n'})
    workspace.write(
        "docs/api.rst",
        b"API\n===\n\n.. _api-config:\n\nConfig\n------\n\n`api-config`, `guide`, "
        b"`orbit.connect`, `the guide <guide>`, `api-confg` and `/missing/page`.\n",
    )
    assert messages(check_docs(workspace)) == [
        ("docs/api.rst", 9, "unknown label: /missing/page (no page defines it with `.. _label:` or `(label)=`)"),
        ("docs/api.rst", 9, "unknown label: api-confg (no page defines it with `.. _label:` or `(label)=`)"),
    ]


def test_containers_inside_list_items_are_seen():
    text = (
        "# Steps\n\n1. Install it.\n\n    !!! warning\n        Read [the notes](notes.md) first.\n\n"
        "2. Run it, see [usage](usage.md).\n\n        indented code: [no](no.md)\n"
    )
    assert [(link.line, link.target) for link in parse_page(text, Mode.MARKDOWN).links] == [
        (6, "notes.md"),
        (8, "usage.md"),
    ]


def test_deeply_nested_containers_parse_within_bounds():
    import time

    text = "".join(" " * (4 * depth) + "!!! note\n" for depth in range(2_000)) + " " * 8_000 + "[x](x.md)\n"
    started = time.perf_counter()
    page = parse_page(text, Mode.MARKDOWN)
    assert time.perf_counter() - started < 10
    assert page.uncheckable or [link.target for link in page.links] == ["x.md"]
