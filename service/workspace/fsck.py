"""Stores a run's new objects only once git's own strict checks pass, as a host that verifies pushes would."""

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from service.codes import RunFailure
from service.errors import RunFailed
from service.workspace.git import Git
from service.workspace.packs import write_pack


class UnsafeCommit(RunFailed):
    """The commit's new objects fail `git fsck --strict` (e.g. a rewritten folder holds a `.git` look-alike)."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            RunFailure.UNSAFE_COMMIT,
            "the commit would not pass git fsck --strict, so nothing was pushed "
            f"(a folder the run changed holds an entry git refuses): {detail}",
        )
        self.detail = detail


def store_checked(
    git: Git, git_dir: Path | str, objects: Mapping[str, tuple[str, bytes]], object_format: str = "sha1"
) -> str:
    """Add `objects` (id -> (kind, content): every object a new commit adds) to the repository as one pack, or
    raise UnsafeCommit, storing nothing, unless they all pass git's strict checks.

    The pack is indexed with `index-pack --strict` against the repository's objects (every link must resolve),
    which is what a host with `receive.fsckObjects` runs on a push of these objects; objects the parents
    already held are not judged. The pack is moved in only after that, index last, as git itself does. Returns the
    pack's checksum (it is `objects/pack/pack-<checksum>.pack`).
    """
    pack_dir = Path(git_dir) / "objects" / "pack"
    pack_dir.mkdir(parents=True, exist_ok=True)
    # Beside the pack folder, so the final moves are renames on one file system; git ignores the folder.
    with tempfile.TemporaryDirectory(prefix="copydesk-pack-", dir=git_dir) as scratch:
        pack, index = os.path.join(scratch, "new.pack"), os.path.join(scratch, "new.idx")
        with open(pack, "wb") as out:
            checksum = write_pack(out, objects, object_format)
        proc = git.run("index-pack", "--strict", "-o", index, pack, git_dir=git_dir, check=False)
        if proc.returncode != 0:
            found = [
                line
                for line in proc.stderr.decode("utf-8", "replace").splitlines()
                if line.startswith(("error:", "fatal:"))
            ]
            raise UnsafeCommit("; ".join(found)[:500] or f"git exited {proc.returncode}")
        for path in (pack, index):
            os.chmod(path, 0o444)
        os.replace(pack, pack_dir / f"pack-{checksum}.pack")
        os.replace(index, pack_dir / f"pack-{checksum}.idx")
    return checksum
