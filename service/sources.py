"""A round's source repository: another repository the agent may read, never write, at one commit (issue 21).

Checked for its shape when the work is accepted; for the run it is fetched into a mirror of Copydesk's own and
read from there, never in place: runs keep caches beside the repository they read (service.agent.tree_cache), and
a repository a caller named must neither be written by a run nor plant anything a run loads.
"""

import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from service.codehost.base import CodeHost, SourceUnreachable
from service.codes import RunFailure
from service.errors import InvalidRequest, RunFailed
from service.models import Project
from service.workspace.git import GitError
from service.workspace.mirror import MirrorStore, MissingCommit
from service.workspace.overlay import Workspace

MAX_REPOSITORY_CHARS = 1000
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Source:
    """A round's source as accepted: both None for a round without one; `commit` None means the source's
    default branch head when the round starts."""

    repository: str | None = None
    commit: str | None = None


@dataclass(frozen=True)
class SourceTree:
    """A round's source opened for reading: the repository as named, the commit read, and its tree."""

    repository: str
    commit: str
    workspace: Workspace


def check_source(project: Project, repository: str | None, commit: str | None) -> Source:
    """The source of a new round, or InvalidRequest naming what is wrong with it. Only its shape is checked here;
    whether the project's code host can read it is found when the round runs (SOURCE_UNREACHABLE)."""
    if repository is None:
        if commit is not None:
            raise InvalidRequest("a source commit needs a source repository", field="sourceCommit")
        return Source()
    if (
        not isinstance(repository, str)
        or not repository.strip()
        or len(repository) > MAX_REPOSITORY_CHARS
        or _CONTROL.search(repository)
    ):
        where = '"owner/name" of the same installation' if project.host == "github" else "a bare repository's path"
        raise InvalidRequest(
            f"the source repository must be {where}, at most {MAX_REPOSITORY_CHARS} characters "
            "without control characters",
            field="sourceRepository",
        )
    if commit is not None and (not isinstance(commit, str) or not _COMMIT.fullmatch(commit.lower())):
        raise InvalidRequest(
            "the source commit must be a full commit id (40 or 64 hexadecimal digits)", field="sourceCommit"
        )
    return Source(repository.strip(), commit.lower() if commit is not None else None)


@contextmanager
def open_source(
    host: CodeHost, project: Project, mirrors: MirrorStore, repository: str, commit: str | None
) -> Iterator[SourceTree]:
    """Fetch the source at `commit` into its mirror and yield its tree for reading; RunFailed(SOURCE_UNREACHABLE)
    when it cannot be read. Nothing is ever written to the source repository or pushed to it."""
    with ExitStack() as opened:
        try:
            remote = host.source_remote(project, repository)
            _refuse_internal(remote.url, mirrors.root)
            mirror = mirrors.mirror(remote)
            sha = opened.enter_context(mirror.run_commit(remote, commit))
            workspace = opened.enter_context(mirror.open(sha))
        except (SourceUnreachable, MissingCommit) as exc:
            raise RunFailed(
                RunFailure.SOURCE_UNREACHABLE, f"the source repository {repository} could not be read: {exc}"
            ) from exc
        except GitError as exc:
            raise RunFailed(
                RunFailure.SOURCE_UNREACHABLE,
                f"git could not read the source repository {repository}: {exc.stderr.strip()[:300]}",
            ) from exc
        yield SourceTree(repository, sha, workspace)


def _refuse_internal(url: str, mirrors_root: Path) -> None:
    """Refuse a local path inside Copydesk's own mirrors: they hold other projects' repositories (of other
    accounts, private GitHub ones included), which a caller must not reach by naming their folder."""
    if "://" in url:
        return
    path, root = Path(url).resolve(), mirrors_root.resolve()
    if path == root or root in path.parents:
        raise SourceUnreachable(f"{path} is inside Copydesk's own data folder; name the repository itself")
