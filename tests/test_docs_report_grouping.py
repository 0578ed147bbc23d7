"""The docs check's report stays readable and bounded when one edit breaks thousands of links: problems of one
kind in one file share a line with their count, and the check of such a move stays fast."""

import time

from service.agent.docs_check import check_docs
from service.agent.docs_report import DocsProblem, DocsReport
from service.agent.model import ToolCall
from service.agent.tools import REPORT_MAX_CHARS, ToolExecutor

PAGES = 300
LINKS_PER_PAGE = 7  # 2,100 links to the hub in all


def _site() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "mkdocs.yml": "site_name: S\n",
        "docs/index.md": "# Home\n",
        "docs/hub.md": "# Hub\n\n## Details\n",
    }
    for i in range(PAGES):
        body = "".join(
            f"Line {n} links [the hub](hub.md) and [its details](hub.md#details).\n\n" for n in range(LINKS_PER_PAGE)
        )
        files[f"docs/page-{i}.md"] = f"# Page {i}\n\n{body}See [home](index.md).\n"
    return files


def test_a_move_that_breaks_thousands_of_links_is_reported_per_file_with_counts(open_workspace):
    workspace = open_workspace(_site())
    workspace.move("docs/hub.md", "docs/guide/hub.md")
    started = time.perf_counter()
    report = check_docs(workspace)
    seconds = time.perf_counter() - started
    assert len(report.problems) == PAGES * LINKS_PER_PAGE * 2
    lines = report.to_text().splitlines()
    per_file = [line for line in lines if line.startswith("- `docs/page-7.md`")]
    assert per_file == [
        "- `docs/page-7.md`: 14 links to `docs/hub.md` (moved; now `docs/guide/hub.md`), "
        "lines 3, 5, 7, 9, 11, … (+2 more)"
    ]
    assert lines[0] == (
        "- in all: 4,200 links to `docs/hub.md` (moved; now `docs/guide/hub.md`) in 300 files; per file below"
    )
    assert len(lines) == 1 + PAGES + 1  # the summary, a line per file, the verdict
    assert lines[-1] == "docs check failed: 4200 problem(s) found, 1 changed page(s) checked"
    # Generous: the whole check of this move takes well under a second on an idle machine.
    assert seconds < 30, seconds


def test_the_tool_result_keeps_the_summary_and_verdict_within_its_bound(open_workspace):
    workspace = open_workspace(_site())
    workspace.move("docs/hub.md", "docs/guide/hub.md")
    text = ToolExecutor(workspace, max_bytes_written=10**6).execute(ToolCall("c1", "check_docs", {})).content
    assert len(text) <= REPORT_MAX_CHARS
    assert text.splitlines()[0].startswith("- in all: 4,200 links to `docs/hub.md`")
    assert text.splitlines()[-1].startswith("docs check failed: 4200 problem(s)")


def test_identical_problems_in_one_file_share_a_line_and_single_ones_keep_theirs():
    problems = [
        DocsProblem("a.md", 9, "broken link: x.md (no file x.md)"),
        DocsProblem("a.md", 2, "broken link: x.md (no file x.md)"),
        DocsProblem("a.md", 4, "broken link: y.md (no file y.md)"),
        DocsProblem("b.md", 1, "broken link: x.md (no file x.md)"),
    ]
    assert DocsReport(problems, pages_checked=2).to_text().splitlines() == [
        "- `a.md`: broken link: x.md (no file x.md) (2 times, lines 2, 9)",
        "- `a.md:4` broken link: y.md (no file y.md)",
        "- `b.md:1` broken link: x.md (no file x.md)",
        "docs check failed: 4 problem(s) found, 2 changed page(s) checked",
    ]


def test_kinds_group_different_messages_and_deleted_pages_say_so(open_workspace):
    workspace = open_workspace(
        {
            "docs/index.md": "# Home\n\n[a](gone.md) [b](gone.md#x)\n\n[c](./gone.md)\n",
            "docs/gone.md": "# Gone\n\n## X\n",
        }
    )
    workspace.delete("docs/gone.md")
    assert check_docs(workspace).to_text().splitlines() == [
        "- `docs/index.md`: 3 links to `docs/gone.md` (deleted), lines 3, 5",
        "docs check failed: 3 problem(s) found, 0 changed page(s) checked",
    ]


def test_the_report_text_is_bounded_for_the_pull_request_too():
    problems = [DocsProblem(f"docs/p{i}.md", 3, f"broken link: x{i}.md (no file docs/x{i}.md)") for i in range(3000)]
    text = DocsReport(problems, pages_checked=3000).to_text(REPORT_MAX_CHARS)
    lines = text.splitlines()
    assert len(text) <= REPORT_MAX_CHARS
    assert lines[-1] == "docs check failed: 3000 problem(s) found, 3000 changed page(s) checked"
    shown = len(lines) - 2
    assert lines[-2] == (
        f"[{3000 - shown:,} more line(s) of this report not shown; fix these problems and run "
        "check_docs again to see the rest]"
    )
    assert len(DocsReport(problems).to_text()) > REPORT_MAX_CHARS  # unbounded when not asked
