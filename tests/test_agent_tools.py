"""The agent's file tools on a real workspace: the sandbox, each tool's happy and error paths, the write limit."""

import logging
import threading

import pytest

from service import logcontext
from service.agent import tools
from service.agent.tools import TOOL_SPECS, ToolExecutor
from service.errors import RunFailed
from service.faults import STALL_IN_TOOL, Faults
from service.logcontext import ContextFilter
from service.runstop import RunStop, RunStopped, StopReason
from service.workspace.git import Git
from tests.repositories import call, make_repository

FILES = {
    "README.md": "# Project\n\nSee [the docs](docs/index.md).\n",
    "docs/index.md": "# Docs\n\n- [Install](install.md)\n- [Usage](usage.md)\n",
    "docs/install.md": "# Install\n\nRun `pip install thing`.\nThen run thing.\n",
    "docs/usage.md": "# Usage\n\nthing --help\nthing --help\n",
    "docs/logo.png": b"\x89PNG\r\n\x1a\n\0\0\0binary",
    ".github/workflows/ci.yml": "on: push\n",
    "ci/workflows/deploy.yml": "on: release\n",
}
LINKS = {"docs/latest.md": "install.md", "guides": "docs"}


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    return make_repository(Git(), tmp_path_factory.mktemp("tools"), FILES, symlinks=LINKS, submodules=["vendor/theme"])


@pytest.fixture
def executor(workspace):
    return ToolExecutor(workspace, max_bytes_written=10_000)


ESCAPES = [
    ("read_file", {"path": "../outside.md"}),
    ("read_file", {"path": "/etc/passwd"}),
    ("read_file", {"path": ".git/config"}),
    ("read_file", {"path": ".github/workflows/ci.yml"}),
    ("write_file", {"path": "../outside.md", "content": "x"}),
    ("write_file", {"path": "docs/../../outside.md", "content": "x"}),
    ("write_file", {"path": "/tmp/outside.md", "content": "x"}),
    ("write_file", {"path": ".git/config", "content": "x"}),
    ("write_file", {"path": ".git/hooks/pre-commit", "content": "x"}),
    ("write_file", {"path": ".github/workflows/x.yml", "content": "x"}),
    ("write_file", {"path": ".github/workflows/ci.yml", "content": "x"}),
    ("write_file", {"path": "docs/latest.md", "content": "x"}),  # the symlink entry itself
    ("write_file", {"path": "guides/new.md", "content": "x"}),  # under a symlinked folder
    ("write_file", {"path": "vendor/theme/x.css", "content": "x"}),  # inside a submodule
    ("write_file", {"path": "vendor/theme", "content": "x"}),
    ("write_file", {"path": "docs/install.md/x.md", "content": "x"}),
    ("edit_file", {"path": "docs/latest.md", "old": "a", "new": "b"}),
    ("edit_file", {"path": ".git/config", "old": "a", "new": "b"}),
    ("edit_file", {"path": "guides/install.md", "old": "Install", "new": "Setup"}),
    ("move_file", {"path": "docs/install.md", "new_path": "../install.md"}),
    ("move_file", {"path": "docs/install.md", "new_path": ".github/workflows/install.yml"}),
    ("move_file", {"path": "docs/install.md", "new_path": "guides/install2.md"}),
    ("move_file", {"path": "docs/latest.md", "new_path": "docs/latest2.md"}),
    ("move_file", {"path": ".github/workflows/ci.yml", "new_path": "ci.yml"}),
    ("delete_file", {"path": "docs/latest.md"}),
    ("delete_file", {"path": "vendor/theme"}),
    ("delete_file", {"path": ".github/workflows/ci.yml"}),
    ("delete_file", {"path": "../docs"}),
    ("delete_file", {"path": ".github"}),  # a folder holding workflow files
    ("move_file", {"path": ".github", "new_path": "github"}),
    ("move_file", {"path": "ci", "new_path": ".github"}),  # would create .github/workflows/deploy.yml
    ("delete_file", {"path": "guides"}),
    ("delete_file", {"path": "vendor"}),  # a folder holding a submodule
    ("move_file", {"path": "vendor", "new_path": "third_party"}),
    ("search", {"pattern": "x", "path_glob": "../*"}),
    ("search", {"pattern": "x", "path_glob": "docs/\0"}),
]


