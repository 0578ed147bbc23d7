"""The agent's file tools: their JSON Schema specs and the executor that runs them on the workspace overlay."""

import itertools
import logging
from collections import Counter
from dataclasses import dataclass

from service.agent.docs_check import check_docs
from service.agent.docs_report import REPORT_MAX_CHARS
from service.agent.model import ToolCall, ToolSpec
from service.agent.path_cache import allowed_files
from service.agent.paths import check_writable, is_allowed, normalize
from service.codes import RunFailure
from service.errors import RunFailed
from service.faults import STALLS, Faults
from service.runstop import RunStop, ToolTimedOut
from service.workspace.entries import EntryKind, WorkspaceError
from service.workspace.globs import compile_glob, literal_prefix
from service.workspace.globs import matcher as glob_matcher
from service.workspace.lines import LineReader
from service.workspace.overlay import BINARY_PROBE_BYTES, is_binary
from service.workspace.pathruns import entries_below

log = logging.getLogger(__name__)

# Every tool's text result is capped so one call cannot crowd the model's context; a cut result ends with a
# note in [brackets] that says how to get the rest.
LIST_LIMIT = 500
LIST_MAX_CHARS = 30_000
READ_MAX_LINES = 400
READ_MAX_CHARS = 40_000
LINE_MAX_CHARS = 2_000
SEARCH_LIMIT = 200
SEARCH_MAX_CHARS = 20_000
MATCH_MAX_CHARS = 300
SUGGESTIONS = 3  # narrower patterns offered in a "more not shown" note
MAX_GLOB_CHARS = 1_000


def _schema(properties: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_PATH = {"type": "string", "description": "Path relative to the repository root, e.g. docs/intro.md."}

TOOL_SPECS: list[ToolSpec] = [
    ToolSpec(
        "list_files",
        "List the repository's files (your pending changes included), sorted. Without a pattern every file is "
        "listed. The pattern is a gitignore-style glob: `*` and `?` stay within one folder, `**` spans folders, "
        "a pattern without `/` matches names at any depth (`*.mdx`), a leading `/` anchors it to the root, and "
        "a folder (`docs/guides`) matches everything below it. "
        f"At most {LIST_LIMIT} paths are returned; a note at the end says how to list the rest.",
        _schema({"pattern": {"type": "string", "description": "Glob such as docs/**/*.md; omit to list all."}}, []),
    ),
    ToolSpec(
        "read_file",
        f"Read a text file, with line numbers. At most {READ_MAX_LINES} lines are returned per call; use "
        "start_line and end_line (1-based, inclusive) to read further. Symlinks and submodules are reported, "
        "not followed.",
        _schema(
            {
                "path": _PATH,
                "start_line": {"type": "integer", "minimum": 1, "description": "First line to return (default 1)."},
                "end_line": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Last line to return (default: as many as fit).",
                },
            },
            ["path"],
        ),
    ),
    ToolSpec(
        "search",
        "Search the text files' contents, line by line, with a regular expression in RE2 syntax (Perl-like: "
        "classes, \\d \\w \\s \\b, groups, alternation, repetition; no back-references or look-around). Returns "
        f"up to {SEARCH_LIMIT} matches as path:line: text, sorted by path; a note at the end says when there are more.",
        _schema(
            {
                "pattern": {"type": "string", "description": "Regular expression to look for."},
                "path_glob": {
                    "type": "string",
                    "description": "Only search files matching this glob (as in list_files), e.g. docs/**/*.md.",
                },
                "ignore_case": {"type": "boolean", "description": "Match case-insensitively (default false)."},
            },
            ["pattern"],
        ),
    ),
    ToolSpec(
        "write_file",
        "Create a file or replace its whole content. Prefer edit_file for changes to existing files. Parent "
        "folders are created as needed.",
        _schema(
            {"path": _PATH, "content": {"type": "string", "description": "The complete new file content."}},
            ["path", "content"],
        ),
    ),
    ToolSpec(
        "edit_file",
        "Replace one exact piece of text in a file. `old` must occur exactly once in the file, character for "
        "character including whitespace and indentation; include enough surrounding lines to make it unique.",
        _schema(
            {
                "path": _PATH,
                "old": {"type": "string", "description": "The exact text to replace; must occur exactly once."},
                "new": {"type": "string", "description": "The text to put in its place."},
            },
            ["path", "old", "new"],
        ),
    ),
    ToolSpec(
        "move_file",
        "Move or rename a file, or a whole folder. The destination must not exist. Update the links and "
        "navigation that point to the old path.",
        _schema(
            {
                "path": _PATH,
                "new_path": {"type": "string", "description": "The new path, relative to the repository root."},
            },
            ["path", "new_path"],
        ),
    ),
    ToolSpec(
        "delete_file",
        "Delete a file, or a whole folder with everything in it. Update the links and navigation that point to it.",
        _schema({"path": _PATH}, ["path"]),
    ),
    ToolSpec(
        "check_docs",
        "Check the documentation pages you changed: broken relative links, and links elsewhere to files you "
        "moved or deleted. Run it before finish and fix what it reports.",
        _schema({}, []),
    ),
    ToolSpec(
        "finish",
        "End the run. `title` is the pull request title for your changes (short, imperative); `summary` tells "
        "the person what you changed and why, or answers their question. When the request asks for a change "
        "the docs do not need (they already say it, or it does not apply), change no file and set "
        "`no_change_needed` to true, with the reason in `summary`.",
        _schema(
            {
                "title": {
                    "type": "string",
                    "description": "Pull request title, e.g. 'Document the --dry-run flag'; "
                    "empty when you changed nothing.",
                },
                "summary": {
                    "type": "string",
                    "description": "What you changed and why, your answer, or why no change is needed.",
                },
                "no_change_needed": {
                    "type": "boolean",
                    "description": "True when the request needs no change to "
                    "the docs; only with no file changed "
                    "(default false).",
                },
            },
            ["title", "summary"],
        ),
    ),
]

