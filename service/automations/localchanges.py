"""New commits on a local bare repository's default branch, as source changes for a code-change automation."""

import re
import threading
from dataclasses import dataclass
from pathlib import Path

from service.automations.events import SourceChange
from service.workspace.git import Git, GitError
from service.workspace.proc import popen

# At most this many commits are shown one by one (the newest); older ones since the cursor become one change with
# their combined diff, so a push of hundreds of commits still gives a prompt of bounded size.
MAX_COMMITS = 20
# A commit message is read up to this many bytes (a hostile one may be megabytes); the prompt cuts it further.
MAX_MESSAGE_BYTES = 64 * 1024
# How many earlier commits the combined change lists by subject.
MAX_LISTED = 50
# Each git command gets this long: a huge diff is cut by size long before, so only a stuck git reaches it.
GIT_SECONDS = 60
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "--find-renames", "-p", "--no-commit-id")


def new_commits(
    bare_repo_path: str | Path,
    since: str | None,
    *,
    max_diff_chars: int,
    max_commits: int = MAX_COMMITS,
    git: Git | None = None,
) -> tuple[str | None, list[SourceChange]]:
    """The default branch's head and the commits on it after `since`, oldest first, each with its diff.

    The default branch is the one HEAD names; its history is walked by first parents. `since` None means nothing
    before now counts: (head, []). When `since` is no longer in the branch's history (a force-push), the commits
    after where the two histories meet count; when they never meet or `since` is gone from the repository, only
    the head commit. An empty repository gives (None, []). A path that is not a git repository raises GitError.
    Beyond `max_commits`, the older commits are one change with their combined diff.
    """
    source = _Source(Path(bare_repo_path), git or Git())
    head = source.head()
    if head is None or since is None or since == head:
        return head, []
    chain = source.first_parents(head, source.start(since, head))
    if not chain:
        return head, []
    changes = []
    older, shown = chain[:-max_commits], chain[-max_commits:]
    if older:
        changes.append(source.combined(older, max_diff_chars))
    changes += [source.change(sha, max_diff_chars) for sha in shown]
    return head, changes