@pytest.mark.parametrize(
    "name, arguments", ESCAPES, ids=[f"{n}:{a.get('path', a.get('path_glob'))}" for n, a in ESCAPES]
)
def test_every_escape_attempt_is_a_tool_error_and_changes_nothing(executor, workspace, name, arguments):
    result = call(executor, name, **arguments)
    assert result.is_error, result.content
    assert result.content.startswith(f"{name} failed: ")
    assert workspace.changes() == {}
    assert executor.bytes_written == 0


def test_symlinks_are_reported_not_followed(executor):
    result = call(executor, "read_file", path="docs/latest.md")
    assert result.is_error
    assert "symlink" in result.content and "not followed" in result.content
    assert "Run `pip install" not in result.content


def test_tool_specs_are_json_schema_objects():
    assert [spec.name for spec in TOOL_SPECS] == [
        "list_files",
        "read_file",
        "search",
        "write_file",
        "edit_file",
        "move_file",
        "delete_file",
        "check_docs",
        "finish",
    ]
    for spec in TOOL_SPECS:
        assert spec.parameters["type"] == "object"
        assert spec.parameters["additionalProperties"] is False
        assert set(spec.parameters["required"]) <= set(spec.parameters["properties"])
        assert len(spec.description) > 40


# --- arguments -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, arguments, message",
    [
        ("read_file", {}, "missing argument 'path'"),
        ("read_file", {"path": "README.md", "lines": 3}, "unknown argument(s) lines"),
        ("read_file", {"path": 7}, "'path' must be of type string"),
        ("read_file", {"path": "README.md", "start_line": True}, "'start_line' must be of type integer"),
        ("read_file", {"path": "README.md", "start_line": "2"}, "'start_line' must be of type integer"),
        ("read_file", {"path": "README.md", "start_line": 0}, "at least 1"),
        ("search", {"pattern": "x", "ignore_case": "yes"}, "'ignore_case' must be of type boolean"),
        ("write_file", {"path": "a.md", "content": None}, "missing argument 'content'"),
        ("check_docs", {"verbose": True}, "unknown argument(s) verbose (expected: none)"),
    ],
)
def test_arguments_that_do_not_fit_the_schema_are_tool_errors(executor, workspace, name, arguments, message):
    result = call(executor, name, **arguments)
    assert result.is_error
    assert message in result.content
    assert workspace.changes() == {}


def test_arguments_not_an_object_and_unknown_tools_are_tool_errors(executor):
    from service.agent.model import ToolCall

    assert executor.execute(ToolCall("1", "read_file", "README.md")).is_error
    unknown = executor.execute(ToolCall("2", "run_shell", {"command": "ls"}))
    assert unknown.is_error and "unknown tool 'run_shell'" in unknown.content and "list_files" in unknown.content


def test_null_optional_arguments_and_integral_floats_are_accepted(executor):
    result = call(executor, "read_file", path="README.md", start_line=3.0, end_line=None)
    assert not result.is_error
    assert result.content.splitlines()[1].startswith("     3\t")


# --- list_files ----------------------------------------------------------------------------------------


def test_list_files_lists_everything_allowed_sorted(executor):
    listed = call(executor, "list_files").content.splitlines()
    assert listed == sorted(listed)
    assert "docs/install.md" in listed and "README.md" in listed
    assert "docs/latest.md" in listed and "vendor/theme" in listed  # reported, as what they are on read
    assert ".github/workflows/ci.yml" not in listed


def test_list_files_with_patterns(executor):
    assert call(executor, "list_files", pattern="*.md").content.splitlines() == [
        "README.md",
        "docs/index.md",
        "docs/install.md",
        "docs/latest.md",
        "docs/usage.md",
    ]
    assert call(executor, "list_files", pattern="docs/i*.md").content.splitlines() == [
        "docs/index.md",
        "docs/install.md",
    ]
    assert call(executor, "list_files", pattern="docs/").content.count("\n") == 4
    assert call(executor, "list_files", pattern="nothing/**").content == "no files match 'nothing/**'"


def test_list_files_includes_pending_changes(executor):
    call(executor, "write_file", path="docs/new.md", content="new\n")
    call(executor, "delete_file", path="docs/usage.md")
    listed = call(executor, "list_files", pattern="docs/*.md").content.splitlines()
    assert "docs/new.md" in listed and "docs/usage.md" not in listed


