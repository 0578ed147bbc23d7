"""Glob patterns select the same paths as git's own pathspec globs would, in linear time."""

import time

import pytest

from service.workspace.globs import anchored, matches


def pathspecs(pattern: str) -> list[str]:
    """The git pathspecs (glob magic) that select what `pattern` means: git is the reference."""
    body = anchored(pattern).rstrip("/")
    return [f":(glob){body}", f":(glob){body}/**"]


PATHS = [
    "README.md",
    "docs/intro.md",
    "docs/guide/setup.md",
    "docs/guide/img/a.png",
    "docs-old/x.md",
    "api/ref.mdx",
    "a.md/inner.txt",
    "[x].md",
]
PATTERNS = [
    "*.md",
    "/README.md",
    "docs",
    "docs/",
    "docs/*",
    "docs/*.md",
    "docs/**/*.md",
    "**/guide/**",
    "doc?/intro.md",
    "*.md*",
    "d*",
    "guide",
    "[[]x].md",
    "**",
    "api/*.mdx",
    "docs/gu*/*.png",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    from service.workspace.git import Git
    from tests.conftest import commit_files

    git, bare = Git(), tmp_path_factory.mktemp("globs") / "g.git"
    git.run("init", "--bare", "-q", str(bare))
    return git, bare, commit_files(git, bare, {p: "x\n" for p in PATHS})


@pytest.mark.parametrize("pattern", PATTERNS)
def test_python_and_git_agree(tree, pattern):
    git, bare, commit = tree
    out = git.out("grep", "-l", "--full-name", "-e", "x", commit, "--", *pathspecs(pattern), git_dir=bare, check=False)
    by_git = sorted(line.split(":", 1)[1] for line in out.splitlines())
    assert by_git == sorted(p for p in PATHS if matches([pattern], p))


def test_examples():
    assert matches(["*.md"], "docs/guide/setup.md")
    assert not matches(["/*.md"], "docs/intro.md")
    assert matches(["docs"], "docs/guide/img/a.png")
    assert not matches(["docs"], "docs-old/x.md")
    assert matches(["docs/*"], "docs/guide/setup.md")  # docs/guide matches, so everything under it does
    assert not matches(["docs/*.md"], "docs/guide/setup.md")


def test_a_pathological_glob_matches_in_linear_time():
    # Backtracking engines need about n**k steps for k stars that all fail at the end; RE2 does not.
    started = time.monotonic()
    assert not matches(["*a" * 30 + "b"], "a" * 5000)
    assert time.monotonic() - started < 2
