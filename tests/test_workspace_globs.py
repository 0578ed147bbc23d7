"""Glob patterns select the same paths in Python (overlay files) as in git pathspecs (tree files)."""

import pytest

from service.workspace.globs import matches, pathspecs

PATHS = ["README.md", "docs/intro.md", "docs/guide/setup.md", "docs/guide/img/a.png", "docs-old/x.md",
         "api/ref.mdx", "a.md/inner.txt", "[x].md"]
PATTERNS = ["*.md", "/README.md", "docs", "docs/", "docs/*", "docs/*.md", "docs/**/*.md", "**/guide/**",
            "doc?/intro.md", "*.md*", "d*", "guide", "[[]x].md", "**", "api/*.mdx", "docs/gu*/*.png"]


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
