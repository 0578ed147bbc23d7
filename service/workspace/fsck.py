"""Checks the objects a new commit adds with git's own fsck, as a host that verifies pushes would."""

import subprocess
import tempfile
from pathlib import Path

from service.codes import RunFailure
from service.errors import RunFailed
from service.workspace.git import Git
from service.workspace.proc import popen


class UnsafeCommit(RunFailed):
    """The commit's new objects fail `git fsck --strict` (e.g. a rewritten folder holds a `.git` look-alike)."""

    def __init__(self, detail: str) -> None:
        super().__init__(RunFailure.UNSAFE_COMMIT, "the commit would not pass git fsck --strict, so nothing was pushed "
                         f"(a folder the run changed holds an entry git refuses): {detail}")
        self.detail = detail


def check_new_objects(git: Git, git_dir: Path | str, commit: str, parents: list[str]) -> None:
    """Raise UnsafeCommit unless every object `commit` adds over `parents` passes git's strict checks.

    Only the new objects are packed (`--sparse` walks just the changed paths) and indexed with
    `index-pack --strict` in a scratch repository that borrows the mirror's objects, which is what a host
    with `receive.fsckObjects` runs on a push; objects that were already in the parents are not judged.
    """
    revs = "".join([f"{commit}\n", *(f"^{parent}\n" for parent in parents)]).encode("ascii")
    with tempfile.TemporaryDirectory(prefix="copydesk-fsck-") as scratch:
        git.run("init", "--bare", "--quiet", "--template=", scratch)
        Path(scratch, "objects", "info").mkdir(parents=True, exist_ok=True)
        Path(scratch, "objects", "info", "alternates").write_text(str(Path(git_dir).resolve() / "objects") + "\n")
        with tempfile.TemporaryFile() as errors:
            packer = popen(git, "pack-objects", "--revs", "--sparse", "--stdout", "--quiet", git_dir=git_dir,
                           stdin=subprocess.PIPE, stderr=errors)
            assert packer.stdin is not None and packer.stdout is not None
            packer.stdin.write(revs)
            packer.stdin.close()
            indexer = popen(git, "index-pack", "--strict", "--stdin", git_dir=scratch, stdin=packer.stdout,
                            stdout=subprocess.DEVNULL, stderr=errors)
            packer.stdout.close()
            packed, indexed = packer.wait(), indexer.wait()
            if packed or indexed:
                errors.seek(0)
                found = [line for line in errors.read().decode("utf-8", "replace").splitlines()
                         if line.startswith("error:")]
                raise UnsafeCommit("; ".join(found)[:500] or f"git exited {packed or indexed}")
