"""New commits on a local source repository's default branch: order, cursor, force-pushes, caps, hostile repos."""

from pathlib import Path

import pytest

from service.automations.localchanges import MAX_MESSAGE_BYTES, new_commits
from service.workspace.git import Git, GitError
from tests.conftest import commit_files
from tests.hostile_repos import write_tree

AUTHOR = {
    "GIT_AUTHOR_NAME": "Mallory",
    "GIT_AUTHOR_EMAIL": "mallory@example.com",
    "GIT_COMMITTER_NAME": "Mallory",
    "GIT_COMMITTER_EMAIL": "mallory@example.com",
}


@pytest.fixture
def source(git: Git, tmp_path: Path) -> Path:
    bare = tmp_path / "source.git"
    git.run("init", "--bare", "-q", str(bare))
    git.run("symbolic-ref", "HEAD", "refs/heads/main", git_dir=bare)
    return bare


def raw_commit(git: Git, bare: Path, message: bytes, files: dict, parent: str | None, branch: str = "main") -> str:
    """A commit whose message is taken byte for byte (git's porcelain would clean or refuse it)."""
    tree = write_tree(git, bare, files)
    header = f"tree {tree}\n" + (f"parent {parent}\n" if parent else "")
    header += "author Mallory <mallory@example.com> 1700000000 +0000\n"
    header += "committer Mallory <mallory@example.com> 1700000000 +0000\n\n"
    sha = git.out(
        "hash-object", "-t", "commit", "-w", "--stdin", "--literally", git_dir=bare, input=header.encode() + message
    )
    git.run("update-ref", f"refs/heads/{branch}", sha, git_dir=bare)
    return sha


def test_an_empty_repository_has_no_head_and_no_changes(source):
    assert new_commits(source, None, max_diff_chars=1000) == (None, [])
    assert new_commits(source, "ab" * 20, max_diff_chars=1000) == (None, [])


def test_nothing_before_the_automation_existed_counts(git, source):
    head = commit_files(git, source, {"a.md": "a\n"}, message="First")
    assert new_commits(source, None, max_diff_chars=1000) == (head, [])
    assert new_commits(source, head, max_diff_chars=1000) == (head, [])


def test_new_commits_oldest_first_with_message_author_and_diff(git, source):
    start = commit_files(git, source, {"a.md": "a\n"}, message="First")
    second = commit_files(
        git, source, {"cli.py": "def main(): ...\n"}, message="Add the CLI\n\nIt has a main.\nTwo lines."
    )
    third = commit_files(git, source, {"a.md": None}, message="Drop a.md")
    head, changes = new_commits(source, start, max_diff_chars=10_000)
    assert head == third
    assert [c.id for c in changes] == [second, third]
    first = changes[0]
    assert (first.kind, first.title, first.body) == ("commit", "Add the CLI", "It has a main.\nTwo lines.")
    assert first.author == "Test Person <person@example.com>"
    assert (first.merge_commit, first.url, first.repository) == (second, None, str(source))
    assert "+def main(): ..." in first.diff and not first.diff_truncated
    assert "deleted file mode" in changes[1].diff
    assert changes[1].to_ref() == {
        "kind": "commit",
        "id": third,
        "title": "Drop a.md",
        "url": None,
        "author": "Test Person <person@example.com>",
    }


def test_the_default_branch_is_what_head_names(git, source):
    git.run("symbolic-ref", "HEAD", "refs/heads/trunk", git_dir=source)
    start = commit_files(git, source, {"a.md": "a\n"}, branch="trunk")
    commit_files(git, source, {"other.md": "x\n"}, branch="main", parent=start)
    newer = commit_files(git, source, {"b.md": "b\n"}, branch="trunk")
    assert new_commits(source, start, max_diff_chars=1000)[0] == newer
    assert [c.id for c in new_commits(source, start, max_diff_chars=1000)[1]] == [newer]


def test_a_merge_is_one_change_by_first_parents(git, source):
    start = commit_files(git, source, {"a.md": "a\n"})
    side = commit_files(git, source, {"side.md": "one\n"}, branch="feature", parent=start)
    side = commit_files(git, source, {"side.md": "two\n"}, branch="feature", parent=side)
    tree = git.out("rev-parse", f"{side}^{{tree}}", git_dir=source)
    merge = git.out("commit-tree", tree, "-p", start, "-p", side, "-m", "Merge feature", git_dir=source, env=AUTHOR)
    git.run("update-ref", "refs/heads/main", merge, git_dir=source)
    head, changes = new_commits(source, start, max_diff_chars=10_000)
    assert head == merge and [c.id for c in changes] == [merge]
    assert "+two" in changes[0].diff  # against its first parent: everything the merge brought


