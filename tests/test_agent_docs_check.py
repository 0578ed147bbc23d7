"""The docs check on a real workspace: links, anchors, front matter and JSX tags in changed pages, and links
this run broke in pages it did not touch."""

import pytest

from service.agent.docs_check import DocsProblem, DocsReport, check_docs
from service.agent.docsite.pages import Link, Mode, parse_page
from service.agent.docsite.routing import Router, Verdict, join
from service.agent.docsite.site import DocsSite
from service.agent.docsite.tree import Tree
from service.workspace.git import Git
from tests.repositories import make_repository

FILES = {
    "README.md": "# Project\n\n[Docs](docs/index.md)\n",
    "docs/index.md": "# Docs\n\n[Install](install.md)\n[Old](gone.md)\n",
    "docs/install.md": "# Install\n\n## Steps\n",
    "docs/guide/index.mdx": "# Guide\n",
    "docs/guide/intro.md": "# Intro\n\n[Back](../index.md)\n",
    "docs/api/README.md": "# API\n",
    "docs/img/logo.png": b"\x89PNG\0",
    "docs/empty/notes.txt": "not an index\n",
    "docs/overview.md": "# Overview\n\nStart with [the guide](guide).\n",
}

GOOD_PAGE = """\
# New page

[intro as written](guide/intro.md) [no extension](guide/intro) [mdx folder](guide/) [readme folder](./api)
![logo](img/logo.png "Logo") [section](install.md#steps) [query](install.md?x=1) [parent](../README.md)
[external](https://example.com/x.md) [mail](mailto:docs@example.com) [anchor](#new-page) [site](/docs/install)
<a href="install.md">html</a> [spaces](<guide/intro.md> "title")

[ref]: guide/intro.md
```md
[in a fence](missing-in-fence.md)
```
Inline code `[x](missing-in-code.md)` is not a link.
"""


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    return make_repository(Git(), tmp_path_factory.mktemp("docs"), FILES)


def test_good_links_in_a_changed_page_pass(workspace):
    workspace.write("docs/new.md", GOOD_PAGE.encode())
    report = check_docs(workspace)
    assert report.problems == []
    assert report.pages_checked == 1
    # `/docs/install` is root-relative on a site whose routing is unknown: said once, not judged.
    assert report.to_text() == (
        "- note: links of the form `/x` are not checked: the site's routing is unknown\n"
        "docs check passed: 1 changed page(s), no problems found"
    )


def test_broken_relative_links_in_a_changed_page_are_found(workspace):
    workspace.write("docs/new.md", b"# New\n\n[a](instal.md) and <a href='empty/'>x</a>\n[up](../../../x.md)\n")
    workspace.write("docs/notes.txt", b"[not a page](nowhere.md)\n")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "docs/new.md", 3, "broken link: empty/ (the folder docs/empty has no index.md, index.mdx, README.md)"
        ),
        DocsProblem("docs/new.md", 3, "broken link: instal.md (no file docs/instal.md)"),
        DocsProblem("docs/new.md", 4, "link to ../../../x.md points outside the repository"),
    ]


def test_problems_already_in_an_edited_page_are_not_reported_new_ones_are(workspace):
    workspace.write("docs/index.md", FILES["docs/index.md"].replace("# Docs", "# Documentation").encode())
    assert check_docs(workspace).problems == []  # its old broken link to gone.md is not this run's doing
    workspace.write(
        "docs/index.md", FILES["docs/index.md"].replace("[Install]", "[Gone again](gone.md) [Install]").encode()
    )
    assert check_docs(workspace).problems == [
        DocsProblem("docs/index.md", 3, "broken link: gone.md (no file docs/gone.md)")
    ]


def test_links_to_a_deleted_page_from_unchanged_pages_are_found(workspace):
    workspace.delete("docs/install.md")
    report = check_docs(workspace)
    # docs/index.md's old broken link to gone.md is not this run's doing, so it is not reported.
    assert report.problems == [DocsProblem("docs/index.md", 3, "link to install.md, which this run moved or deleted")]
    assert report.to_text() == (
        "- `docs/index.md:3` link to install.md, which this run moved or deleted\n"
        "docs check failed: 1 problem(s) found, 0 changed page(s) checked"
    )


def test_moving_a_page_away_is_found_and_fixing_the_link_clears_it(workspace):
    workspace.move("docs/install.md", "docs/setup/install.md")
    assert check_docs(workspace).problems == [
        DocsProblem("docs/index.md", 3, "link to install.md, which this run moved or deleted")
    ]
    workspace.write("docs/index.md", workspace.read("docs/index.md").replace(b"(install.md)", b"(setup/install)"))
    # docs/index.md is now a changed page; its old broken link to gone.md was there before, so it is left be.
    assert check_docs(workspace).problems == []


def test_a_moved_page_is_checked_from_its_new_folder(workspace):
    workspace.move("docs/guide/intro.md", "docs/intro.md")
    assert check_docs(workspace).problems == [
        DocsProblem("docs/intro.md", 3, "broken link: ../index.md (no file index.md)")
    ]


def test_deleting_a_folder_index_breaks_links_to_the_folder(workspace):
    workspace.write("docs/links.md", b"[guide](guide/)\n")
    assert check_docs(workspace).problems == []
    workspace.delete("docs/guide/index.mdx")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "docs/links.md", 1, "broken link: guide/ (the folder docs/guide has no index.md, index.mdx, README.md)"
        ),
        DocsProblem("docs/overview.md", 3, "link to guide, which this run moved or deleted"),
    ]


