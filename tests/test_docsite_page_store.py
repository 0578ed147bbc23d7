"""Parsed reStructuredText pages are kept beside the repository by blob id: the next run (a new forked process)
reads them back instead of running docutils again, never for a page the run edited, and a torn entry is parsed
again."""

from pathlib import Path

import pytest

from service.agent import tree_cache
from service.agent.docsite import page_store, pages, tree
from service.agent.docsite.pages import LinkKind, Mode
from tests.repositories import make_repository

FILES = {
    "docs/conf.py": "project = 'Store'\n",
    "docs/index.rst": "Home\n====\n\n.. toctree::\n\n   guide\n\nSee :doc:`guide` and :ref:`setup`.\n",
    "docs/guide.rst": ".. _setup:\n\nGuide\n=====\n\nBack to :doc:`index`.\n",
    "docs/notes.md": "# Notes\n\n[Guide](guide.rst)\n",
}


@pytest.fixture
def repository(git, tmp_path):
    return make_repository(git, tmp_path / "repo", FILES)


@pytest.fixture
def parses(monkeypatch):
    """The pages docutils or markdown-it parsed (their texts), counted where Tree calls the parser."""
    seen: list[str] = []
    original = pages.parse_page

    def counting(text, mode):
        seen.append(text)
        return original(text, mode)

    monkeypatch.setattr(tree, "parse_page", counting)
    return seen


def _run(workspace) -> tree.Tree:
    return tree.Tree(workspace, tree.ParseCache())  # a fresh process's empty memory


def test_a_later_run_reads_the_parsed_page_back_instead_of_parsing_it(repository, parses):
    with repository.open() as first:
        parsed = _run(first).page("docs/index.rst", Mode.RST)
    assert len(parses) == 1
    assert [(link.kind, link.target) for link in parsed.links] == [(LinkKind.DOC, "guide"), (LinkKind.REF, "setup")]
    with repository.open() as second:
        again = _run(second).page("docs/index.rst", Mode.RST)
    assert len(parses) == 1 and again == parsed


def test_an_edited_page_is_parsed_and_not_kept(repository, parses):
    with repository.open() as first:
        _run(first).page("docs/guide.rst", Mode.RST)
        first.write("docs/guide.rst", b"Guide\n=====\n\nNow :doc:`elsewhere`.\n")
        edited = _run(first).page("docs/guide.rst", Mode.RST)
    assert [link.target for link in edited.links] == ["elsewhere"]
    folder = Path(first.git_dir) / tree_cache.CACHE_FOLDER
    assert len([entry for entry in folder.iterdir() if entry.name.startswith("page-")]) == 1
    with repository.open() as second:
        assert [link.target for link in _run(second).page("docs/guide.rst", Mode.RST).links] == ["index"]
    assert len(parses) == 2  # the first run's two parses; the second run read the unedited page back


def test_cheap_parses_are_not_kept(repository, parses):
    with repository.open() as first:
        _run(first).page("docs/notes.md", Mode.MARKDOWN)
    with repository.open() as second:
        _run(second).page("docs/notes.md", Mode.MARKDOWN)
    assert len(parses) == 2
    assert not any(
        entry.name.startswith("page-") for entry in (Path(first.git_dir) / tree_cache.CACHE_FOLDER).glob("*")
    )


def test_a_torn_entry_is_parsed_again(repository, parses):
    with repository.open() as first:
        parsed = _run(first).page("docs/index.rst", Mode.RST)
    folder = Path(first.git_dir) / tree_cache.CACHE_FOLDER
    for entry in folder.glob("page-*"):
        entry.write_bytes(b"\x80torn")
    with repository.open() as second:
        assert _run(second).page("docs/index.rst", Mode.RST) == parsed
    assert len(parses) == 2
    with repository.open() as third:  # rewritten whole by the second run
        assert _run(third).page("docs/index.rst", Mode.RST) == parsed
    assert len(parses) == 2


def test_an_entry_of_another_kind_is_not_taken_for_a_page(repository, parses):
    with repository.open() as first:
        blob = first.blob_id("docs/index.rst")
        tree_cache.write_stored(page_store._stored(first.git_dir, blob, Mode.RST), {"links": []})
        assert _run(first).page("docs/index.rst", Mode.RST).links
    assert len(parses) == 1
