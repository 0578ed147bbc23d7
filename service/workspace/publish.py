"""Builds a run's commit with plumbing and pushes it to the job branch by object id, never forcing."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from service.workspace.catfile import CatFile
from service.workspace.commits import Identity, commit_object
from service.workspace.entries import BranchConflict, WorkspaceError
from service.workspace.fsck import store_checked
from service.workspace.git import GitError, Remote
from service.workspace.gitnames import valid_branch_ref
from service.workspace.history import BranchHistory
from service.workspace.inplace import Published, publish_in_place
from service.workspace.mirror import Mirror
from service.workspace.trees import object_id, plan_tree

__all__ = ["BranchKeptMoving", "Identity", "PushRequest", "PushResult", "build_commit", "push_commit"]

# Push refusals that mean "the branch is not where this run left it": a newer head, or a concurrent update.
_MOVED = ("(non-fast-forward)", "(fetch first)", "cannot lock ref", "failed to update ref", "incorrect old value")


@dataclass(frozen=True)
class PushResult:
    commit: str  # what the branch points at now
    rebuilt: bool  # the commit was rebuilt on a branch head that moved during the run
    already: bool = False  # the branch already held this message's commit: nothing was pushed


class BranchKeptMoving(BranchConflict):
    """The job branch moved again after every rebuild; the run gives up rather than race forever."""

    def __init__(self, branch: str, rebuilds: int) -> None:
        WorkspaceError.__init__(self, f"the branch {branch} kept moving during the push ({rebuilds} rebuilds)")
        self.files = []


def build_commit(
    mirror: Mirror,
    parent: str,
    changes: Mapping[str, bytes | None],
    message: str,
    author: Identity,
    committer: Identity,
) -> str | None:
    """Write a commit on `parent` with `changes` (path -> content, None deletes) into the mirror.

    Returns its id, or None when the changes leave the parent's tree as it is; raises UnsafeCommit, storing
    nothing, when its new objects fail git's strict checks. The commit, its new trees and blobs go into the
    mirror as one pack that `index-pack --strict` checked: one git process besides the reads.
    """
    with CatFile(mirror.git, mirror.path) as cat:
        kind, data = cat.read(parent)
        if kind != "commit":
            raise GitError(["cat-file"], 1, f"{parent} is a {kind}, not a commit")
        parent_tree = data[5 : data.index(b"\n")].decode("ascii")
        tree, objects = plan_tree(cat, parent_tree, changes)
    if tree == parent_tree:
        return None
    fmt = "sha256" if len(parent) == 64 else "sha1"
    raw = commit_object(tree, [parent], message, author, committer)
    commit = object_id("commit", raw, fmt)
    mirror.packs[commit] = store_checked(mirror.git, mirror.path, {**objects, commit: ("commit", raw)}, fmt)
    return commit


@dataclass(frozen=True)
class PushRequest:
    """One run's commit and what push_commit needs to push it, or to rebuild it on a branch that moved."""

    commit: str
    branch: str
    start_commit: str  # the branch head (or base) the run started from
    changes: Mapping[str, bytes | None]  # path -> content, None deletes
    message: str
    author: Identity
    committer: Identity
    trailer: str | None = None  # a line of the message that marks this run's commit
    base_head: str | None = None  # the base branch's head, where the job branch's own history starts


def push_commit(
    mirror: Mirror,
    remote: Remote,
    push: PushRequest,
    *,
    guard: Callable[[], None] = lambda: None,
    max_rebuilds: int = 3,
) -> PushResult:
    """Push `push.commit` to `refs/heads/<branch>` without force, calling `guard` right before every push.

    If the branch moved since `start_commit`, and the new head already holds a commit whose message has the line
    `trailer` (an earlier attempt of this run pushed it), that commit is the result and nothing is pushed.
    Else, if it moved in files other than `changes`' paths, the commit is rebuilt on the new head (same changes
    and message) and pushed again; if the same files moved, BranchConflict. `guard` raises to refuse a push
    (its lease lost); a push that was refused because the branch moved is never retried without it.
    """
    commit, branch, changes, trailer = push.commit, push.branch, push.changes, push.trailer
    if not valid_branch_ref(f"refs/heads/{branch}"):
        raise ValueError(f"bad branch name {branch!r}")
    # The run checked the branch for `trailer` at `start_commit`; a push onto that same head is a compare and
    # swap, so a commit of this message pushed meanwhile makes it fail and the loop below finds that commit.
    guard()
    if _push(mirror, remote, commit, push.start_commit, branch):
        return PushResult(commit, rebuilt=False)
    original, base = commit, push.start_commit
    history = BranchHistory(mirror, push.base_head)
    for _ in range(max_rebuilds):
        # The new head stays referenced in the mirror until the rebuilt commit is pushed.
        with mirror.run_refs(remote, {"head": f"refs/heads/{branch}"}) as heads:
            head = heads["head"]
            if head is not None:  # None: the branch was deleted meanwhile, so pushing again recreates it
                earlier = history.find_trailer(head, trailer) if trailer else None
                if earlier is not None:
                    return PushResult(earlier, rebuilt=False, already=True)
                moved = mirror.git.run(
                    "diff", "--name-only", "-z", "--no-renames", base, head, git_dir=mirror.path
                ).stdout.decode("utf-8", "surrogateescape")
                clashes = _clashes([p for p in moved.split("\0") if p], changes)
                if clashes:
                    raise BranchConflict(clashes)
                rebuilt = build_commit(mirror, head, changes, push.message, push.author, push.committer)
                if rebuilt is None:
                    return PushResult(head, rebuilt=True)  # the branch already holds exactly these changes
                commit, base = rebuilt, head
            guard()
            if _push(mirror, remote, commit, base, branch):
                return PushResult(commit, rebuilt=commit != original)
    raise BranchKeptMoving(branch, max_rebuilds)


def _clashes(moved: list[str], changes: Mapping[str, bytes | None]) -> list[str]:
    """The moved paths that are, contain or lie inside a path this run changed."""
    ours = set(changes)
    our_dirs = {path[:i] for path in ours for i, c in enumerate(path) if c == "/"}
    return sorted(
        path
        for path in moved
        if path in ours or path in our_dirs or any(path[:i] in ours for i, c in enumerate(path) if c == "/")
    )


def _push(mirror: Mirror, remote: Remote, commit: str, parent: str, branch: str) -> bool:
    """Push by object id (or publish in place to a local project's repository); True on success, False if refused
    because the branch moved, GitError otherwise."""
    ref = f"refs/heads/{branch}"
    published = publish_in_place(mirror, remote, commit, parent, ref)
    if published is not Published.PUSH:
        return published is Published.DONE
    proc = mirror.git.run(
        "push",
        "--porcelain",
        "--no-verify",
        *mirror.git.pack_program(remote, "receive-pack"),
        "--",
        remote.url,
        f"{commit}:{ref}",
        git_dir=mirror.path,
        remote=remote,
        check=False,
    )
    stderr = proc.stderr.decode("utf-8", "replace")
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        fields = line.split("\t")
        if len(fields) < 3 or fields[1].rpartition(":")[2] != ref:
            continue
        flag, summary = fields[0], fields[2]
        if flag in (" ", "*", "=") and proc.returncode == 0:
            return True
        if flag == "!" and any(reason in summary for reason in _MOVED):
            return False
        raise GitError(["push"], proc.returncode or 1, f"{summary} {stderr}")
    raise GitError(["push"], proc.returncode or 1, stderr)