def test_broken_anchors_in_a_changed_page_are_found(workspace):
    workspace.write(
        "docs/new.md",
        b"# New\n\n[a](install.md#step) [b](#missing) [c](install.md#Steps)\n"
        b"[d](#new) [e](guide/#guide) [f](install.md#:~:text=Run)\n",
    )
    assert check_docs(workspace).problems == [
        DocsProblem(
            "docs/new.md",
            3,
            "broken anchor: #missing (this page has no heading or id `missing`); link to an "
            "existing heading or remove the anchor",
        ),
        DocsProblem(
            "docs/new.md",
            3,
            "broken anchor: install.md#step (docs/install.md has no heading or id `step`); did you mean #steps?",
        ),
    ]


def test_anchors_of_pages_that_include_other_content_are_not_judged(open_workspace):
    workspace = open_workspace(
        {
            "api.md": "# API\n\n::: widgets.core\n",
            "_intro.mdx": "## Shared heading\n",
            "usage.mdx": "import Intro from './_intro.mdx'\n\n<Intro />\n",
        }
    )
    workspace.write("guide.md", b"[run](api.md#widgets.core.run) [shared](usage.mdx#shared-heading)\n")
    assert check_docs(workspace).problems == []


def test_renaming_a_heading_breaks_anchor_links_in_untouched_pages(open_workspace):
    workspace = open_workspace(
        {
            "install.md": "# Install\n\n## Steps\n",
            "ref.md": "# Ref\n\n[how](install.md#steps)\n",
            "other.md": "[unrelated](#steps)\n",
        }
    )
    workspace.write("install.md", b"# Install\n\n## Procedure\n")
    assert check_docs(workspace).problems == [
        DocsProblem(
            "ref.md",
            3,
            "link to install.md#steps: this run removed the anchor `steps` from install.md (a "
            "heading was renamed or deleted); point the link at the new heading",
        )
    ]


def test_bad_front_matter_and_unclosed_tags_in_changed_pages_are_found(workspace):
    workspace.write("docs/new.mdx", b"---\ntitle: Setup: the basics\n---\n\n<Note>\nRead this.\n")
    assert [(p.line, p.message.split(" (")[0].split(":")[0]) for p in check_docs(workspace).problems] == [
        (2, "front matter is not valid YAML"),
        (5, "<Note> is never closed"),
    ]


def test_old_problems_in_untouched_pages_are_not_reported(open_workspace):
    workspace = open_workspace(
        {"old.mdx": "---\ntitle: a: b\n---\n<Note>\n[x](gone.md) [y](#nope)\n", "new-home.md": "# Home\n"}
    )
    workspace.write("new-home.md", b"# Home\n\nUpdated.\n")
    report = check_docs(workspace)
    assert report.ok and report.to_text() == "docs check passed: 1 changed page(s), no problems found"


def test_links_come_from_the_parsed_page_not_code():
    links = parse_page(GOOD_PAGE, Mode.MARKDOWN).links
    targets = [link.target for link in links]
    assert "missing-in-fence.md" not in targets and "missing-in-code.md" not in targets
    assert "guide/intro.md" in targets and "install.md" in targets
    assert [link.line for link in links if link.target == "guide/intro.md"] == [3, 6]  # and the [ref] use: line 3


@pytest.mark.parametrize(
    "target, expected",
    [
        ("a.md", "docs/a.md"),
        ("./a.md", "docs/a.md"),
        ("../README.md", "README.md"),
        ("..", ""),
        ("../..", None),
    ],
)
def test_join(target, expected):
    assert join("docs", target) == expected


@pytest.mark.parametrize("target", ["https://x", "mailto:a@b", "//host/x", "", "{props.href}", "?q=1", "%00.md"])
def test_the_plain_router_skips_links_it_does_not_follow(workspace, target):
    router = Router(DocsSite("markdown", None, "docs"), Tree(workspace))
    assert router.resolve("docs/page.md", Link(1, target)).verdict is Verdict.SKIP


def test_the_plain_router_does_not_judge_root_relative_links(workspace):
    # How a site without a known framework is served is unknown: `/docs/install.md` may be a route or a file.
    router = Router(DocsSite("markdown", None, "docs"), Tree(workspace))
    for target in ("/docs/install.md#steps", "/docs/nope", "/install"):
        outcome = router.resolve("docs/guide/intro.md", Link(1, target))
        assert outcome.verdict is Verdict.UNKNOWN and "`/x`" in outcome.reason
    assert router.resolve("docs/guide/intro.md", Link(1, "../install.md#steps")).landing == "docs/install.md"
    assert router.resolve("docs/page.md", Link(1, "nope.md")).verdict is Verdict.BROKEN


def test_empty_report_text():
    assert DocsReport().ok


def test_links_with_an_anchor_the_source_lacks_are_still_reported_when_their_page_moves(open_workspace):
    # Modelled on a MkDocs Material site whose option anchors (`#config.blog_dir`) a hook adds at build time.
    workspace = open_workspace(
        {
            "mkdocs.yml": "site_name: S\n",
            "docs/plugins/blog.md": "# Blog\n\n## Settings\n",
            "docs/setup.md": "# Setup\n\nSet [the folder](plugins/blog.md#config.blog_dir).\n",
        }
    )
    assert check_docs(workspace).problems == []
    workspace.write("docs/plugins/blog.md", b"# Blog\n\n## Options\n")  # the hook's anchor was never a heading
    assert check_docs(workspace).problems == []
    workspace.move("docs/plugins/blog.md", "docs/reference/blog.md")
    assert check_docs(workspace).problems == [
        DocsProblem("docs/setup.md", 3, "link to plugins/blog.md#config.blog_dir, which this run moved or deleted")
    ]
