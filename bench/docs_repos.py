"""The real documentation repositories the docs benches run on: bare git mirrors brought with the `fetch` tool.

A repository is given as the path of a bare repository or as `owner/name`, which names its mirror under
`--mirrors` (`owner+name/repo`, as `fetch` lays them out). With none given, a bench runs the named default set.
"""

import argparse
from pathlib import Path

MIRRORS = Path("/work/.mirror")
# The MkDocs and Sphinx sites the builds bench's agreement figures come from (README, issue 19 item 9).
DEFAULT_SET = ("python-attrs/attrs", "pallets/flask", "sphinx-doc/sphinx", "encode/httpx", "squidfunk/mkdocs-material")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benches' repository arguments: bare repositories or `owner/name`, and where mirrors live."""
    parser.add_argument(
        "repos",
        nargs="*",
        help="bare git repositories, or owner/name of a mirror under --mirrors; "
        f"none: the default set ({', '.join(DEFAULT_SET)})",
    )
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help="where `fetch` keeps its mirrors")


def resolve(repos: list[str], mirrors: Path) -> list[Path]:
    """The bare repositories to run on; raises SystemExit naming any that is not there, and how to bring it."""
    found, missing = [], []
    for repo in repos or DEFAULT_SET:
        path = Path(repo)
        if not path.exists() and repo.count("/") == 1 and not repo.startswith(("/", ".")):
            path = mirrors / repo.replace("/", "+") / "repo"
        (found if (path / "HEAD").is_file() else missing).append((repo, path))
    if missing:
        names = ", ".join(f"{repo} ({path})" for repo, path in missing)
        raise SystemExit(f"not a bare git repository: {names}; bring it with the fetch tool (github:owner/name)")
    return [path for _, path in found]