_SOURCE_PATH = {"type": "string", "description": "Path relative to the source repository's root, e.g. src/cli.py."}
_READ_SPECS = {spec.name: spec for spec in TOOL_SPECS}

# Offered only to a round that names a source repository (service.sources): reading it, never changing it.
SOURCE_TOOL_SPECS: list[ToolSpec] = [
    ToolSpec(
        "source_list_files",
        "List the files of the source repository: read-only reference material from another repository, at the "
        "commit this round names (not the repository you edit). The pattern works as in list_files. "
        f"At most {LIST_LIMIT} paths are returned; a note at the end says how to list the rest.",
        _READ_SPECS["list_files"].parameters,
    ),
    ToolSpec(
        "source_read_file",
        f"Read a text file of the source repository, with line numbers, as read_file does: at most {READ_MAX_LINES} "
        "lines per call, start_line and end_line to read further. The source cannot be changed.",
        _schema({**_READ_SPECS["read_file"].parameters["properties"], "path": _SOURCE_PATH}, ["path"]),
    ),
    ToolSpec(
        "source_search",
        "Search the source repository's text files, line by line, with an RE2 regular expression, as search does "
        f"(up to {SEARCH_LIMIT} matches as path:line: text).",
        _READ_SPECS["search"].parameters,
    ),
]

# Every tool a run may be offered (a scripted model's steps are checked against these); a run is offered
# TOOL_SPECS, and SOURCE_TOOL_SPECS too when its round has a source (see `ToolExecutor.specs`).
TOOLS_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in TOOL_SPECS + SOURCE_TOOL_SPECS}
TOOL_NAMES: frozenset[str] = frozenset(TOOLS_BY_NAME)


@dataclass(frozen=True)
class Finish:
    """The model's closing words: `title` for the pull request (None when there is none) and a summary."""

    title: str | None
    summary: str
    no_change_needed: bool = False  # the request needs no change: `summary` says why


@dataclass(frozen=True)
class ToolResult:
    """The text sent back to the model for one call; `finish` is set when the call ended the run."""

    content: str
    is_error: bool = False
    finish: Finish | None = None


