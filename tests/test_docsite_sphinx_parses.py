"""A cold check of a Sphinx site parses only the reST pages that can matter: for the navigation, those that write
a `toctree` directive (not those that only mention one); for a label, those whose text could define it (not those
that only reference it); for an option, those whose `.. option::` signatures name it. What they find is what parsing every page finds. A small site modelled on Sphinx's docs,
which describe their own directives."""

from service.agent.docs_check import check_docs
from service.agent.docsite.detect import detect_site
from service.agent.docsite.pages import Mode
from service.agent.docsite.sphinx import navigation, router
from service.agent.docsite.tree import ParseCache, Tree

SITE = {
    "docs/conf.py": "project = 'Orbit'\nextensions = []\n",
    "docs/index.rst": "Orbit\n=====\n\n.. toctree::\n\n   about\n   guide\n   notes\n   upper\n",
    "docs/about.rst": "About\n=====\n\nThe ``toctree`` directive lists pages; see :ref:`setup` for the setup.\n",
    "docs/guide.rst": "Guide\n=====\n\n.. _setup:\n\nSetup\n-----\n\nText, and `Aliased <setup_>`_.\n",
    "docs/notes.rst": "Notes\n=====\n\nBefore the setup, _`inline  notes`.\n",
    # The directive name in capitals, and the word in lowercase: a toctree all the same.
    "docs/upper.rst": "Upper\n=====\n\n.. a toctree follows\n\n.. TOCTREE::\n\n   api\n",
    "docs/api.rst": "API\n===\n\nSee :ref:`aliased`, :ref:`inline notes` and :ref:`setup`.\n",
    # Names --verbose in prose before the `.. option::` directive that defines another option.
    "docs/cli.rst": "CLI\n===\n\nUse --verbose.\n\n.. option:: --quiet\n\n   Quiet.\n",
    "docs/man.rst": "Man\n===\n\n.. program:: tool\n\n.. option:: -v, --verbose\n\n   Verbose; not :option:`--quiet`.\n",
}


def _tree(workspace) -> Tree:
    return Tree(workspace, cache=ParseCache())


def test_navigation_parses_pages_that_write_the_directive(open_workspace):
    workspace = open_workspace(SITE)
    site = detect_site(workspace)
    tree = _tree(workspace)
    found = navigation(tree, site)
    assert sorted((entry.file, entry.ref) for entry in found.entries) == [
        ("docs/index.rst", "about"),
        ("docs/index.rst", "guide"),
        ("docs/index.rst", "notes"),
        ("docs/index.rst", "upper"),
        ("docs/upper.rst", "api"),
    ]
    assert not tree.parsed("docs/about.rst", Mode.RST)  # it mentions the directive, and is not parsed


def test_a_page_too_large_to_parse_is_still_reported_unreadable(open_workspace):
    # It may hold a toctree: as before the text tests, the navigation says it could not read it.
    large = "Big\n===\n\nThe toctree directive.\n\n" + "x " * 1_100_000
    workspace = open_workspace({**SITE, "docs/big.rst": large})
    found = navigation(_tree(workspace), detect_site(workspace))
    assert [(error.file, error.message.split(",")[0]) for error in found.unreadable] == [
        ("docs/big.rst", "docs/big.rst is too large to check (2")
    ]


def test_labels_are_found_where_defined_without_parsing_pages_that_reference_them(open_workspace):
    workspace = open_workspace(SITE)
    site = detect_site(workspace)
    tree = _tree(workspace)
    links = router(site, tree)
    assert links._label_page("setup") == "docs/guide.rst"
    assert links._label_page("aliased") == "docs/guide.rst"
    assert links._label_page("inline notes") == "docs/notes.rst"
    assert links._label_page("missing") is None
    # about.rst references `setup` and precedes guide.rst; api.rst names every label: neither was parsed.
    assert not tree.parsed("docs/about.rst", Mode.RST)
    assert not tree.parsed("docs/api.rst", Mode.RST)


def test_options_are_found_where_defined_without_parsing_pages_that_mention_them(open_workspace):
    workspace = open_workspace(SITE)
    site = detect_site(workspace)
    tree = _tree(workspace)
    links = router(site, tree)
    assert links._option_page("tool", "--verbose") == "docs/man.rst"
    assert not tree.parsed("docs/cli.rst", Mode.RST)  # it names --verbose in prose only
    assert links._option_page("", "--quiet") == "docs/cli.rst"


def test_the_check_finds_the_same_labels_and_navigation(open_workspace):
    workspace = open_workspace(SITE)
    workspace.write("docs/api.rst", SITE["docs/api.rst"].replace("See", "See also").encode())
    assert check_docs(workspace).problems == []
    workspace.write("docs/api.rst", b"API\n===\n\nSee :ref:`inline-notes`.\n")
    assert [p.message for p in check_docs(workspace).problems] == [
        "unknown label: inline-notes (no page defines it with `.. _label:` or `(label)=`)"
    ]
