"""Hostile repository files meet the docs check: each is reported as too large or too complex, quickly, and
nothing escapes as a crash (issue 9)."""

import logging
import time

import pytest

from service import logcontext
from service.agent import docs_check
from service.agent.docs_check import check_docs
from service.agent.docsite.detect import detect_site
from service.agent.docsite.limits import MAX_PAGE_BYTES
from service.agent.tools import ToolExecutor
from service.logcontext import ContextFilter
from tests.hostile_fixtures import finish, run_job, step
from tests.hostile_repos import ALIAS_BOMB, CYCLIC_NAV, DEEP, DEEP_NAV
from tests.repositories import call


def _mkdocs(config: str) -> dict:
    return {"mkdocs.yml": config, "docs/index.md": "# Home\n\n[Guide](guide.md)\n", "docs/guide.md": "# Guide\n"}


def _timed_check(workspace, limit: float = 10.0):
    started = time.monotonic()
    report = check_docs(workspace)
    assert time.monotonic() - started < limit
    return report


def test_the_alias_bomb_is_small():
    assert len(ALIAS_BOMB) < 1024


@pytest.mark.parametrize(
    "config, reason",
    [
        (ALIAS_BOMB, "its aliases expand to more than 200,000 entries"),
        (CYCLIC_NAV, "an alias refers to the list or mapping that contains it"),
        (DEEP_NAV, "nested deeper than 100 levels"),
    ],
)
def test_hostile_mkdocs_configs_are_reported_not_walked(open_workspace, config, reason):
    workspace = open_workspace(_mkdocs(config))
    site = detect_site(workspace)  # detection survives it too
    workspace.write("docs/guide.md", b"# Guide\n\nOne more word.\n")
    report = _timed_check(workspace)
    assert site.framework == "mkdocs"
    assert [(p.path, p.message) for p in report.problems] == [
        ("mkdocs.yml", f"mkdocs.yml is too complex to check ({reason}), so the navigation was not checked")
    ]


def test_deep_json_and_js_navigation_files_are_reported(open_workspace):
    workspace = open_workspace(
        {
            "docs.json": '{"navigation": {"pages": ["index", ' + "[" * DEEP + "]" * DEEP + "]}}\n",
            "index.mdx": "# Home\n",
        }
    )
    workspace.write("index.mdx", b"# Home\n\nMore.\n")
    [problem] = _timed_check(workspace).problems
    assert (problem.path, problem.message) == (
        "docs.json",
        "docs.json is too complex to check (nested deeper than 100 levels), so the navigation was not checked",
    )
    workspace = open_workspace(
        {
            "docusaurus.config.js": "module.exports = {presets: [['classic', {docs: {sidebarPath: './sidebars.js'}}]]};",
            "sidebars.js": "module.exports = {docs: " + "[" * DEEP + "]" * DEEP + "};\n",
            "docs/intro.md": "# Intro\n",
        }
    )
    workspace.write("docs/intro.md", b"# Intro\n\nMore.\n")
    [problem] = _timed_check(workspace).problems
    assert (problem.path, problem.message) == (
        "sidebars.js",
        "sidebars.js is too complex to check (literals nested deeper than 100 levels), so the "
        "navigation was not checked",
    )


def test_hostile_pages_are_reported_as_too_large_or_too_complex(open_workspace):
    workspace = open_workspace({"docs/index.md": "# Home\n"})
    workspace.write("docs/deep.mdx", ("# Deep\n\n<Card data=" + "{" * DEEP + "}" * DEEP + " />\n").encode())
    workspace.write("docs/brackets.md", ("# Brackets\n\n" + "[" * DEEP + "x" + "]" * DEEP + "\n").encode())
    workspace.write("docs/big.md", b"# Big\n\n" + b"word " * (MAX_PAGE_BYTES // 5 + 10))
    workspace.write("docs/bomb.md", ("---\n" + ALIAS_BOMB + "---\n# Bomb\n").encode())
    problems = {p.path: p.message for p in _timed_check(workspace).problems}
    assert problems["docs/deep.mdx"] == (
        "this page is too complex to check (JSX expressions nested deeper than 100 levels); its links were not checked"
    )
    assert problems["docs/big.md"].startswith("this page is too large to check (2,000,")
    assert problems["docs/bomb.md"].startswith("front matter is too complex to check (its aliases expand")
    assert "docs/brackets.md" not in problems  # nested brackets are just text to a CommonMark parser


def test_an_error_inside_the_check_is_a_tool_error_logged_with_the_job(open_workspace, monkeypatch, caplog):
    workspace = open_workspace({"docs/index.md": "# Home\n"})
    workspace.write("docs/index.md", b"# Home\n\n[x](y.md)\n")

    def broken_router(site, tree):
        raise RuntimeError("a bug in a router")

    monkeypatch.setattr(docs_check, "make_router", broken_router)
    caplog.set_level(logging.ERROR)
    caplog.handler.addFilter(ContextFilter())
    with logcontext.job("job_hostile"):
        result = call(ToolExecutor(workspace, max_bytes_written=10_000), "check_docs")
    assert result.is_error
    assert result.content.startswith("docs check could not finish: an internal error stopped the check (RuntimeError)")
    [record] = [r for r in caplog.records if r.name == "service.agent.docs_check"]
    assert record.exc_info and "the docs check failed" in record.getMessage()
    assert record.job_id == "job_hostile"


def test_a_run_on_a_repository_with_an_alias_bomb_completes_and_says_what_it_could_not_check(
    stack_factory, tmp_path, register
):
    stack = stack_factory(max_steps=20)
    project = register(stack, tmp_path, "bomb", _mkdocs(ALIAS_BOMB))
    started = time.monotonic()
    job = run_job(
        stack,
        [step("write_file", path="docs/new.md", content="# New\n\n[Guide](guide.md)\n"), step("check_docs"), finish()],
        project,
    )
    assert time.monotonic() - started < 60
    assert job["status"] == "completed", job
    [pull] = stack.ctx.local.pulls(project)
    assert (
        "mkdocs.yml is too complex to check (its aliases expand to more than 200,000 entries), so the "
        "navigation was not checked" in pull.body
    )
