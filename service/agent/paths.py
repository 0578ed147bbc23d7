"""The sandbox path policy: which repository paths the agent's tools may name and write."""

import functools
import re

from service.workspace.entries import EntryKind, WorkspaceError
from service.workspace.gitnames import aliases, git_file_alias, is_dotgit

_DRIVE = re.compile(r"^[A-Za-z]:")
_PROTECTED_DIRS = ((".github", "workflows"),)  # from the root; each component compared as git would
# Files that change how git treats the repository (submodules, attributes such as filters): read-only.
READ_ONLY_FILES = (".gitmodules", ".gitattributes")


class PathRejected(WorkspaceError):
    """A path the agent may not use; the message tells the model why and what to do instead."""

    def __init__(self, raw: str, reason: str) -> None:
        super().__init__(f"path {raw!r} is not allowed: {reason}")
        self.raw = raw
        self.reason = reason


def normalize(raw: str) -> str:
    """Turn a path the model gave into a repository-relative POSIX path, or raise PathRejected.

    `./` segments and repeated slashes collapse; `..`, absolute paths, `.git` and workflow files are refused.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise PathRejected(str(raw), "the path is empty; give a path relative to the repository root")
    if "\0" in raw:
        raise PathRejected(raw, "the path contains a NUL character")
    if not _encodable(raw):
        raise PathRejected(raw, "the path is not valid Unicode text (it holds a lone surrogate)")
    if "\\" in raw:
        raise PathRejected(raw, "use forward slashes (/) to separate folders")
    if raw.startswith("/") or _DRIVE.match(raw):
        raise PathRejected(raw, "absolute paths are not allowed; give a path relative to the repository root")
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if not parts:
        raise PathRejected(raw, "the path names the repository root, not a file")
    if ".." in parts:
        raise PathRejected(raw, "'..' is not allowed; give a path relative to the repository root")
    # Compared as git's verify_path does: a checkout on HFS+ or NTFS reads `.GIT.`, `git~1` or `.g\u200cit` as `.git`.
    if any(is_dotgit(part) for part in parts):
        raise PathRejected(raw, "nothing inside .git (or a name a checkout would read as .git) can be read or changed")
    for part in parts:
        imitated = git_file_alias(part)
        if imitated:
            raise PathRejected(raw, f"{part!r} would be read as {imitated} by a checkout on some systems")
    for protected in _PROTECTED_DIRS:
        if len(parts) >= len(protected) and all(aliases(p, name) for p, name in zip(parts, protected, strict=False)):
            where = "/".join(protected)
            raise PathRejected(raw, f"files under {where}/ (CI workflows) cannot be read or changed")
    return "/".join(parts)


def _encodable(raw: str) -> bool:
    # Tree names that are not UTF-8 are read with surrogateescape, so those escapes name real files; any other
    # lone surrogate can never become a path git can store.
    try:
        raw.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def is_allowed(path: str) -> bool:
    """Whether a repository path passes `normalize` unchanged (used to hide forbidden files from listings)."""
    try:
        return normalize(path) == path
    except PathRejected:
        return False


def allowed_paths(paths: list[str]) -> list[str]:
    """The paths of `paths` that pass `is_allowed`, for whole listings: each distinct name is checked once, and
    only a path with a name that fails, a protected prefix or an odd shape goes through `normalize`."""
    return [path for path in paths if _plainly_allowed(path) or is_allowed(path)]


def _plainly_allowed(path: str) -> bool:
    parts = path.split("/")
    if not all(map(_plain_name, parts)) or _DRIVE.match(path):
        return False
    return not any(
        len(parts) >= len(protected) and all(map(aliases, parts, protected)) for protected in _PROTECTED_DIRS
    )


@functools.lru_cache(maxsize=1 << 16)
def _plain_name(part: str) -> bool:
    """Whether a path component can never make `normalize` refuse a path (a conservative test)."""
    if part in ("", ".", "..") or "\\" in part or "\0" in part or not _encodable(part):
        return False
    lowered = part.lower()
    if part.isascii() and "~" not in part and "git" not in lowered and "mailmap" not in lowered:
        return True  # names neither `.git` nor a git-read file, nor an 8.3 short name of one
    return not is_dotgit(part) and git_file_alias(part) is None


def check_writable(workspace, path: str, *, moving_to: str | None = None) -> None:
    """Raise PathRejected when writing, moving or deleting `path` would go through a symlink or submodule.

    The path and its parent folders are checked in the workspace; for a folder, every entry under it must be
    a regular file the agent may change, and stay one it may change under `moving_to` when it is moved.
    """
    _check_not_read_only(path)
    parts = path.split("/")
    for depth in range(1, len(parts) + 1):
        prefix = "/".join(parts[:depth])
        kind = workspace.kind(prefix)
        if kind is None:
            # Nothing exists below a missing folder, so no deeper entry can be a link.
            return
        if kind in (EntryKind.SYMLINK, EntryKind.SUBMODULE):
            where = "is" if depth == len(parts) else f"is inside {prefix}, which is"
            raise PathRejected(
                path, f"{path} {where} a {kind.value}; symlinks and submodules are never followed or changed"
            )
        if depth < len(parts) and kind is not EntryKind.DIRECTORY:
            raise PathRejected(path, f"{prefix} is a file, not a folder")
    if kind is EntryKind.DIRECTORY:
        _check_folder(workspace, path, moving_to)


def _check_folder(workspace, folder: str, moving_to: str | None) -> None:
    # A folder operation touches every entry below it, so each must pass the policy on its own.
    prefix = folder + "/"
    for entry in workspace.list_files():
        if not entry.startswith(prefix):
            continue
        if not is_allowed(entry):
            raise PathRejected(folder, f"it contains {entry}, which cannot be changed")
        _check_not_read_only(entry)
        kind = workspace.kind(entry)
        if kind in (EntryKind.SYMLINK, EntryKind.SUBMODULE):
            raise PathRejected(
                folder, f"it contains {entry}, a {kind.value}; symlinks and submodules are never followed or changed"
            )
        if moving_to is not None:
            normalize(moving_to + entry[len(folder) :])


def _check_not_read_only(path: str) -> None:
    name = path.rsplit("/", 1)[-1]
    if name in READ_ONLY_FILES:
        raise PathRejected(path, f"{name} changes how git treats the repository; Copydesk never changes it")
