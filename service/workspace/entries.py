"""What a path in a workspace is, and the errors workspace operations raise."""

import enum
from dataclasses import dataclass


class EntryKind(str, enum.Enum):
    FILE = "file"
    EXECUTABLE = "executable"
    SYMLINK = "symlink"
    SUBMODULE = "submodule"
    DIRECTORY = "directory"


@dataclass(frozen=True)
class SearchMatch:
    path: str
    line: int  # 1-based
    text: str


class WorkspaceError(Exception):
    """A workspace operation that cannot be done; the message is fit to show the agent."""


class PathNotFound(WorkspaceError):
    pass


class NotARegularFile(WorkspaceError):
    """The path is a symlink, a submodule or a directory: it is reported, never followed."""

    def __init__(self, path: str, kind: EntryKind, target: str | None = None) -> None:
        detail = f"{path} is a {kind.value}" + (f" (-> {target}); it is not followed" if target else "")
        super().__init__(detail)
        self.path, self.kind, self.target = path, kind, target


class PathExists(WorkspaceError):
    pass


class BranchConflict(WorkspaceError):
    """The job branch moved during the run and touched the same files."""

    def __init__(self, files: list[str]) -> None:
        super().__init__("the branch changed during the run in files this run also changed: " + ", ".join(files))
        self.files = files