@dataclass
class _Source:
    path: Path
    git: Git

    def head(self) -> str | None:
        """The commit the default branch (HEAD's target) points at; None when it has none yet."""
        self.git.run("rev-parse", "--git-dir", **self._where())  # GitError here when it is no repository
        proc = self.git.run("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False, **self._where())
        return proc.stdout.decode("ascii", "replace").strip() or None

    def start(self, since: str, head: str) -> str | None:
        """Where the new commits start: `since` while on the branch's history, else where the histories meet;
        None when they never meet or `since` is no commit here (only the head commit counts then)."""
        if not _SHA.fullmatch(since) or not self._is_commit(since):
            return None
        proc = self.git.run("merge-base", "--is-ancestor", since, head, check=False, **self._where())
        if proc.returncode == 0:
            return since
        meet = self.git.run("merge-base", since, head, check=False, **self._where())
        return meet.stdout.decode("ascii", "replace").strip() or None

    def first_parents(self, head: str, start: str | None) -> list[str]:
        """The commits from `start` (excluded) to `head` by first parents, oldest first; just `head` without a
        start."""
        if start is None:
            return [head]
        out = self.git.out("rev-list", "--first-parent", "--reverse", head, f"^{start}", **self._where())
        return out.split()

    def change(self, sha: str, max_diff_chars: int) -> SourceChange:
        """One commit as a source change: subject, rest of the message, author, bounded diff."""
        raw, cut = self._read(
            ("show", "-s", "--no-show-signature", "--format=%an%x00%ae%x00%B", sha), MAX_MESSAGE_BYTES
        )
        name, _, rest = raw.decode("utf-8", "replace").partition("\0")
        email, _, message = rest.partition("\0")
        subject, _, body = message.strip().partition("\n")
        if cut:
            body += f"\n[commit message cut at {MAX_MESSAGE_BYTES:,} bytes]"
        diff, truncated = self._diff(self._parent(sha), sha, max_diff_chars)
        return SourceChange(
            kind="commit",
            id=sha,
            title=subject.strip(),
            body=body.strip(),
            author=_person(name, email),
            url=None,
            merge_commit=sha,
            diff=diff,
            diff_truncated=truncated,
            repository=str(self.path),
        )

    def combined(self, shas: list[str], max_diff_chars: int) -> SourceChange:
        """Several consecutive commits as one change: their subjects listed, one diff over them all."""
        listing = self.git.out(
            "log", "--no-walk=unsorted", "--format=%H %an%x00%s", *shas[-MAX_LISTED:][::-1], **self._where()
        ).splitlines()
        authors: list[str] = []
        lines = []
        for line in listing:
            head, _, subject = line.partition("\0")
            sha, _, author = head.partition(" ")
            if author not in authors:
                authors.append(author)
            lines.append(f"{sha[:12]} {subject[:200]}")
        if len(shas) > MAX_LISTED:
            lines.append(f"[and {len(shas) - MAX_LISTED:,} older commits]")
        diff, truncated = self._diff(self._parent(shas[0]), shas[-1], max_diff_chars)
        return SourceChange(
            kind="commit",
            id=shas[-1],
            title=f"{len(shas)} earlier commits, shown as one change",
            body="Newest first:\n" + "\n".join(lines),
            author=", ".join(authors[:10]),
            url=None,
            merge_commit=shas[-1],
            diff=diff,
            diff_truncated=truncated,
            repository=str(self.path),
        )

    def _parent(self, sha: str) -> str | None:
        out = self.git.out("rev-list", "--parents", "-n", "1", sha, **self._where()).split()
        return out[1] if len(out) > 1 else None

    def _diff(self, parent: str | None, sha: str, max_chars: int) -> tuple[str, bool]:
        """The diff from `parent` (a root commit: from nothing) to `sha`, at most `max_chars` characters."""
        trees = (parent, sha) if parent is not None else ("--root", sha)
        # Bytes are read with room for the characters wanted; decoding can only make fewer characters.
        raw, cut = self._read(("diff-tree", *_DIFF_FLAGS, *trees), max_chars * 4)
        text = raw.decode("utf-8", "replace")
        if len(text) > max_chars:
            text, cut = text[:max_chars], True
        return text, cut

    def _is_commit(self, sha: str) -> bool:
        proc = self.git.run("cat-file", "-e", f"{sha}^{{commit}}", check=False, **self._where())
        return proc.returncode == 0

    def _read(self, args: tuple[str, ...], limit: int) -> tuple[bytes, bool]:
        """Up to `limit` bytes of what `git ARGS` writes, and whether there was more: git is stopped once it has
        written more, or after GIT_SECONDS (what it wrote by then is taken, as cut)."""
        proc = popen(self.git, *args, git_dir=self.path, env=self._safe())
        assert proc.stdout is not None
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            proc.kill()

        timer = threading.Timer(GIT_SECONDS, expire)
        timer.start()
        try:
            data = proc.stdout.read(limit + 1)
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
            code = proc.wait()
            proc.stdout.close()
        more = len(data) > limit
        if code != 0 and not more and not expired.is_set():
            raise GitError(args, code, "")
        return data[:limit], more or expired.is_set()

    def _where(self) -> dict:
        return {"git_dir": self.path, "env": self._safe(), "timeout": GIT_SECONDS}

    def _safe(self) -> dict[str, str]:
        # The repository may belong to another user (a git server's); it is read at exactly this path, as the
        # local code host does with the repositories it was given (see Git.pack_program).
        return {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "safe.directory",
            "GIT_CONFIG_VALUE_0": str(self.path.resolve()),
        }


def _person(name: str, email: str) -> str:
    name, email = " ".join(name.split()), " ".join(email.split())
    return f"{name} <{email}>" if email else name