def test_after_a_force_push_the_commits_since_the_histories_meet_count(git, source):
    base = commit_files(git, source, {"a.md": "a\n"})
    gone = commit_files(git, source, {"b.md": "b\n"}, message="Rewritten away")
    redone = commit_files(git, source, {"b.md": "B\n"}, message="Redone", parent=base)
    more = commit_files(git, source, {"c.md": "c\n"}, message="More")
    head, changes = new_commits(source, gone, max_diff_chars=1000)
    assert head == more and [c.id for c in changes] == [redone, more]


def test_a_cursor_from_an_unrelated_or_lost_history_gives_the_head_commit_only(git, source, tmp_path):
    commit_files(git, source, {"a.md": "a\n"})
    orphan = commit_files(git, source, {"x.md": "x\n"}, branch="old", parent=None)
    git.run("update-ref", "-d", "refs/heads/old", git_dir=source)
    head = commit_files(git, source, {"b.md": "b\n"})
    for cursor in (orphan, "0" * 40, "not a sha", f"--output={tmp_path / 'x'}", "HEAD~1"):
        assert [c.id for c in new_commits(source, cursor, max_diff_chars=1000)[1]] == [head], cursor
    assert not (tmp_path / "x").exists()  # a cursor is never read as an option


def test_past_the_cap_older_commits_become_one_change_with_their_combined_diff(git, source):
    start = commit_files(git, source, {"a.md": "a\n"})
    shas = [commit_files(git, source, {f"f{i}.md": f"{i}\n"}, message=f"Commit {i}") for i in range(12)]
    head, changes = new_commits(source, start, max_diff_chars=10_000, max_commits=5)
    assert head == shas[-1] and len(changes) == 6
    combined = changes[0]
    assert combined.title == "7 earlier commits, shown as one change" and combined.id == shas[6]
    assert combined.body.splitlines()[1:] == [
        f"{sha[:12]} Commit {i}" for i, sha in reversed(list(enumerate(shas[:7])))
    ]
    assert all(f"+++ b/f{i}.md" in combined.diff for i in range(7)) and "f7.md" not in combined.diff
    assert combined.author == "Test Person"
    assert [c.id for c in changes[1:]] == shas[7:]


def test_huge_diffs_are_bounded(git, source):
    start = commit_files(git, source, {"a.md": "a\n"})
    commit_files(git, source, {"big.txt": "".join(f"line {i}\n" for i in range(300_000))})
    _, [big] = new_commits(source, start, max_diff_chars=5_000)
    assert len(big.diff) <= 5_000 and big.diff_truncated
    assert big.diff.startswith("diff --git a/big.txt b/big.txt")


def test_hostile_commits_do_not_break_the_scan(git, source):
    start = commit_files(git, source, {"a.md": "a\n"})
    huge = raw_commit(git, source, b"Huge\n\n" + b"spam " * 400_000, {"a.md": "a\n", "b.md": "b\n"}, start)
    latin = raw_commit(
        git,
        source,
        "Caf\xe9 \x00 r\xe9sum\xe9\n\nBody \xff\xfe".encode("latin-1"),
        {
            "a.md": "a\n",
            "b.md": "b\n",
            "bin.dat": bytes(range(256)) * 50,
            b"caf\xe9.md".decode("utf-8", "surrogateescape"): b"\xff\xfe\x00bytes",
        },
        huge,
    )
    empty = raw_commit(git, source, b"", {"a.md": "a\n"}, latin)
    head, changes = new_commits(source, start, max_diff_chars=20_000)
    assert head == empty and [c.id for c in changes] == [huge, latin, empty]
    assert changes[0].title == "Huge" and changes[0].body.endswith(
        f"[commit message cut at {MAX_MESSAGE_BYTES:,} bytes]"
    )
    assert len(changes[0].body) < MAX_MESSAGE_BYTES + 100
    assert changes[1].title.startswith("Caf\ufffd")
    assert "Binary files /dev/null and b/bin.dat differ" in changes[1].diff
    assert changes[2].title == "" and "deleted file mode" in changes[2].diff
    for c in changes:
        (c.title + c.body + c.diff).encode("utf-8")


def test_a_root_commit_after_a_lost_cursor_shows_its_whole_tree(git, source):
    head = commit_files(git, source, {"a.md": "a\n"})
    _, [root] = new_commits(source, "1" * 40, max_diff_chars=1000)
    assert root.id == head and "+a" in root.diff


def test_a_path_that_is_not_a_repository_raises_git_error(tmp_path):
    with pytest.raises(GitError):
        new_commits(tmp_path / "missing.git", None, max_diff_chars=1000)
    (tmp_path / "plain").mkdir()
    with pytest.raises(GitError):
        new_commits(tmp_path / "plain", "ab" * 20, max_diff_chars=1000)
