"""What a `run.step` event says about a tool call: its name and a short summary of its arguments, never contents."""

from service.agent.model import ToolCall

MAX_SUMMARY = 200
# The arguments worth showing, per tool; content-bearing ones (`content`, `old`, `new`, `summary`) never are.
_SHOWN = {
    "list_files": ("pattern",),
    "read_file": ("path", "start_line", "end_line"),
    "search": ("pattern", "path_glob"),
    "write_file": ("path",),
    "edit_file": ("path",),
    "move_file": ("path", "new_path"),
    "delete_file": ("path",),
    "check_docs": (),
    "finish": ("title", "no_change_needed"),
}


def summarize(call: ToolCall) -> str:
    """A one-line summary of the call's arguments, at most 200 characters."""
    args = call.arguments if isinstance(call.arguments, dict) else {}
    parts = [f"{name}={args[name]!s}" for name in _SHOWN.get(call.name, ()) if args.get(name) not in (None, "")]
    if call.name == "write_file" and isinstance(args.get("content"), str):
        parts.append(f"{len(args['content'])} characters")
    text = " ".join(parts).replace("\n", " ")
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 1] + "…"


def step_event(message_id: str, number: int, call: ToolCall) -> dict:
    """The `run` object of a `run.step` event."""
    return {"messageId": message_id, "step": number, "tool": call.name[:64], "summary": summarize(call)}
