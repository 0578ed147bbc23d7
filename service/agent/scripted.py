"""The `scripted` model provider: a deterministic stand-in for a model, for tests and the demo.

It is not a model and reads nothing the conversation says. `COPYDESK_MODEL=scripted:PATH` names a JSON file

    {"description": "optional", "runs": [{"steps": [{"tool": "write_file", "args": {...}}, ...]}, ...]}

Run n of a job (0-based: the create is run 0, each follow-up the next) replays `runs[n]`, one tool call per
model turn, through the same tool executor a real model's calls go through; a step's `args` are not checked
against the tool's schema here, so a script can exercise the tools' own errors. When the steps are used up
without a `finish` step the model finishes; past the last run it finishes at once, changing nothing (an answer:
the script did not judge that no change was needed). A script says no change is needed with its own step,
`{"tool": "finish", "args": {"title": "", "summary": "<reason>", "no_change_needed": true}}`.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from service.agent.model import ChatMessage, ModelError, ModelReply, ToolCall, ToolSpec
from service.agent.tools import TOOL_NAMES
from service.codes import RunFailure


class ScriptError(ModelError):
    """A script file that cannot be read or does not have the expected shape; the message says what is wrong."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=RunFailure.INVALID_SCRIPT)


@dataclass(frozen=True)
class ScriptStep:
    tool: str
    args: dict


@dataclass(frozen=True)
class Script:
    runs: list[list[ScriptStep]]


def load_script(path: Path | str) -> Script:
    """Read and validate a script file; raise ScriptError naming the file and the problem."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScriptError(f"cannot read model script {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ScriptError(f"model script {path} is not valid JSON: {exc}") from None
    return parse_script(data, source=str(path))


def parse_script(data, *, source: str = "model script") -> Script:
    """Validate parsed script JSON and build a Script; raise ScriptError naming what is wrong and where."""
    if not isinstance(data, dict):
        raise ScriptError(f"{source}: the top level must be an object with a 'runs' list")
    _no_extra_keys(data, {"runs", "description"}, source)
    if "runs" not in data:
        raise ScriptError(f"{source}: missing 'runs' (a list of runs, each {{\"steps\": [...]}})")
    if not isinstance(data["runs"], list):
        raise ScriptError(f"{source}: 'runs' must be a list")
    runs = []
    for n, run in enumerate(data["runs"]):
        where = f"{source}: runs[{n}]"
        if not isinstance(run, dict) or not isinstance(run.get("steps"), list):
            raise ScriptError(f"{where} must be an object with a 'steps' list")
        _no_extra_keys(run, {"steps"}, where)
        runs.append([_parse_step(step, f"{where}.steps[{i}]") for i, step in enumerate(run["steps"])])
    return Script(runs)


def _parse_step(step, where: str) -> ScriptStep:
    if not isinstance(step, dict):
        raise ScriptError(f'{where} must be an object like {{"tool": "read_file", "args": {{...}}}}')
    _no_extra_keys(step, {"tool", "args"}, where)
    if "tool" not in step:
        raise ScriptError(f"{where} has no 'tool'")
    tool = step["tool"]
    if tool not in TOOL_NAMES:
        raise ScriptError(f"{where}: unknown tool {tool!r} (known: {', '.join(sorted(TOOL_NAMES))})")
    args = step.get("args", {})
    if not isinstance(args, dict):
        raise ScriptError(f"{where}: 'args' must be an object, not {type(args).__name__}")
    return ScriptStep(tool, args)


def _no_extra_keys(obj: dict, allowed: set[str], where: str) -> None:
    extra = sorted(set(obj) - allowed)
    if extra:
        raise ScriptError(
            f"{where}: unexpected key(s) {', '.join(map(repr, extra))} (allowed: {', '.join(sorted(allowed))})"
        )


class ScriptedModel:
    """Replays one run of a script as model turns; usage is always zero."""

    def __init__(self, name: str, script: Script, *, run_index: int) -> None:
        self.name = name
        self.run_index = run_index
        self._steps = script.runs[run_index] if run_index < len(script.runs) else None
        self._next = 0

    def complete(
        self, messages: list[ChatMessage], tools: list[ToolSpec], *, max_output_tokens: int | None = None
    ) -> ModelReply:
        """The next scripted step as a single tool call, then a `finish` call once the steps are used up
        (scripted turns cost no tokens, so the output limit does not apply)."""
        number = self._next
        self._next += 1
        call_id = f"call_{self.run_index}_{number}"
        if self._steps is None:
            return ModelReply(
                "",
                [
                    ToolCall(
                        call_id,
                        "finish",
                        {
                            "title": "No changes",
                            "summary": f"The script has no run {self.run_index}, so nothing was changed.",
                        },
                    )
                ],
            )
        if number < len(self._steps):
            step = self._steps[number]
            return ModelReply("", [ToolCall(call_id, step.tool, dict(step.args))])
        return ModelReply(
            "",
            [
                ToolCall(
                    call_id,
                    "finish",
                    {
                        "title": f"Scripted changes (run {self.run_index})",
                        "summary": f"Replayed {len(self._steps)} scripted step(s) of run {self.run_index}.",
                    },
                )
            ],
        )
