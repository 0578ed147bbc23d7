"""list_files reads only the run of the sorted listing a pattern can match and counts folders by bisection: its
answers must stay exactly what matching every path one by one gave (same paths, order, truncation and hints)."""

import random
from collections import Counter

import pytest

from service.agent import tools
from service.agent.path_cache import allowed_files
from service.agent.tools import TreeReader, _narrower
from service.workspace.git import Git
from service.workspace.globs import compile_glob, literal_prefix, matches
from tests.repositories import make_repository

NAMES = ["a", "b", "index.md", "intro.md", "x.md", "x.mdx", "y.rst", "Z.md", "a.b", ".hidden", "é.md", "a b.md"]
FOLDERS = ["", "docs", "docs/a", "docs/b", "docs/a/deep", "guides", "guides/x.md", "src", "src/docs", ".github"]
PATTERNS = [
    "*.md",
    "**/*.md",
    "docs/**/*.md",
    "docs/**/*",
    "docs/*.md",
    "docs/a/*",
    "*",
    "*.md/",
    "/*.mdx",
    "guides/**/*.md",
    "docs//*.md",
    "docs/*",
    "docs/**",
    "docs/**/*.md",
    "docs/a",
    "docs/",
    "/docs/*.md",
    "guides/x.md",
    "**/deep/*",
    "d*/**/i*.md",
    "docs/[ab]/*.md",
    "docs/[!a]/*",
    "x.md",
    "src/docs",
    "?.md",
    "do",
    "nothing/**",
    "**",
]


def _paths(rng: random.Random, count: int) -> list[str]:
    return sorted({f"{folder}/{name}".lstrip("/") for folder, name in (_pick(rng) for _ in range(count))})


def _pick(rng: random.Random) -> tuple[str, str]:
    return rng.choice(FOLDERS), rng.choice(NAMES) + rng.choice(["", "", "1", "22"])


