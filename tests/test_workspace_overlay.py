"""The in-memory overlay over a commit's tree: reads, kinds, listings, searches, writes, moves, deletes."""

import os
import time

import pytest

from service.workspace.entries import (
    EntryKind,
    NotARegularFile,
    PathExists,
    PathNotFound,
    SearchMatch,
    WorkspaceError,
)
from service.workspace.git import Git, Remote
from service.workspace.mirror import MirrorStore
from service.workspace.textsearch import InvalidPattern
from tests.conftest import commit_files
from tests.repositories import add_entries

FILES = {
    "README.md": "# Docs\nWelcome\n",
    "docs/intro.md": "Hello world\nsecond line\n",
    "docs/guide/setup.md": "Install it\nhello again\n",
    "docs/guide/crlf.md": "hello crlf\r\nbye\r\n",
    "img/logo.png": b"\x89PNG\x00\x00hello binary",
}


@pytest.fixture(scope="module")
def fetched(tmp_path_factory):
    """One repository and mirror for the module (workspaces never change either); yields (mirror, commit, dir)."""
    git, root = Git(), tmp_path_factory.mktemp("overlay")
    bare = root / "docs.git"
    git.run("init", "--bare", "-q", str(bare))
    commit_files(git, bare, FILES, message="Initial docs")
    add_entries(
        git,
        bare,
        {
            "tools/build.sh": ("100755", "#!/bin/sh\necho hello\n"),
            "docs/link.md": ("120000", "/etc/passwd"),
            "vendor/lib": ("160000", "1" * 40),
        },
    )
    remote = Remote(str(bare))
    mirror = MirrorStore(root / "mirrors", git).mirror(remote)
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads:
        yield mirror, heads["base"], root


@pytest.fixture
def ws(fetched):
    mirror, commit, _ = fetched
    with mirror.open(commit) as workspace:
        yield workspace


def test_reads_the_tree_and_reports_kinds(ws):
    assert ws.read("docs/intro.md") == b"Hello world\nsecond line\n"
    assert ws.kind("README.md") is EntryKind.FILE
    assert ws.kind("docs") is EntryKind.DIRECTORY
    assert ws.kind("docs/guide") is EntryKind.DIRECTORY
    assert ws.kind("tools/build.sh") is EntryKind.EXECUTABLE
    assert ws.kind("docs/link.md") is EntryKind.SYMLINK
    assert ws.kind("vendor/lib") is EntryKind.SUBMODULE
    assert ws.kind("missing.md") is None
    assert ws.kind("README.md/inside") is None
    assert len(ws.start_commit) == 40
    with pytest.raises(PathNotFound):
        ws.read("missing.md")


def test_symlinks_submodules_and_directories_are_reported_not_followed(ws):
    with pytest.raises(NotARegularFile) as info:
        ws.read("docs/link.md")
    assert (info.value.kind, info.value.target) == (EntryKind.SYMLINK, "/etc/passwd")
    assert "not followed" in str(info.value)
    with pytest.raises(NotARegularFile) as info:
        ws.read("vendor/lib")
    assert info.value.kind is EntryKind.SUBMODULE
    with pytest.raises(NotARegularFile) as info:
        ws.read("docs")
    assert info.value.kind is EntryKind.DIRECTORY
    with pytest.raises(NotARegularFile):
        ws.write("docs/link.md", b"replaced")
    with pytest.raises(WorkspaceError):
        ws.write("docs/link.md/escape.md", b"x")
    with pytest.raises(WorkspaceError):
        ws.write("vendor/lib/inside.md", b"x")
    entries = ws.entries()
    assert entries["docs/link.md"] is EntryKind.SYMLINK
    assert entries["vendor/lib"] is EntryKind.SUBMODULE
    assert entries["tools/build.sh"] is EntryKind.EXECUTABLE


def test_writes_are_read_back_listed_and_reported_as_changes(ws):
    ws.write("docs/new/page.md", b"fresh page\n")
    ws.write("README.md", b"# Docs\nChanged\n")
    assert ws.read("docs/new/page.md") == b"fresh page\n"
    assert ws.read("README.md") == b"# Docs\nChanged\n"
    assert ws.kind("docs/new") is EntryKind.DIRECTORY
    assert ws.list_files() == sorted(ws.list_files())
    assert "docs/new/page.md" in ws.list_files()
    assert ws.changes() == {"README.md": b"# Docs\nChanged\n", "docs/new/page.md": b"fresh page\n"}


