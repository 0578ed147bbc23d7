"""Material for MkDocs' blog plugin: posts need no `nav:` entry, the pages it generates are not judged, and the
front matter a post needs for the build (date, known authors, allowed categories) is checked; a small site
modelled on a Material site with a blog."""

from service.agent.docs_check import check_docs
from service.agent.docsite.detect import detect_site

CONFIG = """site_name: Tool
theme:
  name: material
plugins:
  - search
  - blog:
      post_dir: "{blog}/articles"
      categories_allowed:
        - General
        - Releases
nav:
  - index.md
  - Blog:
    - blog/index.md
"""

SITE = {
    "mkdocs.yml": CONFIG,
    "docs/index.md": "# Tool\n\nRead the [blog](blog/index.md).\n",
    "docs/blog/index.md": "# Blog\n",
    "docs/blog/.authors.yml": "authors:\n  ada:\n    name: Ada\n    avatar: https://example.com/a.png\n",
    "docs/blog/articles/hello.md": (
        "---\ndate: 2024-01-31\nauthors: [ada]\ncategories:\n  - General\n---\n\n# Hello\n\nFirst post.\n"
    ),
}


def test_a_new_post_in_the_sites_style_passes(open_workspace):
    workspace = open_workspace(SITE)
    site = detect_site(workspace)
    assert "docs/blog/articles/" in site.nav_hint
    workspace.write(
        "docs/blog/articles/second.md",
        (
            b"---\ndate:\n  created: 2024-02-02\nauthors:\n  - ada\ncategories:\n  - Releases\n---\n\n# Second\n\n"
            b"After [the first](hello.md), see [all releases](../category/releases/), [2024](../archive/2024/), "
            b"[Ada](../author/ada/) and [older posts](../page/2/).\n"
        ),
    )
    report = check_docs(workspace, site)
    assert report.problems == []  # not an orphan: the plugin lists posts
    assert any("blog plugin generates" in note for note in report.notes)


def test_post_metadata_the_build_needs_is_checked(open_workspace):
    workspace = open_workspace(SITE)
    workspace.write(
        "docs/blog/articles/bad.md",
        (b"---\ntitle: Bad\nauthors: [ada, bob]\ncategories: [Gossip]\n---\n\n# Bad\n\n[gone](nope.md)\n"),
    )
    assert sorted((p.line, p.message) for p in check_docs(workspace).problems) == [
        (
            1,
            "blog post without a valid `date` in its front matter (the blog plugin stops the build): add e.g. "
            "`date: 2024-01-31`",
        ),
        (3, "blog post author `bob` is not defined in docs/blog/.authors.yml (the blog plugin stops the build)"),
        (4, "blog post category `Gossip` is not in the plugin's `categories_allowed`"),
        (9, "broken link: nope.md (no file docs/blog/articles/nope.md)"),
    ]


def test_an_existing_posts_old_problems_are_not_this_runs(open_workspace):
    site_files = dict(SITE, **{"docs/blog/articles/old.md": "---\nauthors: [zed]\n---\n\n# Old\n"})
    workspace = open_workspace(site_files)
    workspace.write("docs/blog/articles/old.md", b"---\nauthors: [zed]\n---\n\n# Old post\n")
    assert check_docs(workspace).problems == []


def test_pages_outside_the_posts_still_need_a_nav_entry(open_workspace):
    workspace = open_workspace(SITE)
    workspace.write("docs/blog/about.md", b"# About the blog\n\n[link](../missing/)\n")
    messages = sorted(p.message for p in check_docs(workspace).problems)
    assert messages == [
        "broken link: ../missing/ (no file docs/missing)",
        "new page is not in the navigation, so readers cannot find it: add `- Title: blog/about.md` "
        "to `nav:` in mkdocs.yml",
    ]


def test_a_posts_links_metadata_names_pages_from_the_docs_folder(open_workspace):
    site_files = dict(
        SITE,
        **{
            "docs/setup.md": "# Setup\n",
            "docs/blog/articles/links.md": (
                "---\ndate: 2024-03-01\nlinks:\n  - setup.md\n  - Start: index.md#tool\n  - More:\n    - setup.md\n---\n\n"
                "# Links\n"
            ),
        },
    )
    workspace = open_workspace(site_files)
    site = detect_site(workspace)
    workspace.move("docs/setup.md", "docs/guides/setup.md")
    problems = sorted(
        (p.path, p.line, p.message) for p in check_docs(workspace, site).problems if p.path.startswith("docs/blog/")
    )
    assert problems == [("docs/blog/articles/links.md", 4, "link to /setup.md, which this run moved or deleted")]
    workspace.write("docs/blog/articles/new.md", b"---\ndate: 2024-03-02\nlinks:\n  - nope.md\n---\n\n# New\n")
    assert any(
        p.path == "docs/blog/articles/new.md" and p.message.startswith("broken link: /nope.md")
        for p in check_docs(workspace, site).problems
    )


# --- the meta plugin: `.meta.yml` defaults merged into a post's front matter -------------------------------------

META_SITE = dict(
    SITE,
    **{
        "mkdocs.yml": CONFIG.replace("  - search\n", "  - search\n  - meta\n"),
        # A folder-wide date and author, as a series of posts by one writer would set them.
        "docs/blog/articles/series/.meta.yml": "date: 2024-04-01\nauthors:\n  - ada\ncategories:\n  - Releases\n",
        "docs/blog/.meta.yml": "hide:\n  - feedback\n",
    },
)


def test_a_post_gets_date_authors_and_categories_from_meta_files(open_workspace):
    workspace = open_workspace(META_SITE)
    workspace.write("docs/blog/articles/series/part-1.md", b"---\ncategories: [General]\n---\n\n# Part 1\n")
    assert check_docs(workspace).problems == []


def test_meta_file_values_are_checked_as_the_posts_own(open_workspace):
    files = dict(META_SITE)
    files["docs/blog/articles/series/.meta.yml"] = "date: 2024-04-01\nauthors: [grace]\ncategories: [Gossip]\n"
    workspace = open_workspace(files)
    workspace.write("docs/blog/articles/series/part-2.md", b"---\nauthors: [ada]\n---\n\n# Part 2\n")
    assert sorted(p.message for p in check_docs(workspace).problems) == [
        "blog post author `grace` is not defined in docs/blog/.authors.yml (the blog plugin stops the build)",
        "blog post category `Gossip` is not in the plugin's `categories_allowed`",
    ]


def test_meta_files_count_only_with_the_meta_plugin(open_workspace):
    files = dict(META_SITE, **{"mkdocs.yml": CONFIG})
    workspace = open_workspace(files)
    workspace.write("docs/blog/articles/series/part-1.md", b"---\ncategories: [General]\n---\n\n# Part 1\n")
    assert [p.message.split(" (")[0] for p in check_docs(workspace).problems] == [
        "blog post without a valid `date` in its front matter"
    ]
