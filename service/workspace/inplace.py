"""Publishes a run's commit to a trusted repository on this machine (a local project) without the pack protocol:
the pack `build_commit` wrote and checked is copied into the repository, then the branch moves by compare and swap.

A push sends the same objects, and its receiving side then walks the whole tree of every branch head to check that
they connect, which grows with the repository. Here that check is not needed: the pack passed `index-pack --strict`
against the mirror, which reads this repository's objects (service.workspace.mirror), and the branch moves only from
the commit's parent (or is created only where none exists and the parent is in the repository, whose gc keeps what a
kept commit needs), in one `update-ref` transaction, so a concurrent push or merge makes it fail as a push would.
No hook runs: Copydesk's git runs with none (a push ran the repository's own receive hooks, since git starts the
receiving side of a local push without the pusher's config).
"""

import contextlib
import os
import secrets
import shutil
from enum import Enum
from pathlib import Path

from service.workspace.git import GitError, Remote
from service.workspace.mirror import Mirror


class Published(Enum):
    DONE = "done"  # the branch points at the commit now
    MOVED = "moved"  # the branch is not where the commit was built: refused, as a push would be
    PUSH = "push"  # cannot tell or cannot copy here (another shape of repository, a pack gone): push instead


def publish_in_place(mirror: Mirror, remote: Remote, commit: str, parent: str, branch_ref: str) -> Published:
    """Move `branch_ref` of the repository at `remote.url` to `commit` (whose one parent is `parent`), never forcing.

    The branch is created when it does not exist and `parent` is in the repository, moved when it is at `parent`,
    left alone when it is at `commit` already (DONE each); MOVED when it moved meanwhile; PUSH when only a push
    can tell (the branch is elsewhere, maybe behind the parent) or this mirror did not write the commit's pack.
    """
    repo = Path(remote.url)
    checksum = mirror.packs.get(commit)
    if not remote.trusted or checksum is None or not (repo / "objects" / "pack").is_dir():
        return Published.PUSH
    trust = ("-c", f"safe.directory={remote.url}")
    query = f"{branch_ref}\n{parent}\n".encode()
    out = mirror.git.out(*trust, "cat-file", "--batch-check", git_dir=repo, input=query).splitlines()
    head = out[0].split()[0] if not out[0].endswith(" missing") else None
    if head == commit:
        return Published.DONE
    if head is None and out[1].endswith(" missing"):
        return Published.PUSH  # the parent left the repository: the push's own checks decide
    if head not in (None, parent):
        return Published.PUSH  # maybe an ancestor of the commit (a push would fast-forward it), maybe not
    if not _copy_pack(mirror.path, repo, checksum):
        return Published.PUSH
    old = parent if head is not None else "0" * len(commit)  # all zeros: the branch must not exist
    script = f"update {branch_ref} {commit} {old}\n".encode()
    proc = mirror.git.run(*trust, "update-ref", "--stdin", git_dir=repo, input=script, check=False)
    if proc.returncode == 0:
        return Published.DONE
    stderr = proc.stderr.decode("utf-8", "replace")
    if "Permission denied" in stderr:
        return Published.PUSH  # the push tells it as it always has
    if "cannot lock ref" in stderr:  # at another head or created meanwhile, or being updated right now
        return Published.MOVED
    raise GitError(["update-ref"], proc.returncode, stderr)


def _copy_pack(mirror_dir: Path, repo: Path, checksum: str) -> bool:
    """Copy the mirror's `pack-<checksum>` (pack, then index: git finds a pack by its index) into the repository;
    False when it cannot (the mirror's upkeep repacked meanwhile, or the repository is not writable: a push then
    says why, as it always has). The copies are synced before they are renamed into place, so a branch never points
    at objects a crash could lose; a crash before the rename leaves `tmp_` files, which git's own prune removes."""
    source, target = mirror_dir / "objects" / "pack", repo / "objects" / "pack"
    for suffix in (".pack", ".idx"):
        name = f"pack-{checksum}{suffix}"
        if (target / name).exists():
            continue  # an earlier attempt copied it
        tmp = target / f"tmp_{suffix[1:]}_{secrets.token_hex(8)}"
        try:
            shutil.copyfile(source / name, tmp)
            with open(tmp, "rb") as copied:
                os.fsync(copied.fileno())
            os.chmod(tmp, 0o444)
            os.replace(tmp, target / name)
        except OSError:  # gone from the mirror (its upkeep repacked), or the repository refuses our writes
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            return False
    return True
