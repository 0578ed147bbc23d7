"""A start tree's listing derived from the last one kept equals the one git lists, whatever changed between."""

import pickle
import random

import pytest

from service.workspace import listings
from service.workspace.git import Remote
from service.workspace.listings import FOLDER, TreeListing
from service.workspace.overlay import Workspace
from tests.conftest import commit_files
from tests.repositories import make_repository


def _git_listing(git, git_dir, commit) -> dict[str, tuple[int, str]]:
    out = git.run("ls-tree", "-r", "-z", "--full-tree", commit, git_dir=git_dir).stdout.decode()
    listing = {}
    for record in filter(None, out.split("\0")):
        meta, path = record.split("\t", 1)
        mode, _, oid = meta.split(" ")
        listing[path] = (int(mode, 8), oid)
    return listing


@pytest.mark.parametrize("max_delta", [2000, 1], ids=["deltas", "whole"])
def test_listings_derived_across_moved_trees_match_git(git, tmp_path, monkeypatch, max_delta):
    monkeypatch.setattr(listings, "MAX_DELTA", max_delta)
    files = {f"docs/{a}/{b}.md": f"{a}{b}\n" for a in "abc" for b in range(4)}
    repository = make_repository(git, tmp_path / "repo", files)
    remote = Remote(str(repository.bare))
    chance = random.Random(7)
    with repository.open() as first:
        assert first.start_files() == sorted(_git_listing(git, repository.mirror.path, repository.sha))
    # From here on every listing is derived: git is never asked to list a whole tree again.
    monkeypatch.setattr(Workspace, "_list_whole", lambda self: (_ for _ in ()).throw(AssertionError("listed")))
    paths = list(files)
    for round_ in range(6):
        change: dict[str, str | None] = {}
        for _ in range(3):
            pick = chance.random()
            if pick < 0.4 and paths:
                change[chance.choice(paths)] = f"edited {round_}\n"
            elif pick < 0.7 and len(paths) > 3:
                gone = chance.choice(paths)
                change[gone] = None
            else:
                change[f"docs/{chance.choice('abcz')}/new-{round_}-{chance.randrange(99)}.md"] = "new\n"
        commit_files(git, repository.bare, change)
        paths = [p for p in paths if change.get(p, "") is not None] + [
            p for p, d in change.items() if d is not None and p not in paths
        ]
        commit = repository.mirror.fetch(remote, {"refs/heads/main": f"refs/test/r{round_}"})[f"refs/test/r{round_}"]
        assert commit is not None
        with repository.mirror.open(commit) as workspace:
            expected = _git_listing(git, repository.mirror.path, commit)
            assert workspace.start_files() == sorted(expected)
            assert dict(workspace._tree_listing().items()) == expected
    kept = {entry.name for entry in (repository.mirror.path / FOLDER).iterdir() if entry.name.startswith("listing")}
    trees = [git.out("rev-parse", f"{c}^{{tree}}", git_dir=repository.mirror.path) for c in (repository.sha, commit)]
    if max_delta > 1:  # the first tree's whole listing and the last one's delta on it: no run rewrote a whole one
        assert kept == {"listing-v3-latest", f"listing-v3-{trees[0]}", f"listing-v3-{trees[1]}"}
    else:  # each delta outgrew the limit: the last tree's whole listing only
        assert kept == {"listing-v3-latest", f"listing-v3-{trees[1]}"}


def test_a_delta_whose_whole_listing_is_gone_is_listed_again(git, tmp_path):
    repository = make_repository(git, tmp_path / "repo", {"a.md": "a\n"})
    with repository.open() as first:
        first.start_files()
    commit = commit_files(git, repository.bare, {"b.md": "b\n"})
    sha = repository.mirror.fetch(Remote(str(repository.bare)), {"refs/heads/main": "refs/test/b"})["refs/test/b"]
    assert sha == commit
    with repository.mirror.open(commit) as second:
        assert second.start_files() == ["a.md", "b.md"]
    base = git.out("rev-parse", f"{repository.sha}^{{tree}}", git_dir=repository.mirror.path)
    (repository.mirror.path / FOLDER / f"listing-v3-{base}").unlink()  # upkeep dropped it
    with repository.mirror.open(commit) as third:
        assert third.start_files() == ["a.md", "b.md"]


def test_a_compact_listing_applies_changes_and_keeps_them_as_a_dictionary_would():
    chance = random.Random(11)
    entries = {f"d{chance.randrange(9)}/p{n}.md": (0o100644, f"{n:040x}") for n in range(300)}
    listing = TreeListing.from_entries(entries, 20)
    for round_ in range(40):
        changes: dict[str, tuple[int, str] | None] = {}
        for _ in range(chance.choice([1, 3, 60])):
            pick = chance.random()
            path = (
                chance.choice(sorted(entries)) if entries and pick < 0.6 else f"d{chance.randrange(12)}/n{round_}-{_}"
            )
            changes[path] = None if pick < 0.3 else (chance.choice([0o100644, 0o100755, 0o120000]), f"{_:040x}")
        listing.apply(changes)
        for path, entry in changes.items():
            if entry is None:
                entries.pop(path, None)
            else:
                entries[path] = entry
        listing = pickle.loads(pickle.dumps(listing))  # kept and read back, as runs do
        assert listing.paths == sorted(entries)
        assert dict(listing.items()) == entries
        assert all(listing[path] == entry for path, entry in entries.items())
        assert "d0/absent.md" not in listing and listing.get("d0/absent.md") is None


def test_an_empty_compact_listing_survives_being_kept():
    listing = pickle.loads(pickle.dumps(TreeListing.from_entries({}, 32)))
    assert listing.paths == [] and len(listing) == 0 and "a" not in listing
    listing.apply({"a": (0o100644, "ab" * 32)})
    assert listing["a"] == (0o100644, "ab" * 32)
