"""The `local` code host: bare repositories on disk, pull requests as records in Redis."""

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from service.clock import now_iso
from service.codehost.base import CodeHostError, SourceUnreachable
from service.describe import merge_description
from service.faults import PULL_CLAIMED, Faults
from service.lease import Fence, watched
from service.models import Project, PullRequest, Record
from service.store.projects import ProjectStore
from service.store.pullstates import record_pull_state
from service.store.replies import transaction
from service.workspace.git import Git, GitError, Remote

HOST = "local"
ARCHIVE_PREFIX = "refs/copydesk/archive/"  # + job id: the head of an archived job's branch, kept for its diff


def _check_usable(path: Path, *, walk: bool) -> None:
    """Refuse a repository this process's user cannot read and write throughout (`walk`; else its top folder only),
    as the worker (run as the same user) must to fetch from it and push branches: every folder readable, writable
    and searchable, every file readable. Another owner is fine (Copydesk trusts the registered path, see
    `Git.pack_program`)."""
    folder_access = os.R_OK | os.W_OK | os.X_OK
    entries = [(path, folder_access)]
    for root, dirs, files in os.walk(path) if walk else ():
        entries += [(Path(root, name), folder_access) for name in dirs]
        entries += [(Path(root, name), os.R_OK) for name in files]
    for entry, mode in entries:
        if not os.access(entry, mode):
            needs = "read, write and enter" if mode == folder_access else "read"
            uid, gid = os.geteuid(), os.getegid()
            raise CodeHostError(
                f"{path} is not usable by this user (uid {uid}): it cannot {needs} {entry}. The worker runs as the "
                f"same user and must read and write the whole repository: give it to that user (`chown -R {uid}:{gid} "
                f"{path}`), or run `copydesk project add` as the user the worker runs as"
            )


@dataclass
class LocalPull(Record):
    project_id: str
    number: int
    job_id: str
    title: str
    body: str
    base: str
    head: str
    state: str  # open, merged or closed
    draft: bool
    created_at: str
    updated_at: str
    comments: list = field(default_factory=list)  # {"body", "createdAt"}
    merge_commit: str | None = None