def test_the_start_view_shows_the_start_tree_and_leaves_the_workspace_open(ws):
    ws.write("docs/new/page.md", b"fresh page\n")
    ws.write("README.md", b"# Docs\nChanged\n")
    with ws.start_view() as start:
        assert start.read("README.md") == FILES["README.md"].encode()
        assert start.kind("docs/new/page.md") is None and start.changes() == {}
    # Closing the view did not stop the workspace's git process.
    assert ws.read("docs/new/page.md") == b"fresh page\n"
    assert ws.read("README.md") == b"# Docs\nChanged\n"


def test_writing_back_the_original_content_is_not_a_change(ws):
    ws.write("README.md", b"something else")
    ws.write("README.md", FILES["README.md"].encode())
    ws.write("tmp.md", b"x")
    ws.delete("tmp.md")
    assert ws.changes() == {}


def test_a_written_executable_stays_executable(ws):
    ws.write("tools/build.sh", b"#!/bin/sh\necho changed\n")
    assert ws.kind("tools/build.sh") is EntryKind.EXECUTABLE
    assert ws.entries()["tools/build.sh"] is EntryKind.EXECUTABLE


def test_delete_files_and_directories(ws):
    ws.delete("README.md")
    assert ws.kind("README.md") is None
    with pytest.raises(PathNotFound):
        ws.read("README.md")
    with pytest.raises(PathNotFound):
        ws.delete("README.md")
    ws.delete("docs/guide")
    assert ws.kind("docs/guide") is None
    assert ws.kind("docs/guide/setup.md") is None
    assert ws.kind("docs") is EntryKind.DIRECTORY  # intro.md and link.md remain
    assert not any(p.startswith(("docs/guide/", "README")) for p in ws.list_files())
    ws.delete("docs/link.md")  # deleting a symlink entry removes the entry, nothing else
    assert ws.changes() == {
        "README.md": None,
        "docs/guide/crlf.md": None,
        "docs/guide/setup.md": None,
        "docs/link.md": None,
    }
    ws.write("docs/guide", b"now a file\n")  # the directory is gone, so a file may take its name
    assert ws.kind("docs/guide") is EntryKind.FILE
    with pytest.raises(PathNotFound):
        ws.delete("nothing/here.md")


def test_write_refuses_directories_and_paths_under_files(ws):
    with pytest.raises(WorkspaceError):
        ws.write("docs", b"x")
    with pytest.raises(WorkspaceError):
        ws.write("README.md/child.md", b"x")
    ws.write("new.md", b"x")
    with pytest.raises(WorkspaceError):
        ws.write("new.md/child.md", b"x")


def test_move_file_and_directory(ws):
    ws.move("docs/intro.md", "docs/start.md")
    assert ws.kind("docs/intro.md") is None
    assert ws.read("docs/start.md") == b"Hello world\nsecond line\n"
    with pytest.raises(PathExists):
        ws.move("README.md", "docs/start.md")
    with pytest.raises(PathNotFound):
        ws.move("docs/intro.md", "docs/x.md")
    with pytest.raises(WorkspaceError):
        ws.move("docs/guide", "docs/guide/deeper")
    ws.move("docs/guide", "handbook")
    assert ws.kind("docs/guide") is None
    assert ws.read("handbook/setup.md") == b"Install it\nhello again\n"
    assert ws.changes() == {
        "docs/guide/crlf.md": None,
        "docs/guide/setup.md": None,
        "docs/intro.md": None,
        "docs/start.md": b"Hello world\nsecond line\n",
        "handbook/crlf.md": FILES["docs/guide/crlf.md"].encode(),
        "handbook/setup.md": b"Install it\nhello again\n",
    }


def test_moving_a_directory_with_a_symlink_changes_nothing(ws):
    with pytest.raises(NotARegularFile):
        ws.move("docs", "manual")
    assert ws.changes() == {}


