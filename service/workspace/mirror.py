"""Bare per-repository mirrors on the worker's disk, fetched under a file lock into refs the caller owns."""

import fcntl
import hashlib
import os
import re
import secrets
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from service.workspace.git import Git, GitError, Remote
from service.workspace.listings import FOLDER
from service.workspace.overlay import DEFAULT_MAX_FILE_BYTES, Workspace

RUNS_PREFIX = "refs/copydesk/runs/"
# Entries runs keep by tree id inside the mirror's git dir (service.agent.tree_cache, service.workspace.listings);
# upkeep drops old ones.
TREE_CACHE_FOLDER = FOLDER
TREE_CACHE_DAYS = 7
# Last fetched head of every remote ref a run asked for: the tips a later fetch negotiates from, so
# it transfers only new objects even though every run deletes its own refs.
CACHE_PREFIX = "refs/copydesk/cache/"

_RUN_NAME = re.compile(r"[A-Za-z0-9_-]+")
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class MissingCommit(Exception):
    """The remote does not have the commit asked for (or the id names another kind of object)."""


class MirrorStore:
    """One bare mirror per repository URL under `root`; workspaces opened on them refuse files past
    `max_file_bytes`."""

    def __init__(self, root: Path, git: Git, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        self.root = Path(root)
        self.git = git
        self.max_file_bytes = max_file_bytes

    def mirror(self, remote: Remote) -> "Mirror":
        """The mirror of `remote.url`, created empty on first contact (its config never holds credentials)."""
        key = hashlib.sha256(remote.url.encode("utf-8")).hexdigest()[:16]
        mirror = Mirror(self.root / f"{key}.git", self.git, max_file_bytes=self.max_file_bytes)
        if not (mirror.path / "HEAD").exists():
            self.root.mkdir(parents=True, exist_ok=True)
            with mirror.lock():
                if not (mirror.path / "HEAD").exists():
                    _create(self.git, mirror.path)
        objects = Path(remote.url) / "objects"
        # An alternates file is one path a line, quoted when it starts with a quote: such paths are fetched from.
        if remote.trusted and objects.is_absolute() and objects.is_dir() and not any(c in remote.url for c in '\n"'):
            _borrow(mirror.path, objects)
        return mirror

    def existing(self) -> list["Mirror"]:
        """Every mirror made so far under `root`."""
        if not self.root.exists():
            return []
        return [Mirror(path, self.git) for path in sorted(self.root.glob("*.git")) if (path / "HEAD").exists()]


def _create(git: Git, path: Path) -> None:
    # Built under a temporary name and renamed, so a crash never leaves a half-made mirror behind.
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    git.run("init", "--bare", "--quiet", "--template=", str(tmp))
    for key, value in (
        ("gc.auto", "0"),
        ("maintenance.auto", "false"),
        ("gc.autoDetach", "false"),
        ("core.logAllRefUpdates", "false"),
    ):
        git.run("config", key, value, git_dir=tmp)
    os.rename(tmp, path)


def _borrow(path: Path, objects: Path) -> None:
    """Let the mirror read a trusted repository's objects in place (`objects/info/alternates`): a local project's
    mirror then holds every commit the repository has, so a run's fetch is a ref update, and git never walks the
    repository's trees to check what a fetch brought (that check grows with the repository)."""
    alternates = path / "objects" / "info" / "alternates"
    line = f"{objects}\n"
    try:
        if alternates.read_text() == line:
            return
    except FileNotFoundError:
        pass
    alternates.parent.mkdir(parents=True, exist_ok=True)
    # Written whole under a temporary name, then renamed: a concurrent run reads no file or the whole line.
    tmp = alternates.with_name(f".alternates.{secrets.token_hex(4)}.tmp")
    tmp.write_text(line)
    os.replace(tmp, alternates)


class Mirror:
    """A bare mirror; fetches and ref deletions hold its lock, reads and pushes need none."""

    def __init__(self, path: Path, git: Git, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        self.path = Path(path)
        self.git = git
        self.max_file_bytes = max_file_bytes
        self._lock_path = self.path.with_suffix(".lock")
        # commit id -> checksum of the pack `build_commit` stored it in (this object's own commits), so a publish to
        # a repository on this machine copies that pack instead of pushing (service.workspace.inplace).
        self.packs: dict[str, str] = {}

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the mirror's exclusive lock (an `flock` on a sibling `.lock` file); not re-entrant."""
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def fetch(self, remote: Remote, refs: Mapping[str, str]) -> dict[str, str | None]:
        """Fetch remote refs into local refs (`{"refs/heads/main": "refs/copydesk/runs/x/base"}`).

        Returns destination ref -> sha, or None where the remote ref does not exist (nothing is written then).
        """
        return self._fetch(remote, list(refs.items()))

    @contextmanager
    def run_refs(self, remote: Remote, refs: Mapping[str, str]) -> Iterator[dict[str, str | None]]:
        """Fetch `refs` (name -> remote ref, e.g. `{"base": "refs/heads/main"}`) into a fresh run namespace.

        Yields name -> sha (None when the remote ref does not exist); the run's refs keep those commits
        alive in the mirror until the block exits, when they are deleted. A mirror that borrows the repository's
        objects writes no refs: it holds none of those objects for its own gc to drop (and the repository's gc does
        not see the mirror's refs).
        """
        for name in refs:
            if not _RUN_NAME.fullmatch(name):
                raise ValueError(f"bad run ref name {name!r}")
        if self._borrowed(remote):
            heads = self._ls_remote(remote, sorted(set(refs.values())))
            yield {name: heads.get(src) for name, src in refs.items()}
            return
        namespace = f"{RUNS_PREFIX}{int(time.time())}-{secrets.token_hex(6)}/"
        local = {name: namespace + name for name in refs}
        try:
            fetched = self._fetch(remote, [(src, local[name]) for name, src in refs.items()])
            yield {name: fetched[local[name]] for name in refs}
        finally:
            with self.lock():
                self._delete(list(local.values()))

    @contextmanager
    def run_commit(self, remote: Remote, commit: str | None) -> Iterator[str]:
        """Fetch one commit of `remote` (None: its HEAD) under a fresh run ref and yield its id; the ref keeps it
        alive until the block exits. The remote is always asked (ls-remote), so a repository that can no longer
        be read is never served from what the mirror kept. GitError when it cannot be reached, MissingCommit
        when it has no such commit."""
        ref = f"{RUNS_PREFIX}{int(time.time())}-{secrets.token_hex(6)}/commit"
        try:
            head = self._ls_remote(remote, ["HEAD"]).get("HEAD")
            wanted = commit or head
            if wanted is None:
                raise MissingCommit("the repository has no default branch (its HEAD names no commit)")
            with self.lock():
                if wanted in self._present({wanted}):
                    self.git.run("update-ref", ref, wanted, git_dir=self.path)
                else:
                    self._fetch_commit(remote, wanted, ref)
            yield wanted
        finally:
            with self.lock():
                self._delete([ref])

    def _fetch_commit(self, remote: Remote, commit: str, ref: str) -> None:
        # By id: GitHub and local repositories (protocol v2) serve any commit reachable from their refs.
        proc = self.git.run(
            "-c",
            "advice.fetchShowForcedUpdates=false",
            "fetch",
            "--quiet",
            "--no-write-fetch-head",
            "--no-tags",
            "--no-auto-maintenance",
            "--no-recurse-submodules",
            *self.git.pack_program(remote, "upload-pack"),
            "--",
            remote.url,
            f"+{commit}:{ref}",
            git_dir=self.path,
            remote=remote,
            check=False,
        )
        if proc.returncode != 0:
            stderr = proc.stderr.decode("utf-8", "replace")
            if "not our ref" in stderr or "couldn't find remote ref" in stderr or "upload-pack: not" in stderr:
                raise MissingCommit(f"the repository has no commit {commit}")
            raise GitError(["fetch", remote.url, commit], proc.returncode, stderr)
        if commit not in self._present({commit}):
            self._delete([ref])
            raise MissingCommit(f"{commit} is not a commit")

    def borrows_objects(self) -> bool:
        """Whether the mirror reads its repository's objects in place (a local project; see `_borrow`)."""
        return (self.path / "objects" / "info" / "alternates").exists()

    def open(self, commit: str) -> Workspace:
        """A workspace over `commit`'s tree (the commit must be in the mirror)."""
        if _OBJECT_ID.fullmatch(commit):
            # Already an id (what runs pass): checked through the workspace's own `cat-file`, not one more process.
            workspace = Workspace(self.git, self.path, commit, max_file_bytes=self.max_file_bytes)
            try:
                workspace.tree_id()
            except BaseException:
                workspace.close()
                raise
            return workspace
        sha = self.git.out("rev-parse", "--verify", "--end-of-options", f"{commit}^{{commit}}", git_dir=self.path)
        return Workspace(self.git, self.path, sha, max_file_bytes=self.max_file_bytes)

    def maintenance(self, *, loose_objects: int = 6700, pack_limit: int = 50, stale_after: float = 86400) -> None:
        """Housekeeping under the lock: drop run refs older than `stale_after` seconds, pack refs, then
        `git gc --auto`."""
        with self.lock():
            cutoff = time.time() - stale_after
            for namespace in self._run_namespaces():
                if int(namespace[len(RUNS_PREFIX) :].split("-", 1)[0]) < cutoff:
                    self._delete_under(namespace)
            self._prune_tree_cache(time.time() - TREE_CACHE_DAYS * 86400)
            # Loose refs cost a file read each on every fetch's ref listing; packed, they are one file.
            self.git.run("pack-refs", "--all", git_dir=self.path)
            # gc --auto is disabled for every other command; here it runs in the foreground so it stays under the lock.
            self.git.run(
                "-c",
                f"gc.auto={loose_objects}",
                "-c",
                f"gc.autoPackLimit={pack_limit}",
                "-c",
                "gc.autoDetach=false",
                "gc",
                "--auto",
                "--quiet",
                git_dir=self.path,
            )

    def _prune_tree_cache(self, cutoff: float) -> None:
        folder = Path(self.path) / TREE_CACHE_FOLDER
        if not folder.is_dir():
            return
        for entry in folder.iterdir():
            try:
                if entry.stat().st_mtime < cutoff:
                    entry.unlink()
            except FileNotFoundError:
                pass  # another worker's upkeep took it

    def _fetch(self, remote: Remote, pairs: list[tuple[str, str]]) -> dict[str, str | None]:
        for src, dst in pairs:
            if not src.startswith("refs/") or not dst.startswith("refs/") or dst.startswith(CACHE_PREFIX):
                raise ValueError(f"bad refspec {src}:{dst}")
        for attempt in range(2):
            advertised = self._ls_remote(remote, sorted({src for src, _ in pairs}))
            try:
                return self._fetch_advertised(remote, pairs, advertised)
            except GitError as exc:
                # The ref was deleted between ls-remote and fetch: look again once.
                if attempt or "couldn't find remote ref" not in exc.stderr:
                    raise
        raise AssertionError("unreachable")

    def _borrowed(self, remote: Remote) -> bool:
        """Whether `remote` is the trusted repository on this machine whose objects the mirror reads in place."""
        return remote.trusted and self.borrows_objects()

    def _ls_remote(self, remote: Remote, srcs: list[str]) -> dict[str, str]:
        if self._borrowed(remote) and all(src.startswith("refs/") for src in srcs):
            # Read in the repository itself: one process, where ls-remote starts a shell and upload-pack too.
            out = self.git.out(
                "-c",
                f"safe.directory={remote.url}",
                "for-each-ref",
                "--format=%(objectname)%09%(refname)",
                *srcs,
                git_dir=remote.url,
            )
        else:
            out = self._ask_remote(remote, srcs)
        found = {}
        for line in out.splitlines():
            sha, _, name = line.partition("\t")
            if name in srcs:  # ls-remote and for-each-ref patterns also match longer ref names
                found[name] = sha
        return found

    def _ask_remote(self, remote: Remote, srcs: list[str]) -> str:
        return self.git.out(
            "ls-remote",
            *self.git.pack_program(remote, "upload-pack"),
            "--",
            remote.url,
            *srcs,
            git_dir=self.path,
            remote=remote,
        )

    def _fetch_advertised(
        self, remote: Remote, pairs: list[tuple[str, str]], advertised: dict[str, str]
    ) -> dict[str, str | None]:
        wanted = [(src, dst) for src, dst in pairs if src in advertised]
        with self.lock():
            present = self._present({advertised[src] for src, _ in wanted})
            refspecs: list[str] = []
            updates: list[tuple[str, str]] = []
            # A mirror that borrows its repository's objects has every tip already: it keeps none to negotiate from,
            # since a kept tip the repository later drops and prunes would leave the mirror with a broken ref.
            keeps_tips = not self.borrows_objects()
            for src, dst in wanted:
                sha, cache = advertised[src], CACHE_PREFIX + src[len("refs/") :]
                if sha in present:
                    updates += [(cache, sha), (dst, sha)] if keeps_tips else [(dst, sha)]
                else:
                    refspecs += [f"+{src}:{cache}", f"+{src}:{dst}"] if keeps_tips else [f"+{src}:{dst}"]
            if updates:
                script = "".join(f"update {ref} {sha}\n" for ref, sha in dict(updates).items())
                self.git.run("update-ref", "--stdin", git_dir=self.path, input=script.encode())
            heads = dict(updates)
            if refspecs:
                self.git.run(
                    "-c",
                    "advice.fetchShowForcedUpdates=false",
                    "fetch",
                    "--quiet",
                    "--no-write-fetch-head",
                    "--no-tags",
                    "--no-auto-maintenance",
                    "--no-recurse-submodules",
                    "--no-show-forced-updates",
                    *self.git.pack_program(remote, "upload-pack"),
                    "--",
                    remote.url,
                    *dict.fromkeys(refspecs),
                    git_dir=self.path,
                    remote=remote,
                )
                # The refs may have moved since ls-remote: report what was actually fetched.
                heads = self._ref_values([dst for _, dst in wanted])
        return {dst: heads.get(dst) for _, dst in pairs}

    def _present(self, shas: set[str]) -> set[str]:
        if not shas:
            return set()
        request = "".join(f"{sha}\n" for sha in shas).encode()
        out = self.git.out("cat-file", "--batch-check", git_dir=self.path, input=request)
        return {fields[0] for fields in map(str.split, out.splitlines()) if fields[1:2] == ["commit"]}

    def _ref_values(self, refs: list[str]) -> dict[str, str]:
        if not refs:
            return {}
        out = self.git.out("for-each-ref", "--format=%(refname) %(objectname)", *refs, git_dir=self.path)
        values = dict(line.split(" ", 1) for line in out.splitlines())
        return {ref: values[ref] for ref in refs if ref in values}

    def _run_namespaces(self) -> list[str]:
        out = self.git.out("for-each-ref", "--format=%(refname)", RUNS_PREFIX, git_dir=self.path)
        return sorted({RUNS_PREFIX + ref[len(RUNS_PREFIX) :].split("/", 1)[0] + "/" for ref in out.splitlines()})

    def _delete_under(self, namespace: str) -> None:
        self._delete(self.git.out("for-each-ref", "--format=%(refname)", namespace, git_dir=self.path).splitlines())

    def _delete(self, refs: list[str]) -> None:
        """Delete `refs` in one transaction; refs that do not exist are fine."""
        if refs:
            script = "".join(f"delete {ref}\n" for ref in refs)
            self.git.run("update-ref", "--stdin", git_dir=self.path, input=script.encode())