class LocalCodeHost:
    """A code host made of bare repositories on this machine, for the demo, tests and air-gapped use."""

    name = HOST

    def __init__(self, client: redis.Redis, git: Git, base_url: str, faults: Faults = Faults()) -> None:
        self._redis = client
        self._git = git
        self._base_url = base_url
        self._faults = faults

    # -- projects ----------------------------------------------------------------------------

    def register(
        self, projects: ProjectStore, *, path: Path, ref: str, account: str = "local", docs_root: str = ""
    ) -> Project:
        """Add a project for a bare repository on disk, after checking the repository and its ref."""
        path = path.expanduser().resolve()
        if not path.exists():
            raise CodeHostError(f"{path} does not exist")
        if path.is_dir():  # first: git would call a folder it cannot read "not a git repository"
            _check_usable(path, walk=False)
        if (path / ".git").exists():
            raise CodeHostError(
                f"{path} is a working copy, not a bare repository "
                f"(make one with `git clone --bare {path} {path.name}.git`)"
            )
        try:
            is_bare = self._git.out("rev-parse", "--is-bare-repository", git_dir=path)
        except GitError:
            raise CodeHostError(f"{path} is not a git repository") from None
        if is_bare != "true":
            raise CodeHostError(f"{path} is not a bare repository (make one with `git clone --bare`)")
        if self._head(path, ref) is None:
            raise CodeHostError(f"{path} has no branch {ref!r}")
        _check_usable(path, walk=True)
        project = projects.add(
            account=account, host=HOST, repository=str(path), web_url="", ref=ref, docs_root=docs_root.strip("/")
        )
        project.web_url = f"{self._base_url}/local/{project.id}"
        projects.save(project)
        return project

    # -- the CodeHost interface --------------------------------------------------------------

    def remote(self, project: Project) -> Remote:
        return Remote(url=project.repository, trusted=True)

    def source_remote(self, project: Project, repository: str) -> Remote:
        """A bare repository on this machine, read as git's ownership rules allow (not `trusted`: a caller named
        it, not the operator). SourceUnreachable for a relative path, a missing one, a working copy or a folder
        that is not a bare git repository."""
        path = Path(repository)
        if not path.is_absolute():
            raise SourceUnreachable(f"the source {repository!r} is not an absolute path to a bare repository")
        path = path.resolve()
        if not path.is_dir():
            raise SourceUnreachable(f"the source {path} does not exist or is not a folder")
        if (path / ".git").exists():
            raise SourceUnreachable(f"the source {path} is a working copy, not a bare repository")
        proc = self._git.run("rev-parse", "--is-bare-repository", git_dir=path, check=False)
        if proc.returncode != 0 or proc.stdout.decode().strip() != "true":
            why = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["not bare"]
            raise SourceUnreachable(f"the source {path} is not a bare git repository this worker can read ({why[0]})")
        return Remote(url=str(path))

    def open_or_update_pull(
        self,
        project: Project,
        *,
        job_id: str,
        branch: str,
        base: str,
        title: str,
        body: str,
        draft: bool,
        fence: Fence | None = None,
        may_open: bool = True,
    ) -> PullRequest | None:
        """One pull request per branch: its number is claimed and its record saved in one transaction, so a
        crash leaves both or neither, and a run whose `fence` no longer holds the lease writes nothing
        (LeaseLost) however long it was frozen before this call."""

        def attempt(pipe) -> LocalPull | None:
            if fence is not None:
                fence.ensure(pipe)
            claimed = pipe.hget(self._by_branch_key(project.id), branch)
            # A number claimed without a record is what a crash between the two left before they were one write.
            pull = self._read(pipe, project.id, int(claimed)) if claimed is not None else None
            if not may_open and (pull is None or pull.state != "open"):
                return None
            stamp = now_iso()
            if pull is None:
                number = int(claimed) if claimed is not None else int(pipe.get(self._seq_key(project.id)) or 0) + 1
                pull = LocalPull(
                    project_id=project.id,
                    number=number,
                    job_id=job_id,
                    title=title,
                    body=body,
                    base=base,
                    head=branch,
                    state="open",
                    draft=draft,
                    created_at=stamp,
                    updated_at=stamp,
                )
            else:
                pull.title, pull.body, pull.updated_at = title, merge_description(pull.body, body), stamp
            self._faults.reach(PULL_CLAIMED)
            pipe.multi()
            if claimed is None:
                pipe.set(self._seq_key(project.id), pull.number)
                pipe.hset(self._by_branch_key(project.id), branch, pull.number)
            self._write(pipe, pull)
            return pull

        pull = transaction(
            self._redis,
            attempt,
            self._by_branch_key(project.id),
            self._seq_key(project.id),
            self._pulls_key(project.id),
            *watched(fence),
        )
        if pull is None:
            return None
        return PullRequest(number=pull.number, url=self.pull_url(project.id, pull.number), state=pull.state)

    def comment(
        self, project: Project, number: int, body: str, *, fence: Fence | None = None, key: str | None = None
    ) -> str:
        """Add a comment in one transaction: fenced like `open_or_update_pull`, and once per `key`; its id is its
        position among the pull request's comments."""

        def attempt(pipe) -> str:
            if fence is not None:
                fence.ensure(pipe)
            pull = self._read(pipe, project.id, number)
            assert pull is not None  # runs comment only on their job's own pull request
            if key is not None:
                found = next((i for i, c in enumerate(pull.comments) if c.get("key") == key), None)
                if found is not None:
                    return str(found)  # an interrupted attempt of the same run posted it already
            pull.comments.append({"body": body, "createdAt": now_iso(), **({"key": key} if key else {})})
            pipe.multi()
            self._write(pipe, pull)
            return str(len(pull.comments) - 1)

        return transaction(self._redis, attempt, self._pulls_key(project.id), *watched(fence))

    def edit_comment(
        self,
        project: Project,
        number: int,
        comment_id: str,
        body: str,
        *,
        fence: Fence | None = None,
        key: str | None = None,
    ) -> None:
        """Replace a comment's body in one transaction, fenced like `comment`."""

        def attempt(pipe) -> None:
            if fence is not None:
                fence.ensure(pipe)
            pull = self._read(pipe, project.id, number)
            index = int(comment_id)
            if pull is None or not 0 <= index < len(pull.comments):
                raise CodeHostError(f"pull request #{number} has no comment {comment_id}")
            pull.comments[index] = {**pull.comments[index], "body": body, "updatedAt": now_iso()}
            pipe.multi()
            self._write(pipe, pull)

        transaction(self._redis, attempt, self._pulls_key(project.id), *watched(fence))

    def reply_in_thread(
        self,
        project: Project,
        number: int,
        thread_id: str,
        body: str,
        *,
        fence: Fence | None = None,
        key: str | None = None,
    ) -> None:
        """Local pull requests have no review threads: the reply is a comment quoting where it belongs."""
        self.comment(project, number, body, fence=fence, key=key)

    # -- what the pages show -----------------------------------------------------------------

    def pull_url(self, project_id: str, number: int) -> str:
        return f"{self._base_url}/local/{project_id}/pulls/{number}"

    def pull(self, project_id: str, number: int) -> LocalPull | None:
        return self._read(self._redis, project_id, number)

    def pull_states(self, project_id: str, numbers: list[int]) -> dict[int, str]:
        """open, merged or closed for each of these pull requests of the project that exists (one round trip)."""
        raws = self._redis.hmget(self._pulls_key(project_id), numbers) if numbers else []
        return {n: LocalPull.from_dict(json.loads(raw)).state for n, raw in zip(numbers, raws, strict=True) if raw}

    def pulls(self, project_id: str) -> list[LocalPull]:
        raws = self._redis.hvals(self._pulls_key(project_id))
        return sorted((LocalPull.from_dict(json.loads(r)) for r in raws), key=lambda p: p.number)

    def close(self, project: Project, number: int) -> LocalPull:
        """Close an open pull request without merging it."""
        return self._settle(self._open_pull(project, number), "closed")

    def merge(self, project: Project, number: int, *, committer_name: str, committer_email: str) -> LocalPull:
        """Merge an open pull request into its base branch, then delete its head branch."""
        pull = self._open_pull(project, number)
        path = Path(project.repository)
        base, head = self._head(path, pull.base), self._head(path, pull.head)
        if base is None or head is None:
            raise CodeHostError(f"branch {pull.base if base is None else pull.head!r} no longer exists")
        proc = self._git.run("merge-tree", "--write-tree", "--name-only", base, head, git_dir=path, check=False)
        if proc.returncode != 0:
            conflicted = proc.stdout.decode().splitlines()[1:]
            raise CodeHostError("the pull request conflicts with its base in: " + ", ".join(conflicted))
        tree = proc.stdout.decode().split()[0]
        identity = {
            "GIT_AUTHOR_NAME": committer_name,
            "GIT_AUTHOR_EMAIL": committer_email,
            "GIT_COMMITTER_NAME": committer_name,
            "GIT_COMMITTER_EMAIL": committer_email,
        }
        merge = self._git.out(
            "commit-tree",
            tree,
            "-p",
            base,
            "-p",
            head,
            "-m",
            f"Merge pull request #{number} from {pull.head}\n\n{pull.title}",
            git_dir=path,
            env=identity,
        )
        # One ref transaction, compare-and-swap on both: a push that lands meanwhile fails the merge whole.
        script = (
            f"start\nupdate refs/heads/{pull.base} {merge} {base}\n"
            f"delete refs/heads/{pull.head} {head}\nprepare\ncommit\n"
        )
        proc = self._git.run("update-ref", "--stdin", git_dir=path, input=script.encode(), check=False)
        if proc.returncode != 0:
            raise CodeHostError("a branch moved while merging; try again")
        pull.merge_commit = merge
        return self._settle(pull, "merged")

    def _open_pull(self, project: Project, number: int) -> LocalPull:
        pull = self.pull(project.id, number)
        if pull is None:
            raise CodeHostError(f"project {project.id} has no pull request #{number}")
        if pull.state != "open":
            raise CodeHostError(f"pull request #{number} is already {pull.state}")
        return pull

    def _settle(self, pull: LocalPull, state: str) -> LocalPull:
        pull.state, pull.updated_at = state, now_iso()
        self._save(pull)
        record_pull_state(self._redis, pull.job_id, state)  # as on GitHub, for the automations' run history
        return pull

    def diff(self, project: Project, pull: LocalPull) -> str:
        """The pull request's diff: what the head branch changed since it left the base."""
        path = Path(project.repository)
        if pull.merge_commit:
            return self._git.run(
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                f"{pull.merge_commit}^1",
                pull.merge_commit,
                git_dir=path,
            ).stdout.decode("utf-8", "replace")
        head = self._head(path, pull.head) or self._archived_head(path, pull.job_id)
        base = self._head(path, pull.base)
        if head is None or base is None:
            return ""
        merge_base = self._git.out("merge-base", base, head, git_dir=path)
        return self._git.run(
            "diff", "--no-color", "--no-ext-diff", "--no-textconv", merge_base, head, git_dir=path
        ).stdout.decode("utf-8", "replace")

    # -- upkeep -------------------------------------------------------------------------------

    def retire_archived_branches(self, project: Project, archived: Callable[[list[str]], set[str]]) -> list[str]:
        """Keep the head of every branch of an archived job under `refs/copydesk/archive/<job id>` and delete the
        branch, in one ref transaction (so its pull request page still shows the diff); return those job ids.

        `archived` takes job ids and answers which of them are archived. A branch that moves meanwhile is left
        for the next upkeep: each deletion is a compare-and-swap on the head that was kept.
        """
        path = Path(project.repository)
        branches = {pull.head: pull.job_id for pull in self.pulls(project.id) if pull.state != "merged"}
        heads = self._branch_heads(path)
        present = {branch: job_id for branch, job_id in branches.items() if branch in heads}
        retired = archived(sorted(set(present.values())))
        moves = [(branch, job_id, heads[branch]) for branch, job_id in sorted(present.items()) if job_id in retired]
        if not moves:
            return []
        if not self._move_to_archive(path, moves):
            # One branch moved: the others still go, one transaction each.
            moves = [move for move in moves if self._move_to_archive(path, [move])]
        return [job_id for _branch, job_id, _head in moves]

    def pack_refs(self, project: Project) -> None:
        """Pack the repository's refs, so listing them (`ls-remote`, every run's fetch) does not read a file each."""
        self._git.run("pack-refs", "--all", git_dir=Path(project.repository))

    def _move_to_archive(self, path: Path, moves: list[tuple[str, str, str]]) -> bool:
        script = (
            "start\n"
            + "".join(
                f"update {ARCHIVE_PREFIX}{job_id} {head}\ndelete refs/heads/{branch} {head}\n"
                for branch, job_id, head in moves
            )
            + "prepare\ncommit\n"
        )
        return self._git.run("update-ref", "--stdin", git_dir=path, input=script.encode(), check=False).returncode == 0

    def _branch_heads(self, path: Path) -> dict[str, str]:
        out = self._git.out("for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/", git_dir=path)
        return {
            ref.removeprefix("refs/heads/"): sha for sha, _, ref in (line.partition(" ") for line in out.splitlines())
        }

    def _archived_head(self, path: Path, job_id: str) -> str | None:
        proc = self._git.run(
            "rev-parse", "--verify", "-q", f"{ARCHIVE_PREFIX}{job_id}^{{commit}}", git_dir=path, check=False
        )
        return proc.stdout.decode().strip() or None

    def _head(self, path: Path, branch: str) -> str | None:
        proc = self._git.run(
            "rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}", git_dir=path, check=False
        )
        return proc.stdout.decode().strip() or None

    def _save(self, pull: LocalPull) -> None:
        self._write(self._redis, pull)

    def _read(self, client, project_id: str, number: int) -> LocalPull | None:
        """The record of pull request `number`, read through `client` (a pipeline inside a transaction)."""
        raw = client.hget(self._pulls_key(project_id), number)
        return LocalPull.from_dict(json.loads(raw)) if raw else None

    def _write(self, client, pull: LocalPull) -> None:
        client.hset(self._pulls_key(pull.project_id), pull.number, json.dumps(pull.to_dict()))

    @staticmethod
    def _pulls_key(project_id: str) -> str:
        return f"cd:local:{project_id}:pulls"

    @staticmethod
    def _by_branch_key(project_id: str) -> str:
        return f"cd:local:{project_id}:pull-by-branch"

    @staticmethod
    def _seq_key(project_id: str) -> str:
        return f"cd:local:{project_id}:pull-seq"