class InvalidArguments(Exception):
    """Tool arguments that do not fit the tool's schema; the message is shown to the model."""


class ToolExecutor:
    """Runs the model's tool calls on one workspace, enforcing the path policy and the bytes-written limit.

    With a `source` (a round's source repository, service.sources), its tree is offered for reading too, through
    the same reading tools and path policy; no tool writes it."""

    def __init__(
        self,
        workspace,
        *,
        max_bytes_written: int,
        site=None,
        stop: RunStop | None = None,
        time_budget: float | None = None,
        faults: Faults = Faults(),
        source=None,
    ) -> None:
        self.workspace = workspace
        self.reader = TreeReader(workspace)
        self.source = TreeReader(source, prefix="source_") if source is not None else None
        # The tools this run is offered, in the order the model sees them.
        self.specs: list[ToolSpec] = TOOL_SPECS + (SOURCE_TOOL_SPECS if source is not None else [])
        self._offered = {spec.name: spec for spec in self.specs}
        self.faults = faults
        self.stop = stop if stop is not None else RunStop()
        self.time_budget = time_budget  # seconds one call may take; enforced by the stop's watchdog
        self.site = site  # the detected docs site (docsite.detect), so check_docs knows the docs root
        self.max_bytes_written = max_bytes_written
        self.bytes_written = 0

    def execute(self, call: ToolCall) -> ToolResult:
        """Run one tool call; refusals and workspace errors become tool errors, limit breaches raise RunFailed."""
        spec = self._offered.get(call.name)
        if spec is None:
            return ToolResult(
                f"unknown tool {call.name!r}; the tools are: {', '.join(sorted(self._offered))}", is_error=True
            )
        try:
            with self.stop.time_box(self.time_budget):
                if spec.name in ("search", "source_search"):
                    for stall in STALLS:
                        self.faults.reach(stall)
                return self._run(spec, call)
        except ToolTimedOut:
            return ToolResult(
                f"{call.name} was stopped: it took longer than a tool call's time budget of "
                f"{self.time_budget:g} s. Try a narrower call (a path glob, a line range).",
                is_error=True,
            )

    def _run(self, spec: ToolSpec, call: ToolCall) -> ToolResult:
        try:
            args = validate_arguments(spec, call.arguments)
            return getattr(self, f"_{spec.name}")(**args)
        except (InvalidArguments, WorkspaceError) as exc:
            return ToolResult(f"{call.name} failed: {exc}", is_error=True)
        except RunFailed:
            raise  # a run limit (bytes written) ends the run by design
        except Exception as exc:
            # A bug or hostile input (a lone surrogate, a parser's RecursionError) must not end the run: the model
            # is told and can try another way. Stops and time-outs are BaseExceptions and pass through.
            log.exception("the %s tool failed unexpectedly", call.name)
            return ToolResult(
                f"{call.name} failed: an internal error stopped it ({type(exc).__name__}: "
                f"{str(exc)[:300]}); try another way",
                is_error=True,
            )

    # --- the tools -------------------------------------------------------------------------------

    def _list_files(self, pattern: str | None = None) -> ToolResult:
        return self.reader.list_files(pattern)

    def _read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> ToolResult:
        return self.reader.read_file(path, start_line, end_line)

    def _search(self, pattern: str, path_glob: str | None = None, ignore_case: bool = False) -> ToolResult:
        return self.reader.search(pattern, path_glob, ignore_case)

    # Only offered (see `specs`) when the round has a source, so `self.source` is set whenever these run.
    def _source_list_files(self, pattern: str | None = None) -> ToolResult:
        assert self.source is not None
        return self.source.list_files(pattern)

    def _source_read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> ToolResult:
        assert self.source is not None
        return self.source.read_file(path, start_line, end_line)

    def _source_search(self, pattern: str, path_glob: str | None = None, ignore_case: bool = False) -> ToolResult:
        assert self.source is not None
        return self.source.search(pattern, path_glob, ignore_case)

    def _write_file(self, path: str, content: str) -> ToolResult:
        path = self._writable(path)
        kind = self.workspace.kind(path)
        if kind is EntryKind.DIRECTORY:
            raise InvalidArguments(f"{path} is a folder")
        data = content.encode("utf-8")
        self._count(len(data))
        self.workspace.write(path, data)
        return ToolResult(f"{'created' if kind is None else 'replaced'} {path} ({len(data)} bytes)")

    def _edit_file(self, path: str, old: str, new: str) -> ToolResult:
        path = self._writable(path)
        if not old:
            raise InvalidArguments("old is empty; to replace a whole file use write_file")
        if old == new:
            raise InvalidArguments("old and new are the same; nothing would change")
        data = self.workspace.read(path)  # refuses a file past the size limit
        if is_binary(data):
            raise InvalidArguments(f"{path} is a binary file and cannot be edited")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArguments(f"{path} is not UTF-8 text and cannot be edited") from None
        at = text.find(old)
        if at < 0:
            raise InvalidArguments(
                f"old text was not found in {path}; read the file and copy the text exactly, including whitespace"
            )
        # Searching again from one past the first hit also catches overlapping occurrences.
        if text.find(old, at + 1) >= 0:
            count = max(text.count(old), 2)
            raise InvalidArguments(
                f"old text occurs {count} times in {path}; include more surrounding text so it occurs exactly once"
            )
        added = new.encode("utf-8")
        self._count(len(added))
        self.workspace.write(path, (text[:at] + new + text[at + len(old) :]).encode("utf-8"))
        line = text.count("\n", 0, at) + 1
        return ToolResult(f"edited {path} at line {line}")

    def _move_file(self, path: str, new_path: str) -> ToolResult:
        new_path = self._writable(new_path)
        path = self._writable(path, moving_to=new_path)
        if path == new_path:
            raise InvalidArguments("path and new_path are the same")
        self.workspace.move(path, new_path)
        return ToolResult(f"moved {path} to {new_path}")

    def _delete_file(self, path: str) -> ToolResult:
        path = self._writable(path)
        self.workspace.delete(path)
        return ToolResult(f"deleted {path}")

    def _check_docs(self) -> ToolResult:
        report = check_docs(self.workspace, self.site)
        if report.failure is not None:
            return ToolResult(report.to_text(), is_error=True)
        return ToolResult(report.to_text(REPORT_MAX_CHARS))

    def _finish(self, title: str, summary: str, no_change_needed: bool = False) -> ToolResult:
        if not summary.strip():
            raise InvalidArguments(
                "summary is empty; say what you changed, or answer the question"
                + (", or say why no change is needed" if no_change_needed else "")
            )
        # Both end up in a commit message and a pull request, which must be valid UTF-8.
        for name, text in (("title", title), ("summary", summary)):
            if not _is_unicode(text):
                raise InvalidArguments(f"{name} is not valid Unicode text (it holds a lone surrogate)")
        if no_change_needed:
            self._ensure_unchanged()
        finish = Finish(title.strip() or None, summary.strip(), no_change_needed=bool(no_change_needed))
        return ToolResult("run finished", finish=finish)

    def _ensure_unchanged(self) -> None:
        """Refuse "no change needed" from a run that changed files: which one it meant is for the model to say,
        so neither its changes nor its reason is dropped silently."""
        changed = sorted(self.workspace.changes())
        if not changed:
            return
        shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
        raise InvalidArguments(
            f"no_change_needed is true but you changed {len(changed)} file(s): {shown}. Either "
            "call finish without no_change_needed to propose these changes, or undo them "
            "first (restore each edited file's text, delete the files you created) and then "
            "finish with no_change_needed"
        )

    # --- helpers ---------------------------------------------------------------------------------

    def _writable(self, raw: str, *, moving_to: str | None = None) -> str:
        path = normalize(raw)
        check_writable(self.workspace, path, moving_to=moving_to)
        return path

    def _count(self, size: int) -> None:
        # Checked before the write so a run that breaches the limit leaves no partial change behind.
        if self.bytes_written + size > self.max_bytes_written:
            raise RunFailed(
                RunFailure.WRITE_LIMIT_EXCEEDED,
                f"the agent tried to write more than {self.max_bytes_written} bytes in one run",
            )
        self.bytes_written += size