def test_list_files_caps_its_output(executor, monkeypatch):
    monkeypatch.setattr(tools, "LIST_LIMIT", 2)
    lines = call(executor, "list_files", pattern="*.md").content.splitlines()
    assert lines[:2] == ["README.md", "docs/index.md"]
    assert lines[2] == (
        "[3 more files not shown (of 5); list them with a narrower pattern: "
        "list_files(pattern='docs/i*') for 1, list_files(pattern='docs/l*') for 1, "
        "list_files(pattern='docs/u*') for 1]"
    )


# --- read_file -----------------------------------------------------------------------------------------


def test_read_file_numbers_lines(executor):
    result = call(executor, "read_file", path="./docs//install.md")
    assert not result.is_error
    assert result.content.splitlines() == [
        "docs/install.md (lines 1-4 of 4)",
        "     1\t# Install",
        "     2\t",
        "     3\tRun `pip install thing`.",
        "     4\tThen run thing.",
    ]


def test_read_file_line_range_and_cap(executor, monkeypatch):
    assert call(executor, "read_file", path="docs/install.md", start_line=3, end_line=3).content.splitlines() == [
        "docs/install.md (lines 3-3 of 4)",
        "     3\tRun `pip install thing`.",
    ]
    monkeypatch.setattr(tools, "READ_MAX_LINES", 2)
    capped = call(executor, "read_file", path="docs/install.md").content.splitlines()
    assert capped[0] == "docs/install.md (lines 1-2 of 4)"
    assert capped[-1] == "[more lines follow; call read_file with start_line=3 to read on]"


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"path": "docs/missing.md"}, "does not exist"),
        ({"path": "docs"}, "directory"),
        ({"path": "vendor/theme"}, "submodule"),
        ({"path": "docs/install.md", "start_line": 9}, "past the end"),
        ({"path": "docs/install.md", "start_line": 3, "end_line": 2}, "before start_line"),
    ],
)
def test_read_file_errors(executor, arguments, message):
    result = call(executor, "read_file", **arguments)
    assert result.is_error and message in result.content


def test_read_file_reports_binary_files(executor):
    result = call(executor, "read_file", path="docs/logo.png")
    assert not result.is_error
    assert result.content == "docs/logo.png is a binary file (17 bytes); its content is not shown"


# --- search --------------------------------------------------------------------------------------------


def test_search_finds_lines_in_tree_and_overlay(executor):
    call(executor, "write_file", path="docs/new.md", content="Install it\n")
    result = call(executor, "search", pattern=r"^# Inst|Install it")
    assert result.content.splitlines() == ["docs/install.md:1: # Install", "docs/new.md:1: Install it"]


def test_search_with_glob_and_case(executor):
    assert call(executor, "search", pattern="thing", path_glob="docs/usage.md").content.splitlines() == [
        "docs/usage.md:3: thing --help",
        "docs/usage.md:4: thing --help",
    ]
    assert call(executor, "search", pattern="^# project").content == "no matches"
    assert call(executor, "search", pattern="^# project", ignore_case=True).content == "README.md:1: # Project"
    assert call(executor, "search", pattern="push").content == "no matches"  # workflows stay hidden


def test_search_errors(executor):
    assert "regular expression" in call(executor, "search", pattern="(unclosed").content
    assert call(executor, "search", pattern="").is_error


# --- write_file, edit_file -----------------------------------------------------------------------------


def test_write_file_creates_and_replaces(executor, workspace):
    assert (
        call(executor, "write_file", path="docs/faq.md", content="# FAQ\n").content == "created docs/faq.md (6 bytes)"
    )
    assert (
        call(executor, "write_file", path="docs/usage.md", content="# Use\n").content
        == "replaced docs/usage.md (6 bytes)"
    )
    assert workspace.changes() == {"docs/faq.md": b"# FAQ\n", "docs/usage.md": b"# Use\n"}
    assert executor.bytes_written == 12


def test_write_file_onto_a_folder_is_an_error(executor, workspace):
    result = call(executor, "write_file", path="ci", content="x")
    assert result.is_error and "ci is a folder" in result.content
    assert workspace.changes() == {}


