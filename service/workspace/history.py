"""What a job branch holds against its base, read from the mirror: its diff, its files, its commits by trailer."""

from dataclasses import dataclass, field

from service.workspace.mirror import Mirror

_STATUS = {"A": "added", "M": "modified", "D": "deleted", "T": "type changed"}


@dataclass
class BranchHistory:
    """The job branch's head against its base's head in one mirror; the merge base is computed once."""

    mirror: Mirror
    base: str | None  # the base branch's head (None when the base branch is gone)
    _merge_bases: dict = field(default_factory=dict, repr=False)

    def merge_base(self, head: str) -> str | None:
        """Where `head` left the base, or None without a base (or when `head` is the base)."""
        if self.base is None or self.base == head:
            return None
        if head not in self._merge_bases:
            self._merge_bases[head] = self._git("merge-base", self.base, head)
        return self._merge_bases[head]

    def diff(self, head: str) -> str | None:
        """The branch's changes against its base, as a diff with renames found (None when there are none)."""
        merge_base = self.merge_base(head)
        if merge_base is None:
            return None
        return (
            self._git("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames", merge_base, head)
            or None
        )

    def files(self, head: str) -> list[tuple[str, str]]:
        """(status word, path) of every file the branch changes against its base."""
        if self.base is None or self.base == head:
            return []
        if head in self._merge_bases:
            out = self._git("diff", "--name-status", "--no-renames", self._merge_bases[head], head)
        else:
            # One process instead of `merge-base` and then `diff`; git refuses when there are several merge bases.
            proc = self.mirror.git.run(
                "diff",
                "--name-status",
                "--no-renames",
                "--merge-base",
                self.base,
                head,
                git_dir=self.mirror.path,
                check=False,
            )
            if proc.returncode == 0:
                out = proc.stdout.decode("utf-8", "replace").strip()
            else:
                merge_base = self.merge_base(head)
                assert merge_base is not None  # the base exists and differs from head
                out = self._git("diff", "--name-status", "--no-renames", merge_base, head)
        return [(_STATUS.get(line[0], line[0]), line.split("\t", 1)[1]) for line in out.splitlines() if "\t" in line]

    def find_trailer(self, head: str | None, trailer: str) -> str | None:
        """The newest commit on the branch (not on its base) whose message holds the line `trailer`."""
        if head is None:
            return None
        # Only the branch's own commits are searched, so the cost does not grow with the base's history.
        only_branch = [f"^{self.base}"] if self.base else []
        return self._git("rev-list", "-n", "1", "--fixed-strings", f"--grep={trailer}", head, *only_branch) or None

    def message(self, commit: str) -> str:
        return self._git("log", "-1", "--format=%B", commit)

    def commit_paths(self, commit: str) -> list[str]:
        """The paths `commit` changed against its first parent."""
        return self._git("diff-tree", "--no-commit-id", "--name-only", "-r", commit).splitlines()

    def _git(self, *args: str) -> str:
        return self.mirror.git.out(*args, git_dir=self.mirror.path)