class TreeReader:
    """The reading tools over one tree: the run's workspace (its pending changes included), or a round's read-only
    source repository. `prefix` is what its tools' names start with, for the notes that say how to read on."""

    def __init__(self, tree, prefix: str = "") -> None:
        self.tree = tree
        self.prefix = prefix

    def list_files(self, pattern: str | None = None) -> ToolResult:
        if pattern:
            pattern = _check_glob(pattern, "pattern")
            # Only the run of the sorted listing that can match is read, and matched by one RE2 program a path.
            matching = glob_matcher((pattern,))
            files = [path for path in allowed_files(self.tree, literal_prefix(pattern)) if matching(path)]
        else:
            files = allowed_files(self.tree)
        if not files:
            return ToolResult("no files match" + (f" {pattern!r}" if pattern else ""))
        shown = _fitting(files[:LIST_LIMIT], LIST_MAX_CHARS)
        text = "\n".join(shown)
        if len(shown) < len(files):
            rest = len(files) - len(shown)
            hints = ", ".join(
                f"{self.prefix}list_files(pattern={glob!r}) for {count:,}"
                for glob, count in _narrower(files, len(shown))
            )
            text += f"\n[{rest:,} more files not shown (of {len(files):,}); list them with a narrower pattern: {hints}]"
        return ToolResult(text)

    def read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> ToolResult:
        path = normalize(path)
        size = self.tree.size(path)
        if size == 0:
            return ToolResult(f"{path} is empty")
        first = start_line or 1
        if end_line is not None and end_line < first:
            raise InvalidArguments(f"end_line {end_line} is before start_line {first}")
        # Streamed: a line range near the end of a huge file costs a pass over it, never its size in memory.
        with self.tree.open(path) as stream:
            reader = LineReader(stream, max_line=LINE_MAX_CHARS * 4)
            if is_binary(reader.head(BINARY_PROBE_BYTES)):
                return ToolResult(f"{path} is a binary file ({size:,} bytes); its content is not shown")
            out: list[str] = []
            chars, shown_last = 0, first - 1
            consumed = reader.skip_lines(first - 1)
            for number, (raw, length) in enumerate(reader.lines(), first):
                consumed = number
                if number > (end_line or number) or number >= first + READ_MAX_LINES:
                    break
                line = raw.decode("utf-8", "replace")
                if len(line) > LINE_MAX_CHARS or length > len(raw):
                    line = line[:LINE_MAX_CHARS] + f" [... {length - len(line[:LINE_MAX_CHARS].encode())} more bytes]"
                entry = f"{number:6}\t{line}"
                if out and chars + len(entry) > READ_MAX_CHARS:
                    break
                out.append(entry)
                chars += len(entry) + 1
                shown_last = number
            total = consumed + reader.count_lines()
        if first > total:
            raise InvalidArguments(f"start_line {first} is past the end of {path}, which has {total} lines")
        header = f"{path} (lines {first}-{shown_last} of {total})"
        text = header + "\n" + "\n".join(out)
        if shown_last < min(end_line or total, total):
            text += f"\n[more lines follow; call {self.prefix}read_file with start_line={shown_last + 1} to read on]"
        return ToolResult(text)

    def search(self, pattern: str, path_glob: str | None = None, ignore_case: bool = False) -> ToolResult:
        if not pattern or "\0" in pattern:
            raise InvalidArguments("pattern must be a non-empty regular expression without NUL characters")
        globs = [_check_glob(path_glob, "path_glob")] if path_glob else None
        # One match past the cap tells "there are more" apart from "exactly the cap".
        found = self.tree.search(pattern, globs=globs, ignore_case=ignore_case, max_matches=SEARCH_LIMIT + 1)
        capped = len(found) > SEARCH_LIMIT
        matches = [match for match in found[:SEARCH_LIMIT] if is_allowed(match.path)]
        lines = []
        for match in matches:
            text = match.text if len(match.text) <= MATCH_MAX_CHARS else match.text[:MATCH_MAX_CHARS] + " [...]"
            lines.append(f"{match.path}:{match.line}: {text}")
        if not lines:
            return ToolResult("no matches")
        shown = _fitting(lines, SEARCH_MAX_CHARS)
        if capped or len(shown) < len(lines):
            shown.append(
                f"[stopped after {len(shown)} matches; there are more: {_narrower_search(matches, self.prefix)}]"
            )
        return ToolResult("\n".join(shown))


