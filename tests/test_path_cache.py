"""The sandbox policy over whole listings is worked out once per tree: a second run of the same tree checks no
path of it again, and still hides what the policy forbids."""

import os
import time
from pathlib import Path

import pytest

from service.agent import path_cache, paths, tree_cache
from tests.repositories import make_repository

FILES = {"docs/index.md": "# Docs\n", "docs/guide/setup.md": "# Setup\n", ".github/workflows/ci.yml": "on: push\n",
         "README.md": "# Readme\n", ".GITMODULES.": "x\n"}


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