def _matches_one_by_one(patterns: list[str], path: str) -> bool:
    """How `globs.matches` decided before: each pattern against the path and each leading directory."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(len(parts), 0, -1)]
    return any(compile_glob(p).fullmatch(prefix) for p in patterns for prefix in prefixes)


def test_matches_decides_as_one_pattern_per_leading_directory_did():
    rng = random.Random(7)
    paths = _paths(rng, 300) + ["a//b", "a/", "/x.md", "docs/a\nb.md", "docs//x.md", "docs/.md", "x.md/y/z", "docs"]
    for pattern in PATTERNS:
        for path in paths:
            assert matches([pattern], path) == _matches_one_by_one([pattern], path), (pattern, path)
    assert matches(PATTERNS[:3], "docs/a/x.md") == _matches_one_by_one(PATTERNS[:3], "docs/a/x.md")
    assert not matches([], "docs/a.md")


def test_every_path_a_pattern_matches_starts_with_its_literal_prefix():
    rng = random.Random(11)
    paths = _paths(rng, 400)
    for pattern in PATTERNS:
        prefix = literal_prefix(pattern)
        assert all(path.startswith(prefix) for path in paths if matches([pattern], path)), pattern
    assert literal_prefix("docs/a/*.md") == "docs/a/"
    assert literal_prefix("*.md") == ""
    assert literal_prefix("/guides/x.md") == "guides/x.md"


@pytest.mark.parametrize("seed", range(30))
def test_narrower_on_a_sorted_listing_suggests_what_the_pass_over_every_path_did(seed):
    rng = random.Random(seed)
    paths = _paths(rng, rng.randint(1, 120))
    if seed % 3 == 0:  # everything in one deep folder: the shared folder is found from the ends
        paths = sorted(f"docs/a/deep/{path.replace('/', '-')}" for path in paths)
    for start in sorted({0, len(paths) // 3, len(paths) // 2, len(paths) - 1}):
        assert _narrower(paths, start) == _narrower_one_by_one(paths[start:]), (paths, start)


def _narrower_one_by_one(paths: list[str]) -> list[tuple[str, int]]:
    """The hints as they were worked out before, path by path (a reference): globs that split `paths` into smaller lists, with how many paths each holds, the largest first.

    Paths are grouped by the folder one level below the folder they all share; files directly in that folder
    are grouped by the shortest name prefix that splits them.
    """
    folders = [path.split("/")[:-1] for path in paths]
    common: list[str] = []
    for parts in zip(*folders, strict=False):
        if len(set(parts)) > 1:
            break
        common.append(parts[0])
    base = "/".join(common) + "/" if common else ""
    rests = [path[len(base) :] for path in paths]
    names = [rest for rest in rests if "/" not in rest]
    width = next((n for n in range(1, 9) if len({name[:n] for name in names}) > 1), 1)
    groups: Counter = Counter()
    for rest in rests:
        folder, sep, _ = rest.partition("/")
        groups[f"{base}{folder}/**" if sep else f"{base}{rest[:width]}*"] += 1
    return sorted(groups.items(), key=lambda item: (-item[1], item[0]))[: tools.SUGGESTIONS]


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    rng = random.Random(3)
    paths = _paths(rng, 400)
    # A repository cannot hold a file where another file needs a folder (guides/x.md beside guides/x.md/…).
    files = {path: f"# {path}\n" for path in paths if not any(p.startswith(path + "/") for p in paths)}
    files[".github/workflows/ci.yml"] = "on: push\n"  # hidden from the agent by the path policy
    return make_repository(Git(), tmp_path_factory.mktemp("listing"), files)


def _reference_list_files(tree, pattern: str | None, prefix: str = "") -> str:
    """The list_files answer as it was worked out before: every allowed path, filtered one by one."""
    files = allowed_files(tree)
    if pattern:
        files = [path for path in files if _matches_one_by_one([pattern], path)]
    if not files:
        return "no files match" + (f" {pattern!r}" if pattern else "")
    shown = tools._fitting(files[: tools.LIST_LIMIT], tools.LIST_MAX_CHARS)
    text = "\n".join(shown)
    if len(shown) < len(files):
        rest = files[len(shown) :]
        hints = ", ".join(
            f"{prefix}list_files(pattern={glob!r}) for {count:,}" for glob, count in _narrower_one_by_one(rest)
        )
        text += (
            f"\n[{len(rest):,} more files not shown (of {len(files):,}); list them with a narrower pattern: {hints}]"
        )
    return text


@pytest.mark.parametrize("limit", [5, 40, 500])
def test_list_files_answers_as_before_with_pending_changes_and_truncation(repository, monkeypatch, limit):
    monkeypatch.setattr(tools, "LIST_LIMIT", limit)
    with repository.open() as workspace:
        start = workspace.list_files()
        workspace.delete(start[3])
        workspace.delete("docs")
        workspace.write("docs/new/index.md", b"# New\n")
        workspace.write("docs/a/added.md", b"# Added\n")
        workspace.write(".github/workflows/new.yml", b"on: push\n")  # added, and hidden too
        workspace.move("guides", "moved")
        reader = TreeReader(workspace, prefix="source_")
        seen = Counter()
        for pattern in [None, *PATTERNS]:
            answer = reader.list_files(pattern).content
            assert answer == _reference_list_files(workspace, pattern, "source_"), pattern
            seen["truncated" if "more files not shown" in answer else "whole"] += 1
        assert seen["truncated"] and seen["whole"] if limit < 500 else seen["whole"]


def test_list_files_with_a_prefix_is_the_run_of_the_whole_listing_that_starts_with_it(repository):
    with repository.open() as workspace:
        workspace.write("docs/a/zz.md", b"x")
        workspace.write("docs0", b"x")
        workspace.delete(workspace.list_files("docs/b")[0])
        everything = workspace.list_files()
        for prefix in ["d", "docs", "docs/", "docs/a/", "docs/a/deep/", "src/docs", "nothing", "é"]:
            assert workspace.list_files(prefix) == [p for p in everything if p.startswith(prefix)], prefix