def test_edit_file_replaces_a_unique_occurrence(executor, workspace):
    result = call(executor, "edit_file", path="docs/install.md", old="pip install thing", new="pipx install thing")
    assert result.content == "edited docs/install.md at line 3"
    assert workspace.changes() == {"docs/install.md": b"# Install\n\nRun `pipx install thing`.\nThen run thing.\n"}
    assert executor.bytes_written == len("pipx install thing")


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"path": "docs/usage.md", "old": "thing --help", "new": "thing -h"}, "occurs 2 times"),
        ({"path": "docs/usage.md", "old": "aa", "new": "b"}, "not found"),
        ({"path": "docs/install.md", "old": "", "new": "x"}, "old is empty"),
        ({"path": "docs/install.md", "old": "Run", "new": "Run"}, "the same"),
        ({"path": "docs/logo.png", "old": "PNG", "new": "JPG"}, "binary"),
        ({"path": "docs/missing.md", "old": "a", "new": "b"}, "does not exist"),
    ],
)
def test_edit_file_errors(executor, workspace, arguments, message):
    result = call(executor, "edit_file", **arguments)
    assert result.is_error and message in result.content
    assert workspace.changes() == {}


def test_edit_file_counts_overlapping_occurrences(executor, workspace):
    call(executor, "write_file", path="a.md", content="aaa")
    result = call(executor, "edit_file", path="a.md", old="aa", new="b")
    assert result.is_error and "occurs" in result.content and "exactly once" in result.content
    assert workspace.changes() == {"a.md": b"aaa"}


# --- move_file, delete_file ----------------------------------------------------------------------------


def test_move_file(executor, workspace):
    assert (
        call(executor, "move_file", path="docs/usage.md", new_path="docs/guide/usage.md").content
        == "moved docs/usage.md to docs/guide/usage.md"
    )
    assert workspace.changes() == {"docs/usage.md": None, "docs/guide/usage.md": FILES["docs/usage.md"].encode()}


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"path": "docs/usage.md", "new_path": "docs/install.md"}, "already exists"),
        ({"path": "docs/missing.md", "new_path": "docs/x.md"}, "does not exist"),
        ({"path": "docs/usage.md", "new_path": "./docs/usage.md"}, "the same"),
    ],
)
def test_move_file_errors(executor, workspace, arguments, message):
    result = call(executor, "move_file", **arguments)
    assert result.is_error and message in result.content
    assert workspace.changes() == {}


def test_move_and_delete_whole_folders(executor, workspace):
    assert not call(executor, "move_file", path="ci", new_path="automation").is_error
    assert workspace.changes() == {"ci/workflows/deploy.yml": None, "automation/workflows/deploy.yml": b"on: release\n"}
    assert call(executor, "delete_file", path="automation/").content == "deleted automation"
    assert workspace.changes() == {"ci/workflows/deploy.yml": None}


def test_delete_file(executor, workspace):
    assert call(executor, "delete_file", path="docs/usage.md").content == "deleted docs/usage.md"
    assert workspace.changes() == {"docs/usage.md": None}
    again = call(executor, "delete_file", path="docs/usage.md")
    assert again.is_error and "does not exist" in again.content


# --- check_docs, finish --------------------------------------------------------------------------------


def test_check_docs_reports_as_text(executor):
    assert call(executor, "check_docs").content == "docs check passed: 0 changed page(s), no problems found"
    call(executor, "delete_file", path="docs/install.md")
    report = call(executor, "check_docs")
    assert not report.is_error
    assert report.content.splitlines() == [
        "- `docs/index.md:3` link to install.md, which this run moved or deleted",
        "docs check failed: 1 problem(s) found, 0 changed page(s) checked",
    ]


def test_finish_ends_the_run(executor):
    result = call(executor, "finish", title="  Fix install docs ", summary="Updated the install command.")
    assert not result.is_error
    assert (result.finish.title, result.finish.summary) == ("Fix install docs", "Updated the install command.")
    assert call(executor, "finish", title="", summary="No change needed.").finish.title is None
    empty = call(executor, "finish", title="T", summary="  ")
    assert empty.is_error and empty.finish is None
    assert call(executor, "finish", title="T", summary="S").finish.no_change_needed is False


def test_finish_with_no_change_needed_carries_the_reason(executor):
    result = call(
        executor, "finish", title="", summary=" The install page already covers pipx. ", no_change_needed=True
    )
    assert not result.is_error
    assert result.finish == tools.Finish(None, "The install page already covers pipx.", no_change_needed=True)
    unsaid = call(executor, "finish", title="", summary="", no_change_needed=True)
    assert unsaid.is_error and unsaid.finish is None and "why no change is needed" in unsaid.content
    wrong = call(executor, "finish", title="", summary="Fine as is.", no_change_needed="yes")
    assert wrong.is_error and "'no_change_needed' must be of type boolean" in wrong.content
    assert call(executor, "finish", title="T", summary="S", no_change_needed=None).finish.no_change_needed is False


