"""The reST parse with its speed-ups (lazily made docutils states) reads every page exactly as docutils as released
does: the repository's reST fixtures, and a page with each construct the docs check reads or that nests parses.
bench/rst_parity.py runs the same comparison over real Sphinx repositories."""

import importlib

import pytest

from service.agent.docsite.rst import may_define, names_text, option_signatures, parse_rst, plain_docutils

# Test modules whose site fixtures hold reST pages.
FIXTURE_MODULES = (
    "tests.docsite_layouts",
    "tests.test_docsite_containers",
    "tests.test_docsite_languages",
    "tests.test_docsite_nav_unreadable",
    "tests.test_docsite_page_store",
    "tests.test_docsite_redirects",
    "tests.test_docsite_routing",
    "tests.test_docsite_sphinx_options",
    "tests.test_docsite_sphinx_refs",
)

CONSTRUCTS = """\
:orphan:
:tocdepth: 2

.. _top-label:

=========
 Title
=========

Intro with :doc:`guide`, :ref:`Setup <setup-label>`, :download:`file <files/a.zip>`, `Title`_, `a link
<https://example.com>`_, an `anonymous one <other.html>`__, `interpreted`, ``literal``, *emphasis* and
**strong**, a footnote [#note]_ and a citation [CIT2002]_. Inline _`inline target` and |sub|.

.. |sub| replace:: substituted :ref:`sub-label`

.. [#note] The note, see :doc:`/index`.
.. [CIT2002] The citation.

.. _setup-label:

Setup
-----

- A bullet with :ref:`top-label`

  * nested, with `Setup`_

    1. enumerated
    2. and :doc:`../up`

- Term list:

  term
     Definition with :ref:`def-label`.
  other term : classifier
     More.

:field: value with :doc:`field-doc`
:other field:
   Indented body.

-a            An option list entry.
--long=VALUE  Another, see :ref:`opt-label`.

| A line block
|    with :doc:`line-doc`

    A block quote with :ref:`quote-label`.

    -- Attribution

Literal::

    :doc:`not-a-link`

>>> print(":doc:`doctest`")

+--------+----------------------+
| Grid   | :doc:`grid-doc`      |
+========+======================+
| cell   | - a list :ref:`g`    |
+--------+----------------------+

=====  ===================
Simple :ref:`simple-label`
=====  ===================
a      b
=====  ===================

.. note::

   A note with :ref:`note-label`.

   .. versionadded:: 2.0 With :doc:`versioned`.

   .. code-block:: python

      print(":ref:`code`")

.. toctree::
   :maxdepth: 2
   :glob:

   intro
   Guide <guide/index>
   reference/*

.. image:: images/pic.png
   :alt: a picture

.. figure:: images/fig.png
   :name: fig-name

   Caption with :doc:`caption-doc`.

.. include:: snippet.inc
.. literalinclude:: example.py

.. program:: tool

.. option:: -o FILE, --output FILE

   Writes :option:`--output` and :option:`tool -o`.

.. py:function:: run(x)

   Runs :ref:`run-label`.

.. tab-set::

   .. tab-item:: One

      Tabbed :doc:`tab-doc`.

.. only:: html

   Only :ref:`only-label`.

.. glossary::

   term one
      Glossary with :ref:`glossary-label`.

.. raw:: html

   <a href="raw.html">raw</a>

.. unknown-directive:: argument
   :unknown-option: value

   Body with :ref:`unknown-body`.

.. _external: https://example.com/ext
.. _indirect: setup-label_
.. __: https://example.com/anon

Section with a duplicate
------------------------

Setup
-----

Trailing `Missing name`_ and `Setup`_.

.. comment with :ref:`commented`

..
   A comment block.

Transition below.

----------

End.
"""

BROKEN = [
    "Title\n===\n\n.. toctree::\n  bad indent\n",
    "- item\n  * unfinished\n\n  :doc:`x\n",
    "Text\n====\n\n.. note::\n\n.. _dangling:\n\n* a\n+ b\n#. c\n\n`unclosed\n",
    "+---+\n| x |\n+--\n",
    ".. |loop| replace:: |loop|\n\n|loop|\n",
    "A\n=\n\nB\n=\n\nC\n-\n\nD\n~\n\nE\n=\n\nF\n~\n",
    "\t.. note::\n\t\tTabbed :ref:`tab-label`.\n",
]