def test_search_merges_tree_and_overlay(ws):
    assert ws.search("hello") == [
        SearchMatch("docs/guide/crlf.md", 1, "hello crlf"),
        SearchMatch("docs/guide/setup.md", 2, "hello again"),
        SearchMatch("tools/build.sh", 2, "echo hello"),
    ]
    ws.write("notes/overlay-only.md", b"nothing\nsay hello here\n")
    ws.write("tools/build.sh", b"#!/bin/sh\necho bye\n")  # overridden: its tree content no longer matches
    ws.delete("docs/guide/crlf.md")
    assert [(m.path, m.line) for m in ws.search("hel+o")] == [("docs/guide/setup.md", 2), ("notes/overlay-only.md", 2)]
    assert [m.path for m in ws.search("HELLO", ignore_case=True)] == [
        "docs/guide/setup.md",
        "docs/intro.md",
        "notes/overlay-only.md",
    ]
    assert ws.search("HELLO") == []
    assert [m.path for m in ws.search("hello", globs=["notes/**"])] == ["notes/overlay-only.md"]
    assert [m.path for m in ws.search("hello", globs=["*.md"])] == ["docs/guide/setup.md", "notes/overlay-only.md"]
    assert [m.path for m in ws.search("hello", globs=["docs"])] == ["docs/guide/setup.md"]
    assert len(ws.search("e", max_matches=2)) == 2
    assert ws.search(r"say (\w+) here") == [SearchMatch("notes/overlay-only.md", 2, "say hello here")]
    # One dialect, RE2, over the tree and the overlay alike: look-around and back-references are refused.
    for unsupported in (r"(?<=say )\w+", r"(hel)\1"):
        with pytest.raises(InvalidPattern):
            ws.search(unsupported)


def test_search_runs_in_linear_time_on_a_catastrophic_pattern(ws):
    # Python's re or PCRE take about 2**40 steps here; RE2 scans each line once.
    ws.write("docs/evil.md", (b"a" * 40 + b"!\n") * 200 + b"aaaa\n")
    started = time.monotonic()
    found = ws.search(r"^(a+)+$")
    assert time.monotonic() - started < 2
    assert found == [SearchMatch("docs/evil.md", 201, "aaaa")]


def test_search_skips_binary_files_and_rejects_bad_patterns(ws):
    ws.write("bin.dat", b"\x00hello binary")
    assert all(m.path not in ("img/logo.png", "bin.dat") for m in ws.search("hello"))
    with pytest.raises(WorkspaceError):
        ws.search("(unclosed")


def test_search_limit_keeps_the_first_matches_in_path_order(git, make_repo, tmp_path):
    bare = make_repo({f"p{i:02}.md": "match\n" * 3 for i in range(4)})
    remote = Remote(str(bare))
    mirror = MirrorStore(tmp_path / "mirrors", git).mirror(remote)
    with mirror.run_refs(remote, {"base": "refs/heads/main"}) as heads, mirror.open(heads["base"]) as ws:
        ws.write("a.md", b"match\n")
        found = ws.search("match", max_matches=5)
    assert [(m.path, m.line) for m in found] == [
        ("a.md", 1),
        ("p00.md", 1),
        ("p00.md", 2),
        ("p00.md", 3),
        ("p01.md", 1),
    ]


def test_paths_must_be_normalised(ws):
    for bad in ("../x", "/etc/passwd", "a//b", "docs/../README.md", "", "./a"):
        with pytest.raises(ValueError):
            ws.kind(bad)
        with pytest.raises(ValueError):
            ws.write(bad, b"x")


def test_nothing_is_checked_out(git, ws, fetched):
    mirror, _, root = fetched
    ws.write("docs/intro.md", b"changed")
    ws.read("README.md")
    ws.search("hello")
    ws.list_files()
    on_disk = {name for _, _, files in os.walk(root) for name in files}
    assert not on_disk & {"README.md", "intro.md", "setup.md", "build.sh"}
    assert git.out("rev-parse", "--is-bare-repository", git_dir=mirror.path) == "true"


def test_workspace_over_an_older_commit(git, make_repo, tmp_path):
    bare = make_repo({"a.md": "one\n"})
    first = git.out("rev-parse", "refs/heads/main", git_dir=bare)
    commit_files(git, bare, {"a.md": "two\n"})
    remote = Remote(str(bare))
    mirror = MirrorStore(tmp_path / "mirrors", git).mirror(remote)
    with mirror.run_refs(remote, {"base": "refs/heads/main"}):
        with mirror.open(first) as ws:
            assert ws.read("a.md") == b"one\n"