def test_no_change_needed_after_changing_files_is_refused_until_they_are_undone(executor, workspace):
    call(executor, "edit_file", path="docs/install.md", old="pip install", new="pipx install")
    call(executor, "write_file", path="docs/new.md", content="# New\n")
    refused = call(executor, "finish", title="", summary="Nothing to do.", no_change_needed=True)
    assert refused.is_error and refused.finish is None
    assert "you changed 2 file(s): docs/install.md, docs/new.md" in refused.content
    assert "call finish without no_change_needed" in refused.content
    assert sorted(workspace.changes()) == ["docs/install.md", "docs/new.md"]  # nothing dropped
    # Undone (the edit reversed, the new file deleted), the same finish goes through.
    call(executor, "edit_file", path="docs/install.md", old="pipx install", new="pip install")
    call(executor, "delete_file", path="docs/new.md")
    assert workspace.changes() == {}
    assert call(executor, "finish", title="", summary="Nothing to do.", no_change_needed=True).finish is not None


def test_tool_schemas_are_valid_json_schema_and_finish_accepts_its_examples():
    from jsonschema import Draft202012Validator

    for spec in TOOL_SPECS:
        Draft202012Validator.check_schema(spec.parameters)
    finish = Draft202012Validator(tools.TOOLS_BY_NAME["finish"].parameters)
    assert finish.is_valid({"title": "", "summary": "Already covered.", "no_change_needed": True})
    assert finish.is_valid({"title": "Add a page", "summary": "Added it."})
    assert not finish.is_valid({"title": "", "summary": "x", "no_change_needed": "true"})


# --- the write limit -----------------------------------------------------------------------------------


def test_writing_past_the_byte_limit_fails_the_run_and_writes_nothing(workspace):
    executor = ToolExecutor(workspace, max_bytes_written=10)
    call(executor, "write_file", path="a.md", content="12345678")
    with pytest.raises(RunFailed) as caught:
        call(executor, "write_file", path="b.md", content="123")
    assert caught.value.code == "write_limit_exceeded"
    with pytest.raises(RunFailed):
        call(executor, "edit_file", path="a.md", old="1", new="abc")
    assert workspace.changes() == {"a.md": b"12345678"}
    assert executor.bytes_written == 8


# --- output caps: a cut result says how to get the rest ------------------------------------------------


@pytest.fixture
def roomy(workspace):
    return ToolExecutor(workspace, max_bytes_written=10_000_000)


def test_read_file_stops_at_the_line_cap_and_says_where_to_read_on(roomy, workspace):
    workspace.write("docs/long.md", "".join(f"line {n}\n" for n in range(1, 1001)).encode())
    lines = call(roomy, "read_file", path="docs/long.md").content.splitlines()
    assert lines[0] == f"docs/long.md (lines 1-{tools.READ_MAX_LINES} of 1000)"
    assert lines[-1] == f"[more lines follow; call read_file with start_line={tools.READ_MAX_LINES + 1} to read on]"
    assert len(lines) == tools.READ_MAX_LINES + 2
    last = call(roomy, "read_file", path="docs/long.md", start_line=901).content.splitlines()
    assert last[0] == "docs/long.md (lines 901-1000 of 1000)" and last[-1] == "  1000\tline 1000"


def test_read_file_stops_at_the_character_cap_and_says_where_to_read_on(roomy, workspace):
    workspace.write("docs/wide.md", ("x" * 1_000 + "\n").encode() * 100)
    result = call(roomy, "read_file", path="docs/wide.md").content
    assert len(result) <= tools.READ_MAX_CHARS + 200
    shown = result.splitlines()[-2].split("\t")[0].strip()
    assert result.splitlines()[-1] == f"[more lines follow; call read_file with start_line={int(shown) + 1} to read on]"
    assert int(shown) < 100