def _fixture_pages() -> list[str]:
    pages = []
    for name in FIXTURE_MODULES:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, dict):
                pages += [text for path, text in value.items() if isinstance(path, str) and path.endswith(".rst")]
    return pages


def _plain(text: str):
    with plain_docutils():
        return parse_rst(text)


def test_fixture_pages_parse_as_plain_docutils_does():
    pages = _fixture_pages()
    assert len(pages) >= 20  # the fixture modules still hold their sites
    for text in pages:
        assert parse_rst(text) == _plain(text)


@pytest.mark.parametrize(
    "text", [CONSTRUCTS, *BROKEN], ids=["constructs", *(f"broken-{i}" for i in range(len(BROKEN)))]
)
def test_constructs_parse_as_plain_docutils_does(text):
    fast = parse_rst(text)
    assert fast == _plain(text)
    assert fast == parse_rst(text)  # and again, with the pooled nested state machines reused


def test_constructs_page_is_read_fully():
    page = parse_rst(CONSTRUCTS)
    targets = {link.target for link in page.links}
    assert {"guide", "setup-label", "note-label", "versioned", "tab-doc", "unknown-body", "grid-doc", "g"} <= targets
    assert {"top-label", "setup-label", "inline target"} <= page.labels
    assert ("tool", "--output") in page.options
    assert [entry.entry for entry in page.toctrees] == ["intro", "Guide <guide/index>", "reference/*"]


TRICKY_TARGETS = """\
.. _plain-label:
.. _`Quoted Label`:
.. _escaped\\_label:
.. _spaced\\ label:
.. _wrapped
   label:
.. _indirect-label: plain-label_
.. _ext-label: https://example.com/not-a-label

Text with _`inline  target`, an `alias text <plain-label_>`_, an `<aliased-name_>`_ and
_`split
inline target`. Greek _`ΟΔΟΣ` and tabbed\t_`tab target`.

.. |sub| replace:: _`substituted target`

.. note::

   .. _nested-label:

   Nested.
"""


def test_every_label_a_page_defines_passes_the_text_test():
    page = parse_rst(TRICKY_TARGETS)
    assert {
        "plain-label",
        "quoted label",
        "escaped_label",
        "spacedlabel",
        "wrapped label",
        "indirect-label",
        "inline target",
        "alias text",
        "aliased-name",
        "split inline target",
        "οδος",
        "tab target",
        "nested-label",
    } <= page.labels
    assert "ext-label" not in page.labels
    for text in [TRICKY_TARGETS, CONSTRUCTS, *BROKEN, *_fixture_pages()]:
        names = names_text(text)
        assert all(may_define(names, label) for label in parse_rst(text).labels), text


def test_a_page_that_only_mentions_a_label_need_not_be_parsed():
    names = names_text(
        "Setup\n=====\n\nSee :ref:`plain-label`, :ref:`the label <plain-label>`, the plain label, "
        "`plain-label`, ``x_plain-label`` and `text <https://example.com/plain-label>`_.\n"
    )
    assert not may_define(names, "plain-label")
    assert may_define(names_text(".. _Plain-Label:\n\nText.\n"), "plain-label")


OPTIONS = """\
.. program:: tool

.. option:: -b name, --builder name
            --long-form=VALUE

   The builder; :option:`-q` is elsewhere.

.. CMDOPTION:: --upper

.. note::

   .. std:option:: --nested

Prose naming --prose and -q.
"""


def test_every_option_a_page_defines_is_in_its_option_signatures():
    page = parse_rst(OPTIONS)
    assert {name for _, name in page.options} == {"-b", "--builder", "--long-form", "--upper", "--nested"}
    for text in [OPTIONS, CONSTRUCTS, *BROKEN, *_fixture_pages()]:
        signatures = option_signatures(text)
        assert all(name in signatures for _, name in parse_rst(text).options), text
    assert "--prose" not in option_signatures(OPTIONS)
    assert "-q" not in option_signatures(OPTIONS)  # referenced in a body, defined nowhere
