"""A builder of hostile repositories: trees git's porcelain would refuse to make, built with `git mktree`."""

from dataclasses import dataclass
from pathlib import Path

from service.workspace.git import Git

ANCHORS = "abcdefgh"
# 8 levels of anchors, each repeating the one below 10 times: 10^8 entries once expanded, in under 1 KB.
ALIAS_BOMB = (
    "site_name: Bomb\nlevels:\n"
    + "".join(
        f"  - &{a} [{', '.join(['*' + ANCHORS[i - 1]] * 10 if i else ['x'] * 10)}]\n" for i, a in enumerate(ANCHORS)
    )
    + f"nav: *{ANCHORS[-1]}\n"
)
CYCLIC_NAV = "site_name: Cycle\nnav: &a [index.md, *a]\n"
DEEP = 3000
DEEP_NAV = "site_name: Deep\nnav: " + "[" * DEEP + "index.md" + "]" * DEEP + "\n"


@dataclass(frozen=True)
class Entry:
    """A tree entry with an explicit mode: "100644", "100755", "120000" (symlink: data is its target) or
    "160000" (gitlink: data is a commit id that need not exist)."""

    mode: str
    data: bytes | str = b""


def write_tree(git: Git, bare: Path, files: dict[str, "bytes | str | Entry"]) -> str:
    """A tree object holding `files` (path -> content or Entry), names taken byte for byte, never checked."""
    folders: dict[str, dict] = {}
    here: list[str] = []
    for path, content in files.items():
        head, sep, rest = path.partition("/")
        if sep:
            folders.setdefault(head, {})[rest] = content
            continue
        entry = content if isinstance(content, Entry) else Entry("100644", content)
        data = entry.data.encode("utf-8") if isinstance(entry.data, str) else entry.data
        if entry.mode == "160000":
            here.append(f"160000 commit {data.decode()}\t{head}")
        else:
            oid = git.out("hash-object", "-w", "--stdin", "--literally", git_dir=bare, input=data)
            here.append(f"{entry.mode} blob {oid}\t{head}")
    for name, inner in folders.items():
        here.append(f"040000 tree {write_tree(git, bare, inner)}\t{name}")
    listing = "".join(line + "\0" for line in here).encode("utf-8", "surrogateescape")
    return git.out("mktree", "-z", "--missing", git_dir=bare, input=listing)


def hostile_repo(
    git: Git,
    bare: Path,
    files: dict[str, "bytes | str | Entry"],
    *,
    branch: str = "main",
    message: str = "Hostile docs",
) -> Path:
    """A bare repository at `bare` whose `branch` holds exactly `files` in one commit."""
    git.run("init", "--bare", "-q", str(bare))
    git.run("symbolic-ref", "HEAD", f"refs/heads/{branch}", git_dir=bare)
    tree = write_tree(git, bare, files)
    env = {
        "GIT_AUTHOR_NAME": "Mallory",
        "GIT_AUTHOR_EMAIL": "mallory@example.com",
        "GIT_COMMITTER_NAME": "Mallory",
        "GIT_COMMITTER_EMAIL": "mallory@example.com",
    }
    commit = git.out("commit-tree", tree, "-m", message, git_dir=bare, env=env)
    git.run("update-ref", f"refs/heads/{branch}", commit, git_dir=bare)
    return bare
