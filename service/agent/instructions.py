"""The repository's own instructions for agents (`AGENTS.md`, `.copydesk/AGENTS.md`), read from the workspace."""

from service.workspace.entries import WorkspaceError

INSTRUCTION_FILES = ("AGENTS.md", ".copydesk/AGENTS.md")
MAX_CHARS = 20_000


def load_instructions(workspace) -> str | None:
    """The instruction files that exist at the run's start, each under its path; None when there are none.

    Symlinks and unreadable entries are skipped; the text is cut at MAX_CHARS so it cannot crowd out the task.
    """
    parts = []
    for path in INSTRUCTION_FILES:
        try:
            data = workspace.read(path)
        except WorkspaceError:
            continue
        text = data.decode("utf-8", "replace").strip()
        if text:
            parts.append(f"From {path}:\n{text}")
    if not parts:
        return None
    joined = "\n\n".join(parts)
    if len(joined) > MAX_CHARS:
        joined = joined[:MAX_CHARS] + "\n[... the rest of the instructions was cut]"
    return joined