def validate_arguments(spec: ToolSpec, arguments) -> dict:
    """Check `arguments` against the shape of the tool's schema; return them with absent optionals dropped."""
    if not isinstance(arguments, dict):
        raise InvalidArguments("arguments must be a JSON object")
    properties = spec.parameters["properties"]
    required = spec.parameters["required"]
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        expected = ", ".join(properties) or "none"
        raise InvalidArguments(f"unknown argument(s) {', '.join(unknown)} (expected: {expected})")
    out = {}
    for name, schema in properties.items():
        value = arguments.get(name)
        # Some providers send null for an optional argument they leave out.
        if value is None:
            if name in required:
                raise InvalidArguments(f"missing argument {name!r}")
            continue
        out[name] = _coerce(name, value, schema)
    return out


def _coerce(name: str, value, schema: dict):
    kind = schema["type"]
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "integer" and not isinstance(value, bool):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int):
            if value < schema.get("minimum", value):
                raise InvalidArguments(f"argument {name!r} must be at least {schema['minimum']}")
            return value
    raise InvalidArguments(f"argument {name!r} must be of type {kind}, not {type(value).__name__}")


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_glob(glob: str, name: str) -> str:
    glob = glob.strip()
    while glob.startswith("./"):
        glob = glob[2:]
    if not glob or "\0" in glob or ".." in glob.split("/") or len(glob) > MAX_GLOB_CHARS:
        raise InvalidArguments(f"{name} {glob!r} must be a glob inside the repository, such as docs/**/*.md")
    try:
        compile_glob(glob)
    except ValueError as exc:
        raise InvalidArguments(str(exc)) from None
    return glob


