"""Sphinx cross-references by conf.py's settings (read through `ast`, never run): intersphinx inventories, MyST
heading anchors, MyST `[text](label)` links to labels. Small sites modelled on real ones."""

from service.agent.docs_check import check_docs
from service.agent.docsite.sphinx_conf import read_conf

CONF = """import os
import sys

sys.path.insert(0, os.path.abspath(".."))
project = "Orbit"
extensions = ["myst_parser", "sphinx.ext.intersphinx"]
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "requests": ("https://requests.readthedocs.io/en/latest/", None),
}
intersphinx_mapping["attrs"] = ("https://www.attrs.org/en/stable/", None)
myst_heading_anchors = 3
"""

SITE = {
    "docs/conf.py": CONF,
    "docs/index.rst": "Orbit\n=====\n\n.. toctree::\n\n   guide\n   notes\n",
    "docs/guide.md": "# Guide\n\n(guide-start)=\n## Getting started\n\nText.\n",
    "docs/notes.md": "# Notes\n\nSee [the start](guide-start) and [the heading](guide.md#getting-started).\n",
}


def messages(report) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in report.problems]


def test_conf_literals_are_read_without_running_it():
    conf = read_conf(CONF + "intersphinx_mapping.update({'numpy': ('https://numpy.org/doc/stable/', None)})\n")
    assert conf.inventories == {"python", "requests", "attrs", "numpy"}
    assert conf.heading_anchors == 3 and conf.redirects is None
    assert read_conf("intersphinx_mapping = dict(python=('https://docs.python.org/3', None))\n").inventories == {
        "python"
    }
    assert read_conf("intersphinx_mapping = {**base}\n").inventories is None  # computed: not known
    assert read_conf("def broken(:\n").inventories is None
    assert read_conf("from shared_conf import *\nintersphinx_mapping = {'python': ('x', None)}\n").inventories is None
    assert read_conf("extensions = ['sphinx.ext.intersphinx']\n").inventories is None  # set where it is not seen
    assert read_conf("extensions = []\n").inventories == frozenset()  # no intersphinx: no prefix is another's


def test_intersphinx_prefixes_that_name_an_inventory_are_external_and_others_are_reported(open_workspace):
    workspace = open_workspace(SITE)
    workspace.write(
        "docs/index.rst",
        b"Orbit\n=====\n\n:doc:`python:tutorial/index`, :ref:`requests:quickstart`, "
        b":ref:`attrs <attrs:overview>`, :doc:`pyton:tutorial/index`, "
        b":ref:`numpy:basics`\n\n.. toctree::\n\n   guide\n   notes\n",
    )
    assert messages(check_docs(workspace)) == [
        (
            "docs/index.rst",
            "broken document reference: pyton:tutorial/index (`pyton` names no inventory in conf.py's "
            "`intersphinx_mapping` (it has: attrs, python, requests))",
        ),
        (
            "docs/index.rst",
            "unknown label: numpy:basics (`numpy` names no inventory in conf.py's "
            "`intersphinx_mapping` (it has: attrs, python, requests))",
        ),
    ]


def test_intersphinx_in_myst_roles(open_workspace):
    workspace = open_workspace(SITE)
    workspace.write("docs/notes.md", b"# Notes\n\n{doc}`python:library/os` {ref}`pythn:os-path`\n")
    assert [m for _, m in messages(check_docs(workspace))] == [
        "unknown label: pythn:os-path (`pythn` names no inventory in conf.py's `intersphinx_mapping` (it has: attrs, "
        "python, requests))"
    ]


def test_myst_heading_anchors_are_checked_when_configured(open_workspace):
    workspace = open_workspace(SITE)
    workspace.write(
        "docs/notes.md",
        b"# Notes\n\n[a](guide.md#getting-started) [b](guide.md#guide-start) "
        b"[c](guide.md#getting-strated) [d](#notes)\n",
    )
    assert [m for _, m in messages(check_docs(workspace))] == [
        "broken anchor: guide.md#getting-strated (docs/guide.md has no heading or id `getting-strated`); did you mean "
        "#getting-started?"
    ]
    workspace = open_workspace(SITE)
    workspace.write("docs/guide.md", b"# Guide\n\n(guide-start)=\n## First steps\n")
    assert [(p, m.split(":")[0]) for p, m in messages(check_docs(workspace))] == [
        ("docs/notes.md", "link to guide.md#getting-started")
    ]


def test_heading_anchors_are_not_judged_without_the_setting(open_workspace):
    workspace = open_workspace({**SITE, "docs/conf.py": CONF.replace("myst_heading_anchors = 3\n", "")})
    workspace.write("docs/notes.md", b"# Notes\n\n[c](guide.md#anything)\n")
    assert check_docs(workspace).problems == []


def test_myst_links_to_labels(open_workspace):
    workspace = open_workspace(SITE)
    workspace.write("docs/notes.md", b"# Notes\n\n[ok](guide-start) [bad](guide-strat)\n")
    assert messages(check_docs(workspace)) == [
        ("docs/notes.md", "broken link: guide-strat (no file guide-strat, and no page defines the label `guide-strat`)")
    ]
    workspace = open_workspace(SITE)
    workspace.write("docs/guide.md", b"# Guide\n\n(guide-begin)=\n## Getting started\n")
    assert [(p, m.split(" (")[0]) for p, m in messages(check_docs(workspace))] == [
        ("docs/notes.md", "link to guide-start no longer resolves after this run")
    ]


def test_myst_inventory_links_name_a_mapping(open_workspace):
    workspace = open_workspace(SITE)
    workspace.write(
        "docs/notes.md",
        b"# Notes\n\n[os](inv:python:py:module#os) <inv:requests#quickstart> "
        b"[any](inv:*:std:doc#index) [typo](inv:pyhton#os)\n",
    )
    assert [m for _, m in messages(check_docs(workspace))] == [
        "broken link: inv:pyhton#os (`pyhton` names no inventory in conf.py's `intersphinx_mapping` (it has: attrs, "
        "python, requests))"
    ]


def test_myst_links_to_domain_objects_are_left_to_the_build_and_missing_files_still_reported(open_workspace):
    workspace = open_workspace(SITE)
    workspace.write(
        "docs/notes.md", b"# Notes\n\n[frozen](orbit.frozen) [index](genindex) [img](shot.png) [page](setup.md)\n"
    )
    assert [m for _, m in messages(check_docs(workspace))] == [
        "broken link: setup.md (no file docs/setup.md)",
        "broken link: shot.png (no file docs/shot.png)",
    ]


def test_a_bare_any_reference_to_a_moved_document_in_an_untouched_page_is_reported(open_workspace):
    # Modelled on a site with `default_role = "any"` whose API page says `names` for the names page.
    workspace = open_workspace(
        {
            "docs/conf.py": "project = 'P'\ndefault_role = 'any'\n",
            "docs/index.rst": "P\n=\n\n.. toctree::\n\n   api\n   names\n",
            "docs/api.rst": "API\n===\n\nSee `names` and `os.path` for details.\n",
            "docs/names.rst": "Names\n=====\n\nText.\n",
        }
    )
    workspace.move("docs/names.rst", "docs/guide/names.rst")
    assert ("docs/api.rst", "link to names, which this run moved or deleted") in messages(check_docs(workspace))
    assert not [p for p in check_docs(workspace).problems if "os.path" in p.message]  # a Python object: not judged
