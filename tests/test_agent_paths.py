"""The sandbox path policy, on its own."""

import pytest

from service.agent.paths import PathRejected, is_allowed, normalize
from service.workspace.entries import WorkspaceError


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("docs/intro.md", "docs/intro.md"),
        ("./docs/intro.md", "docs/intro.md"),
        ("docs//guide/./a.md", "docs/guide/a.md"),
        ("docs/guide/", "docs/guide"),
        (".github/ISSUE_TEMPLATE.md", ".github/ISSUE_TEMPLATE.md"),
        (".gitignore", ".gitignore"),
        ("docs/.github/workflows/x.yml", "docs/.github/workflows/x.yml"),
    ],
)
def test_normalize_accepts_repository_paths(raw, expected):
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    "raw, reason",
    [
        ("", "empty"),
        ("   ", "empty"),
        (".", "repository root"),
        ("./", "repository root"),
        ("a\0b", "NUL"),
        ("/etc/passwd", "absolute"),
        ("C:/Windows/x", "absolute"),
        ("docs\\intro.md", "forward slashes"),
        ("../outside.md", "'..'"),
        ("docs/../../outside.md", "'..'"),
        ("docs/..", "'..'"),
        (".git/config", ".git"),
        ("docs/.git/hooks/pre-commit", ".git"),
        (".GIT/config", ".git"),
        (".github/workflows/x.yml", "workflows"),
        ("./.github//workflows/deploy.yml", "workflows"),
        (".github/workflows", "workflows"),
        (".GitHub/Workflows/x.yml", "workflows"),
    ],
)
def test_normalize_rejects_escapes(raw, reason):
    with pytest.raises(PathRejected) as caught:
        normalize(raw)
    assert reason in str(caught.value)
    assert isinstance(caught.value, WorkspaceError)


# The look-alikes, then names from git's own t1014-read-tree-confusing.sh and t0060 (is_ntfs_dotgit,
# is_hfs_dotgit): each is `.git` on some file system.
DOTGIT_ALIASES = [
    ".g\u200cit/config",
    ".git./hooks/x",
    "git~1/config",
    ".git::$INDEX_ALLOCATION/config",
    ".git /config",
    ".GIT./config",
    ".Git",
    ".gI\u200dt",
    ".g\u200eit",
    ".g\ufeffit",
    ".\u200cgit",
    ".git\u200f",
    "GIT~1",
    ".git.",
    ".git . .",
    "git~1.",
    ".git:",
    ".git:stream",
    ".git::$DATA",
    "docs/.gIt ./x",
    "\uff0egit/x",
    "docs/git~1/x",
    ".git\u206a",
]


@pytest.mark.parametrize("raw", DOTGIT_ALIASES)
def test_names_a_checkout_reads_as_dotgit_are_refused_in_every_component(raw):
    with pytest.raises(PathRejected) as caught:
        normalize(raw)
    assert ".git" in caught.value.reason


@pytest.mark.parametrize(
    "raw",
    [
        ".github\u200c/workflows/x.yml",
        "GITHUB~1/workflows/x.yml",
        ".github./workflows/x.yml",
        ".github/workflows./x.yml",
        ".github/WORKFL~1/x.yml",
        ".GitHub /Workflows\u200d/x.yml",
        ".github::$INDEX_ALLOCATION/workflows/x.yml",
        ".github/workflows:stream/x.yml",
    ],
)
def test_workflow_look_alikes_are_refused(raw):
    with pytest.raises(PathRejected) as caught:
        normalize(raw)
    assert "workflows" in caught.value.reason


@pytest.mark.parametrize(
    "raw, imitated",
    [
        (".gitmodules.", ".gitmodules"),
        (".GITMODULES", ".gitmodules"),
        ("GITMOD~1", ".gitmodules"),
        ("gi7eba~1", ".gitmodules"),
        (".gitmodules\u200c", ".gitmodules"),
        ("docs/.gitattributes ", ".gitattributes"),
        (".gitignore::$DATA", ".gitignore"),
        (".Mailmap", ".mailmap"),
    ],
)
def test_look_alikes_of_files_git_reads_are_refused(raw, imitated):
    with pytest.raises(PathRejected) as caught:
        normalize(raw)
    assert imitated in caught.value.reason


@pytest.mark.parametrize(
    "raw",
    [
        ".gitignore",
        "docs/.gitmodules-notes.md",
        "gitx/config",
        ".gitx",
        "git~1x/a.md",
        "docs/github~1.md",
        ".github/workflows.md",
        ".github/README.md",
        "workflows/x.yml",
        "docs/.github/workflows/x.yml",
        "a~1.md",
        "docs/git/config",
        "docs/\u00e9t\u00e9.md",
    ],
)
def test_similar_but_harmless_names_stay_usable(raw):
    assert normalize(raw) == raw


def test_is_allowed_hides_forbidden_paths():
    assert is_allowed("docs/a.md")
    assert not is_allowed(".github/workflows/ci.yml")
    assert not is_allowed("docs//a.md")