def test_list_files_over_the_cap_suggests_narrower_patterns(roomy, workspace):
    for n in range(450):
        workspace.write(f"src/core/m{n:03}.py", b"x\n")
    for n in range(150):
        workspace.write(f"src/web/v{n:03}.py", b"x\n")
    lines = call(roomy, "list_files", pattern="src").content.splitlines()
    assert len(lines) == tools.LIST_LIMIT + 1
    assert lines[-2] == "src/web/v049.py"  # sorted: src/core/* (450), then the first 50 of src/web
    assert lines[-1] == (
        "[100 more files not shown (of 600); list them with a narrower pattern: "
        "list_files(pattern='src/web/v0*') for 50, list_files(pattern='src/web/v1*') for 50]"
    )
    everything = call(roomy, "list_files").content.splitlines()
    assert everything[-1].startswith("[") and "list_files(pattern='src/**')" in everything[-1]
    assert len("\n".join(everything)) <= tools.LIST_MAX_CHARS + 500


def test_search_over_the_cap_says_so_and_suggests_a_path_glob(roomy, workspace):
    for folder in ("guides", "reference"):
        for n in range(15):
            workspace.write(f"docs/{folder}/p{n:02}.md", "".join(f"term {k}\n" for k in range(10)).encode())
    lines = call(roomy, "search", pattern="^term").content.splitlines()
    assert len(lines) == tools.SEARCH_LIMIT + 1
    assert lines[-1] == (
        f"[stopped after {tools.SEARCH_LIMIT} matches; there are more: search again with a "
        "narrower pattern or a path_glob, e.g. path_glob='docs/guides/**' (150 of these), "
        "path_glob='docs/reference/**' (50 of these)]"
    )


def test_search_over_the_cap_in_one_file_points_at_the_file(roomy, workspace):
    workspace.write("docs/many.md", "".join(f"term {n}\n" for n in range(300)).encode())
    lines = call(roomy, "search", pattern="^term").content.splitlines()
    assert lines[-1] == (
        f"[stopped after {tools.SEARCH_LIMIT} matches; there are more: all in docs/many.md; "
        "narrow the pattern, or read the file with read_file]"
    )


def test_search_stops_at_the_character_cap(roomy, workspace):
    workspace.write("docs/wide.md", ("term " + "y" * 400 + "\n").encode() * 150)
    content = call(roomy, "search", pattern="^term").content
    lines = content.splitlines()
    assert len(content) <= tools.SEARCH_MAX_CHARS + 300
    assert len(lines) - 1 < 150 and lines[-1].startswith(f"[stopped after {len(lines) - 1} matches; there are more")
    assert all(line.endswith(" [...]") for line in lines[:-1])  # each long line clipped too


def test_check_docs_report_is_capped_with_a_note_and_keeps_its_last_line(roomy, workspace):
    from service.agent.docs_check import check_docs

    links = "".join(f"- [missing {n}](missing-page-number-{n}.md)\n" for n in range(600))
    call(roomy, "write_file", path="docs/broken.md", content=links)
    full = check_docs(workspace).to_text().splitlines()
    assert len(full) == 601
    lines = call(roomy, "check_docs").content.splitlines()
    assert len("\n".join(lines)) <= tools.REPORT_MAX_CHARS
    shown = len(lines) - 2
    assert 10 < shown < 600 and lines[:shown] == full[:shown]
    assert lines[-2] == (
        f"[{600 - shown} more line(s) of this report not shown; fix these problems and run "
        "check_docs again to see the rest]"
    )
    assert lines[-1] == full[-1]


def test_search_with_exactly_the_cap_of_matches_has_no_note(roomy, workspace):
    workspace.write("docs/exact.md", "".join(f"term {n}\n" for n in range(tools.SEARCH_LIMIT)).encode())
    lines = call(roomy, "search", pattern="^term").content.splitlines()
    assert len(lines) == tools.SEARCH_LIMIT and lines[-1] == f"docs/exact.md:{tools.SEARCH_LIMIT}: term 199"


def test_a_file_past_the_size_limit_is_read_in_ranges_but_never_loaded_or_edited(tmp_path):
    big = "".join(f"entry {n}\n" for n in range(1, 200_001))  # ~1.9 MB
    repository = make_repository(Git(), tmp_path, {"docs/big.md": big, "docs/a.md": "entry 7\n"})
    with repository.open() as workspace:
        workspace.max_file_bytes = 64 * 1024  # what COPYDESK_MAX_FILE_BYTES sets; tests lower it
        executor = ToolExecutor(workspace, max_bytes_written=10_000)
        text = call(executor, "read_file", path="docs/big.md", start_line=199_999).content
        assert text.splitlines() == [
            "docs/big.md (lines 199999-200000 of 200000)",
            "199999\tentry 199999",
            "200000\tentry 200000",
        ]
        for tool, args in (
            ("edit_file", {"old": "entry 5\n", "new": "entry five\n"}),
            ("move_file", {"new_path": "b.md"}),
        ):
            refused = call(executor, tool, path="docs/big.md", **args)
            assert refused.is_error and "more than the 65,536-byte limit" in refused.content
        # Search skips it (and says nothing of it): the small file still answers.
        assert call(executor, "search", pattern="^entry 7$").content == "docs/a.md:1: entry 7"
        assert workspace.changes() == {}