def _fitting(lines: list[str], max_chars: int) -> list[str]:
    """The leading lines whose total length, newlines included, stays within `max_chars` (at least one)."""
    size = 0
    for count, line in enumerate(lines):
        size += len(line) + 1
        if size > max_chars and count:
            return lines[:count]
    return list(lines)


def _narrower_search(matches, prefix: str = "") -> str:
    paths = [match.path for match in matches]
    if len(set(paths)) == 1:
        return f"all in {paths[0]}; narrow the pattern, or read the file with {prefix}read_file"
    hints = ", ".join(f"path_glob={glob!r} ({count:,} of these)" for glob, count in _narrower(sorted(paths)))
    return f"search again with a narrower pattern or a path_glob, e.g. {hints}"


def _narrower(paths: list[str], start: int = 0) -> list[tuple[str, int]]:
    """Globs that split the sorted `paths[start:]` into smaller lists, with how many paths each holds, the largest
    first. Paths are grouped by the folder one level below the folder they all share; files directly in that
    folder are grouped by the shortest name prefix that splits them. Without a pass over each path: the folder
    they all share is the one the first and the last share, and each folder's paths are one run."""
    end = len(paths)
    first, last = paths[start].split("/")[:-1], paths[-1].split("/")[:-1]
    common = list(itertools.takewhile(lambda pair: pair[0] == pair[1], zip(first, last, strict=False)))
    base = "/".join(part for part, _ in common) + "/" if common else ""
    folders: list[tuple[str, int]] = []
    names: list[str] = []
    for name, first_index, after in entries_below(paths, base, start, end):
        if name.endswith("/"):
            folders.append((f"{base}{name}**", after - first_index))
        else:
            names.append(name)
    width = next((n for n in range(1, 9) if len({name[:n] for name in names}) > 1), 1)
    groups: Counter = Counter(dict(folders))
    groups.update(f"{base}{name[:width]}*" for name in names)
    return sorted(groups.items(), key=lambda item: (-item[1], item[0]))[:SUGGESTIONS]
