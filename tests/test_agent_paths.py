"""The sandbox path policy, on its own."""

import pytest

from service.agent.paths import PathRejected, is_allowed, normalize
from service.workspace.entries import WorkspaceError


@pytest.mark.parametrize("raw, expected", [
    ("docs/intro.md", "docs/intro.md"),
    ("./docs/intro.md", "docs/intro.md"),
    ("docs//guide/./a.md", "docs/guide/a.md"),
    ("docs/guide/", "docs/guide"),
    (".github/ISSUE_TEMPLATE.md", ".github/ISSUE_TEMPLATE.md"),
    (".gitignore", ".gitignore"),
    ("docs/.github/workflows/x.yml", "docs/.github/workflows/x.yml"),
])
def test_normalize_accepts_repository_paths(raw, expected):
    assert normalize(raw) == expected


@pytest.mark.parametrize("raw, reason", [
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
])
def test_normalize_rejects_escapes(raw, reason):
    with pytest.raises(PathRejected) as caught:
        normalize(raw)
    assert reason in str(caught.value)
    assert isinstance(caught.value, WorkspaceError)


def test_is_allowed_hides_forbidden_paths():
    assert is_allowed("docs/a.md")
    assert not is_allowed(".github/workflows/ci.yml")
    assert not is_allowed("docs//a.md")