def test_binary_files_are_reported_as_binary_with_their_size(executor):
    result = call(executor, "read_file", path="docs/logo.png")
    assert (
        not result.is_error and result.content == "docs/logo.png is a binary file (17 bytes); its content is not shown"
    )


def test_a_very_long_line_is_cut_and_measured(executor, workspace):
    workspace.write("docs/wide.md", b"x" * 50_000 + b"\nsecond\n")
    lines = call(executor, "read_file", path="docs/wide.md").content.splitlines()
    assert lines[1] == "     1\t" + "x" * tools.LINE_MAX_CHARS + f" [... {50_000 - tools.LINE_MAX_CHARS} more bytes]"
    assert lines[2] == "     2\tsecond"


@pytest.mark.parametrize(
    "tool, args",
    [
        ("write_file", {"path": ".gitmodules", "content": '[submodule "x"]\n\turl = --upload-pack=touch /tmp/p\n'}),
        ("write_file", {"path": "docs/.gitattributes", "content": "* filter=evil\n"}),
        ("move_file", {"path": "docs/install.md", "new_path": ".gitattributes"}),
    ],
)
def test_files_that_change_how_git_treats_the_repository_are_read_only(executor, tool, args):
    result = call(executor, tool, **args)
    assert result.is_error and "changes how git treats the repository" in result.content


@pytest.mark.parametrize(
    "name, arguments, message",
    [
        (
            "write_file",
            {"path": "docs/new.md", "content": "x\ud800"},
            "an internal error stopped it (UnicodeEncodeError",
        ),
        ("edit_file", {"path": "docs/install.md", "old": "Install", "new": "\ud800"}, "an internal error stopped it"),
        ("write_file", {"path": "docs/\ud800.md", "content": "x"}, "not valid Unicode text"),
        ("read_file", {"path": "docs/\udfff.md"}, "not valid Unicode text"),
        ("move_file", {"path": "docs/install.md", "new_path": "docs/\ud800.md"}, "not valid Unicode text"),
        ("search", {"pattern": "a\ud800"}, "the pattern is not valid Unicode text"),
        ("search", {"pattern": "a", "path_glob": "docs/\ud800*"}, "surrogates not allowed"),
        ("finish", {"title": "Add", "summary": "Added \ud800"}, "summary is not valid Unicode text"),
    ],
    ids=["content", "edit", "write-path", "read-path", "move-path", "pattern", "glob", "summary"],
)
def test_lone_surrogates_in_any_argument_are_tool_errors(executor, workspace, name, arguments, message):
    result = call(executor, name, **arguments)
    assert result.is_error and result.content.startswith(f"{name} failed: ") and message in result.content, result
    assert result.finish is None
    assert workspace.changes() == {}


def test_an_unexpected_error_inside_a_tool_is_logged_with_the_job_and_its_traceback(executor, caplog):
    caplog.set_level(logging.ERROR)
    caplog.handler.addFilter(ContextFilter())
    with logcontext.job("job_surrogate"):
        result = call(executor, "write_file", path="docs/new.md", content="x\ud800")
    assert result.is_error
    [record] = [r for r in caplog.records if r.name == "service.agent.tools"]
    assert "write_file tool failed unexpectedly" in record.getMessage()
    assert record.job_id == "job_surrogate"
    assert record.exc_info and record.exc_info[0] is UnicodeEncodeError


def test_a_stop_inside_a_tool_is_never_turned_into_a_tool_error(workspace):
    stop = RunStop()
    executor = ToolExecutor(workspace, max_bytes_written=10_000, stop=stop, faults=Faults(frozenset({STALL_IN_TOOL})))
    cancel = threading.Timer(0.3, stop.request, [StopReason.CANCELLED])
    cancel.start()
    try:
        with stop.watch([], tick_seconds=0.05), stop.interruptible(), pytest.raises(RunStopped):
            call(executor, "search", pattern="Install")
    finally:
        cancel.cancel()
    assert stop.reason is StopReason.CANCELLED
