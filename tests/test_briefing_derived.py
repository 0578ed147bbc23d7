"""A start tree that gained or lost files has its docs site and overview derived from the last tree's entry and
the paths that came or went: the result must be exactly what working them out from scratch gives, step after
step, and a change that touches what detection depends on (a docs config) must be worked out from scratch."""

import pickle
import posixpath
import random

import pytest

from service.agent import briefing_facts, tree_cache
from service.agent.briefing import brief
from service.agent.briefing_facts import derive, site_and_overview
from service.agent.docsite.detect import page_extension
from service.agent.overview import _by_priority, _prioritized, plain_facts
from service.agent.tree_cache import MAX_DERIVED_CHANGES
from service.workspace.git import Git, Remote
from tests.conftest import commit_files
from tests.repositories import make_repository

FRONT = "---\ntitle: T\ntags: [a]\n---\n# Page\n"


def _initial() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "README.md": "# Project\n",
        "CHANGELOG.md": "# Changes\n",
        "src/app.py": "print()\n",
        "docs/index.md": FRONT,
        "docs/README.md": "# Not a page\n",
        "docs/guide/a.md": FRONT,
        "docs/guide/b.mdx": "# B\n",
        "docs/ref/c.mdx": "# C\n",
        "docs/guide/Overview.md": "# Overview\n",
        "docs/ref/x.rst": "X\n=\n",
        "docs/ref/deep/y.md": FRONT,
        "docs/.hidden/z.md": "# Hidden\n",
        "docs/node_modules/q.md": "# Vendored\n",
        "docs/img.png": b"\x89PNG\r\n\x1a\n\0binary",
        "tests/fixtures/site/mkdocs.yml": "site_name: fixture\n",
    }
    for i in range(90):
        files[f"docs/s{i % 7}/p{i}.md"] = FRONT if i % 3 else "# Plain\n"
    return files


# (changes, whether the entry is derived rather than worked out from scratch)
STEPS: list[tuple[dict[str, str | bytes | None], bool]] = [
    ({"docs/guide/a.md": None, "docs/guide/c.md": FRONT}, True),  # renamed
    ({"docs/new/sub/index.md": "# New\n", "docs/new/sub/page.md": FRONT}, True),  # a new folder
    ({"docs/index.md": None, "docs/s3/p3.md": None, "docs/s3/index.md": "# S3\n"}, True),
    ({"NOTES.md": "n\n", "src/other.py": "x\n", "src/app.py": None, "CHANGELOG.md": None}, True),
    ({"docs/guide/b.mdx": None, "docs/zz/last.mdx": "# Last\n", "docs/ref/more.rst": "M\n=\n"}, True),
    ({"docs/s1/p1.md": "# No front matter now\n", "docs/s1/p99.md": FRONT}, True),  # a sampled page edited
    ({"docs/s2/p2.md": "---\nweight: 1\n---\n", "docs/s2/p9.md": None}, True),
    ({"mkdocs.yml": "site_name: Docs\nnav:\n  - index.md\n"}, False),  # a docs config comes
    ({"docs/s4/p4.md": None}, False),  # an MkDocs site now: not derived
    ({"mkdocs.yml": None}, False),  # the config goes
    ({"docs/s5/p5.md": None, "docs/s5/p200.md": FRONT}, True),
    ({"docs/conf.py": "project = 'x'\n"}, False),  # named like a Sphinx config
    ({"docs/conf.py": None, "docs/ref/deep/z.md": FRONT}, False),
    ({"docs/.hidden/w.md": "# W\n", "docs/node_modules/r.md": "# R\n", "docs/a b/é.md": FRONT}, True),
]


@pytest.fixture
def repository(tmp_path):
    return make_repository(Git(), tmp_path, _initial())


def _kept(entry):
    """The entry as the next run reads it back from beside the repository."""
    return pickle.loads(pickle.dumps(entry))


def _moved(repository, files) -> str:
    commit_files(Git(), repository.bare, files)
    remote = Remote(str(repository.bare))
    return repository.mirror.fetch(remote, {"refs/heads/main": "refs/test/moved"})["refs/test/moved"]


@pytest.mark.parametrize("docs_root", ["", "docs", "docs/s1"])
def test_each_derived_entry_is_what_working_it_out_from_scratch_gives(repository, docs_root):
    with repository.open() as workspace:
        earlier, tree = _kept(site_and_overview(workspace, docs_root)), workspace.tree_id()
    derived_steps = 0
    for changes, derivable in STEPS:
        commit = _moved(repository, changes)
        with repository.mirror.open(commit) as workspace:
            changed = workspace.changes_since(tree, limit=MAX_DERIVED_CHANGES)
            derived = derive(workspace, docs_root, earlier, changed)
            scratch = site_and_overview(workspace, docs_root)
            tree = workspace.tree_id()
        assert (derived is not None) == derivable, changes
        if derived is not None:
            derived_steps += 1
            assert derived[0] == scratch[0], changes  # the site, its page stats included
            assert derived[1] == scratch[1], changes  # the overview, byte for byte
            assert derived[2] == scratch[2], changes  # the files read, for the next tree's reuse
            assert derived[3] == scratch[3], changes  # the facts the next tree's are derived from
        earlier = _kept(scratch)
    assert derived_steps == sum(derivable for _, derivable in STEPS)


def test_a_briefing_on_a_tree_that_gained_files_detects_nothing_again(repository, monkeypatch):
    tree_cache.forget()
    with repository.open() as workspace:
        brief(workspace, "x", base_commit=None)
    commit = _moved(repository, {"docs/guide/added.md": FRONT, "docs/s0/p0.md": None})
    detections = []
    monkeypatch.setattr(briefing_facts, "detect", lambda *args: detections.append(args))
    tree_cache.forget()
    with repository.mirror.open(commit) as workspace:
        task = brief(workspace, "x", base_commit=None)
    monkeypatch.undo()
    with repository.mirror.open(commit) as workspace:
        site, overview, _, _ = site_and_overview(workspace, "")
    assert not detections
    assert (task.site, task.overview) == (site, overview)
    assert "Repository overview: 105 files" in overview


@pytest.mark.parametrize("seed", range(40))
def test_pages_put_in_order_from_the_folders_counts_are_in_the_order_of_every_page(seed):
    rng = random.Random(seed)
    parts = ["a", "b", "docs", "x y", "é", "Guide"]
    names = ["index.md", "README.md", "Overview.mdx", "p.md", "q.rst", "_index.md", "z.md", "m.MD", "a.md"]
    paths = sorted(
        {"/".join([*(rng.choice(parts) for _ in range(rng.randint(0, 3))), rng.choice(names)]) for _ in range(150)}
    )
    facts = plain_facts(paths, "", None)
    pages = facts.area_pages()
    for first in (1, 5, 20, 60, 400):
        assert _prioritized(facts, pages, first) == _by_priority(pages, first), first


def test_a_page_extension_is_what_splitext_finds():
    names = ["a.md", "A.MDX", ".md", "..md", "a..md", "a.", ".a.b", "a/b.c/d", "a/.b", "x.tar.gz", "noext", "a/..b.Md"]
    for path in names + [f"docs/{name}" for name in names]:
        assert page_extension(path) == posixpath.splitext(path)[1].lower(), path
