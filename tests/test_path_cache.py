"""The sandbox policy over whole listings is worked out once per tree: a second run of the same tree checks no
path of it again, and still hides what the policy forbids."""

import os
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from service.agent import path_cache, paths, tree_cache
from service.workspace.git import Remote
from tests.repositories import make_repository

FILES = {
    "docs/index.md": "# Docs\n",
    "docs/guide/setup.md": "# Setup\n",
    ".github/workflows/ci.yml": "on: push\n",
    "README.md": "# Readme\n",
    ".GITMODULES.": "x\n",
}


@pytest.fixture
def repository(git, tmp_path):
    return make_repository(git, tmp_path / "repo", FILES)


@pytest.fixture
def policy_calls(monkeypatch):
    """Counts the per-path checks of the policy (the whole-path one and the per-listing fast one)."""
    calls = {"count": 0}
    for name in ("normalize", "_plainly_allowed"):
        original = getattr(paths, name)

        def counting(*args, _original=original, **kwargs):
            calls["count"] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(paths, name, counting)
    return calls


def test_a_second_run_of_the_same_tree_checks_no_path_again(repository, policy_calls):
    tree_cache.forget()
    with repository.open() as first:
        seen = path_cache.allowed_files(first)
    assert seen == ["README.md", "docs/guide/setup.md", "docs/index.md"]
    assert policy_calls["count"] >= len(FILES)  # the first run checked every path of the tree
    tree_cache.forget()  # the next run is a new forked process: only the copy beside the repository is left
    policy_calls["count"] = 0
    with repository.open() as second:
        assert path_cache.allowed_files(second) == seen
        assert policy_calls["count"] == 0
        second.write("docs/new.md", b"# New\n")  # a path the run adds is checked on its own
        assert "docs/new.md" in path_cache.allowed_files(second)
        assert 0 < policy_calls["count"] <= 2


def test_a_torn_cache_entry_is_worked_out_again(repository):
    tree_cache.forget()
    with repository.open() as first:
        path_cache.allowed_files(first)
    folder = Path(first.git_dir) / tree_cache.CACHE_FOLDER
    for entry in folder.iterdir():
        entry.write_bytes(b"\x80torn")
    tree_cache.forget()
    with repository.open() as second:
        assert ".github/workflows/ci.yml" not in path_cache.allowed_files(second)


def test_mirror_upkeep_drops_entries_written_over_a_week_ago(repository):
    tree_cache.forget()
    with repository.open() as workspace:
        path_cache.allowed_files(workspace)
        folder = Path(workspace.git_dir) / tree_cache.CACHE_FOLDER
    entries = list(folder.iterdir())
    assert entries
    old = entries[0]
    os.utime(old, (time.time() - 8 * 86400,) * 2)
    repository.mirror.maintenance()
    assert not old.exists() and all(e.exists() for e in entries[1:])


def _moved(git, repository, files):
    """The repository's mirror with `main` moved by a commit of `files` (path -> content, None deletes)."""
    from tests.conftest import commit_files

    commit_files(git, repository.bare, files)
    remote = Remote(str(repository.bare))
    return repository.mirror.fetch(remote, {"refs/heads/main": "refs/test/moved"})["refs/test/moved"]


def test_a_tree_moved_by_a_commit_is_derived_from_the_last_one_checking_only_what_came(git, repository, policy_calls):
    tree_cache.forget()
    with repository.open() as first:
        path_cache.allowed_files(first)
    moved = _moved(
        git,
        repository,
        {
            "docs/index.md": "# Changed\n",
            "docs/added.md": "# Added\n",
            ".github/workflows/new.yml": "on: push\n",
            ".github/workflows/ci.yml": None,
            "README.md": None,
        },
    )
    tree_cache.forget()
    policy_calls["count"] = 0
    with repository.mirror.open(moved) as second:
        forbidden = path_cache.forbidden_paths(second)
        assert policy_calls["count"] <= 4  # the two paths that came, not the whole tree
        expected = frozenset(second.start_files()) - frozenset(paths.allowed_paths(second.start_files()))
        assert forbidden == expected == {".github/workflows/new.yml", ".GITMODULES."}


def test_site_and_overview_are_reused_only_when_no_file_they_read_changed(git, repository):
    from service.agent.briefing import brief

    tree_cache.forget()
    with repository.open() as first:
        before = brief(first, "x", base_commit=None)
    # A page's content changes in a file the overview never read: reused as it is.
    unread = _moved(git, repository, {"README.md": "# Readme, edited\n"})
    tree_cache.forget()
    with repository.mirror.open(unread) as second, _no_site_detection():
        assert brief(second, "x", base_commit=None).overview == before.overview
    # A file comes: worked out again, and it shows.
    added = _moved(git, repository, {"docs/guide/new-page.md": "# New\n"})
    tree_cache.forget()
    with repository.mirror.open(added) as third:
        after = brief(third, "x", base_commit=None)
    assert after.overview != before.overview and "4 files" in after.overview


def test_a_file_the_site_detection_read_changing_works_the_site_out_again(git, repository):
    from service.agent.briefing import brief

    tree_cache.forget()
    with repository.open() as first:
        before = brief(first, "x", base_commit=None)
    assert "title" not in before.site.front_matter_keys
    sampled = _moved(
        git,
        repository,
        {
            "docs/index.md": "---\ntitle: Docs\n---\n# Docs\n",
            "docs/guide/setup.md": "---\ntitle: Setup\n---\n# Setup\n",
        },
    )
    tree_cache.forget()
    with repository.mirror.open(sampled) as second:
        assert "title" in brief(second, "x", base_commit=None).site.front_matter_keys


@contextmanager
def _no_site_detection():
    from service.agent import briefing_facts

    def refuse(*_args, **_kwargs):
        raise AssertionError("the site was worked out again")

    original = briefing_facts.detect
    briefing_facts.detect = refuse
    try:
        yield
    finally:
        briefing_facts.detect = original
