"""Hugo by its own rules, on small sites modelled on real ones (a Docsy-style multilingual docs site): content
folders per language, `_index.md` sections, leaf bundles, front-matter `slug`/`url`/`aliases` (YAML and TOML),
`static/`, menus, and routes served by the theme that the check does not know."""

from service.agent.docs_check import check_docs
from service.agent.docsite.detect import detect_site


def messages(report) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in report.problems]


HUGO_TOML = """\
baseURL = "https://gadget.example.org/"
title = "Gadget"
defaultContentLanguage = "en"
enableGitInfo = true

[languages.en]
languageName = "English"
contentDir = "content/en"
weight = 1

[languages.ja]
languageName = "日本語"
contentDir = "content/ja"
weight = 2

[[menu.main]]
name = "Documentation"
pageRef = "/docs"
weight = 10

[[menu.main]]
name = "Blog"
url = "/blog/"
weight = 20

[permalinks]
blog = "/:year/:month/:slug/"

[module]
[[module.imports]]
path = "github.com/google/docsy"
"""

HUGO = {
    "hugo.toml": HUGO_TOML,
    "config.yaml": "# Only checks the Hugo version of module builds; hugo.toml is the config.\nmodule:\n"
    "  hugoVersion:\n    min: 0.120.0\n",
    "content/en/_index.md": "---\ntitle: Gadget\n---\n\n{{< blocks/cover >}}\n[Start](/docs/getting-started/)\n",
    "content/en/docs/_index.md": "---\ntitle: Documentation\nweight: 20\n---\n\nBegin with "
    "[installing](getting-started/install/).\n",
    "content/en/docs/getting-started/_index.md": "---\ntitle: Getting started\n---\n",
    "content/en/docs/getting-started/install.md": "---\ntitle: Install\nweight: 1\n---\n\n## Prerequisites\n\n"
    "Read [the overview](/docs/concepts/intro/) first.\n",
    "content/en/docs/concepts/overview.md": '+++\ntitle = "Overview"\nslug = "intro"\n'
    'aliases = ["/docs/overview/"]\n+++\n\n## Architecture\n\n'
    "![arch](/images/arch.png) [install](/docs/getting-started/install/"
    "#prerequisites)\n",
    "content/en/docs/reference/cli/index.md": "---\ntitle: CLI\n---\n\n![flow](diagram.png) [tags](/tags/cli/)\n",
    "content/en/docs/reference/cli/diagram.png": b"\x89PNG\0",
    "content/en/about.md": "---\ntitle: About\nurl: /about-us/\n---\n",
    "content/en/blog/2024/release.md": "---\ntitle: Release\n---\n",
    "content/ja/docs/_index.md": "---\ntitle: ドキュメント\n---\n\n[インストール](/ja/docs/getting-started/install/)\n",
    "content/ja/docs/getting-started/install.md": "---\ntitle: インストール\n---\n",
    "static/images/arch.png": b"\x89PNG\0",
    "layouts/partials/hooks/head-end.html": "<!-- theme hook -->\n",
}


def test_hugo_is_detected_with_the_default_language_content_folder(open_workspace):
    site = detect_site(open_workspace(HUGO))
    assert (site.framework, site.config_path, site.docs_root) == ("hugo", "hugo.toml", "content/en")
    assert [(lang.code, lang.folder) for lang in site.languages] == [("en", "content/en"), ("ja", "content/ja")]
    assert not site.explicit_nav
    text = site.describe()
    assert text.startswith("Docs site: Hugo (detected from hugo.toml).") and "no navigation file" not in text
    assert len(text) < 800  # the system prompt's paragraph stays short


def test_hugo_a_new_page_in_the_sites_style_passes(open_workspace):
    workspace = open_workspace(HUGO)
    workspace.write(
        "content/en/docs/getting-started/configure.md",
        (
            "---\ntitle: Configure\nweight: 2\n---\n\nAfter [installing](../install/), read the "
            "[overview](/docs/concepts/intro/#architecture) (formerly [here](/docs/overview/)), [about](/about-us/), "
            "[install.md](install.md) and [the CLI](/docs/reference/cli/). ![arch](/images/arch.png) "
            "[日本語](/ja/docs/) [by tag](/tags/setup/) [home](/)\n"
        ).encode(),
    )
    report = check_docs(workspace)
    assert report.problems == []
    assert report.notes == [
        "links to `/x` routes that no content page serves (a theme's or layout's pages, "
        "taxonomies, module files) are not checked"
    ]


def test_hugo_broken_routes_and_anchors_in_a_section_are_reported(open_workspace):
    workspace = open_workspace(HUGO)
    workspace.write(
        "content/en/docs/_index.md",
        b"---\ntitle: Documentation\n---\n\n[typo](/docs/getting-started/"
        b"instal/) [old](/docs/concepts/overview/) "
        b"[anchor](/docs/concepts/intro/#architectur)\n",
    )
    assert messages(check_docs(workspace)) == [
        (
            "content/en/docs/_index.md",
            "broken anchor: /docs/concepts/intro/#architectur "
            "(content/en/docs/concepts/overview.md has no heading or id `architectur`); "
            "did you mean #architecture?",
        ),
        (
            "content/en/docs/_index.md",
            "broken link: /docs/concepts/overview/ (no page has the route /docs/concepts/overview/)",
        ),
        (
            "content/en/docs/_index.md",
            "broken link: /docs/getting-started/instal/ (no page has the route /docs/getting-started/instal/)",
        ),
    ]


def test_hugo_a_move_breaks_routes_unless_an_alias_keeps_the_old_url(open_workspace):
    workspace = open_workspace(HUGO)
    workspace.move("content/en/docs/getting-started/install.md", "content/en/docs/install.md")
    found = messages(check_docs(workspace))
    assert (
        "content/en/docs/concepts/overview.md",
        "link to /docs/getting-started/install/#prerequisites, which this run moved or deleted",
    ) in found
    assert ("content/en/docs/_index.md", "link to getting-started/install/, which this run moved or deleted") in found
    workspace = open_workspace(HUGO)
    workspace.delete("content/en/docs/getting-started/install.md")
    workspace.write(
        "content/en/docs/install.md",
        b"---\ntitle: Install\naliases:\n  - /docs/getting-started/install/\n---\n\n## Prerequisites\n",
    )
    # The old URL still works; only the Japanese translation, matched to its page by path, must follow it.
    assert messages(check_docs(workspace)) == [
        (
            "content/ja/docs/getting-started/install.md",
            "this ja translation of content/en/docs/getting-started/"
            "install.md stays at the old path after the run moved the page "
            "to content/en/docs/install.md: move it to "
            "content/ja/docs/install.md",
        )
    ]


def test_hugo_menu_entries_are_navigation_entries(open_workspace):
    workspace = open_workspace(HUGO)
    workspace.write("hugo.toml", HUGO_TOML.replace('pageRef = "/docs"', 'pageRef = "/docs/guide"').encode())
    found = messages(check_docs(workspace))
    assert [path for path, message in found if "navigation entry `/docs/guide` points to no page" in message] == [
        "hugo.toml"
    ]


def test_a_config_toml_that_is_not_hugo_is_not_taken_for_it(open_workspace):
    site = detect_site(open_workspace({"config.toml": "[server]\nport = 8080\n", "content/a.md": "# A\n"}))
    assert site.framework == "markdown"
    zola = {
        "config.toml": "base_url = 'https://x.example'\ntheme = 'book'\ntaxonomies = [{name = 'tags'}]\n",
        "content/_index.md": "+++\ntitle = 'X'\n+++\n",
        "content/a.md": "# A\n",
    }
    assert detect_site(open_workspace(zola)).framework == "markdown"  # Zola: not modelled, so not judged
    site = detect_site(
        open_workspace(
            {
                "config/_default/hugo.yaml": "baseURL: https://x.example/\ncontentDir: pages\n",
                "pages/docs/a.md": "# A\n",
            }
        )
    )
    assert (site.framework, site.docs_root) == ("hugo", "pages")


def test_hugo_content_mounted_by_module_mounts_and_a_link_render_hook_are_followed(open_workspace):
    # As Hugo's own docs do: `content/en` mounted as `content` for English, and a render hook that resolves
    # links its own way (page resources, assets, glossary shorthands).
    workspace = open_workspace(
        {
            "hugo.toml": "baseURL = 'https://docs.example.org/'\ndefaultContentLanguage = 'en'\n\n[languages]\n"
            "  [languages.en]\n    label = 'English'\n    weight = 1\n\n[module]\n  [[module.mounts]]\n"
            "    source = 'assets'\n    target = 'assets'\n  [[module.mounts]]\n    source = 'content/en'\n"
            "    target = 'content'\n    [module.mounts.sites.matrix]\n      languages = ['en']\n",
            "layouts/_markup/render-link.html": "{{- /* resolves pages, page resources and global resources */ -}}\n",
            "content/en/_index.md": "---\ntitle: Docs\n---\n",
            "content/en/functions/_index.md": "---\ntitle: Functions\n---\n",
            "content/en/functions/len.md": "---\ntitle: len\n---\n\n## Examples\n",
        }
    )
    site = detect_site(workspace)
    assert (site.framework, site.docs_root) == ("hugo", "content/en")
    workspace.write(
        "content/en/functions/print.md",
        b"---\ntitle: print\n---\n\nLike [len](/functions/len/#examples) "
        b"and [a term](g) or [typo](/functions/lenn/).\n",
    )
    report = check_docs(workspace)
    assert report.problems == []
    assert report.notes == [
        "links that match no page are read by the site's link render hook "
        "(layouts/_markup/render-link.html), which the check does not run: not checked"
    ]


def test_hugo_ref_shortcodes_are_checked_like_the_build_does(open_workspace):
    workspace = open_workspace(HUGO)
    workspace.write(
        "content/en/docs/getting-started/configure.md",
        (
            b'---\ntitle: Configure\n---\n\nSee [install]({{< ref "install" >}}), [the overview]({{< relref '
            b'"/docs/concepts/overview.md#architecture" >}}), [the CLI]({{% ref "docs/reference/cli" %}}), [about]'
            b'({{< ref "about.md" >}}) and [gone]({{< ref "uninstall.md" >}}). Escaped: {{</* ref "nowhere" */>}}\n'
        ),
    )
    assert messages(check_docs(workspace)) == [
        (
            "content/en/docs/getting-started/configure.md",
            "broken document reference: uninstall.md (no page uninstall.md (Hugo stops the build on it))",
        )
    ]
    workspace = open_workspace(
        {
            **HUGO,
            "content/en/docs/reference/cli/index.md": "---\ntitle: CLI\n---\n\n"
            'Start at {{< ref "/docs/getting-'
            'started/install.md" >}}.\n',
        }
    )
    workspace.move("content/en/docs/getting-started/install.md", "content/en/docs/install.md")
    assert (
        "content/en/docs/reference/cli/index.md",
        "link to /docs/getting-started/install.md, which this run moved or deleted",
    ) in messages(check_docs(workspace))


def test_hugo_definition_terms_are_anchors_when_the_site_turns_their_ids_on(open_workspace):
    files = {
        **HUGO,
        "content/en/docs/reference/options.md": "---\ntitle: Options\n---\n\n`baseURL`\n: The site's "
        "address.\n\nTimeout\n:   Seconds to wait.\n",
    }
    page = b"---\ntitle: New\n---\n\n[base](/docs/reference/options/#baseurl) [t](/docs/reference/options/#timeout)\n"
    workspace = open_workspace(files)
    workspace.write("content/en/docs/new.md", page)
    assert len(check_docs(workspace).problems) == 2  # without autoDefinitionTermID, terms have no ids
    config = (
        HUGO_TOML + "\n[markup]\n  [markup.goldmark]\n    [markup.goldmark.parser]\n      autoDefinitionTermID = true\n"
    )
    workspace = open_workspace({**files, "hugo.toml": config})
    workspace.write("content/en/docs/new.md", page)
    assert check_docs(workspace).problems == []


def test_hugo_translations_paired_by_translation_key_need_not_follow_a_move(open_workspace):
    workspace = open_workspace(HUGO)
    workspace.delete("content/en/docs/getting-started/install.md")
    workspace.write(
        "content/en/docs/install.md",
        b"---\ntitle: Install\ntranslationKey: install\naliases:\n"
        b"  - /docs/getting-started/install/\n---\n\n## Prerequisites\n",
    )
    assert messages(check_docs(workspace)) == []


# --- permalinks: URL patterns per section --------------------------------------------------------------------------

PERMALINKS = {
    "hugo.yaml": "baseURL: https://notes.example.net/\ntitle: Notes\npermalinks:\n  posts: /:year/:month/:slug/\n"
    "  guides: /:sections[1:]/:filename/\n  drafts: /draft/:title/\n",
    "content/_index.md": "---\ntitle: Notes\n---\n",
    "content/posts/_index.md": "---\ntitle: Posts\n---\n",
    "content/posts/hello-world.md": "---\ntitle: Hello World\ndate: 2024-05-02T10:00:00Z\n---\n\n## Why\n",
    "content/posts/launch/index.md": "---\ntitle: We launched\nslug: launch-day\ndate: 2023-11-30\n---\n",
    "content/guides/_index.md": "---\ntitle: Guides\n---\n",
    "content/guides/setup/_index.md": "---\ntitle: Setup\n---\n",
    "content/guides/setup/install.md": "---\ntitle: Install\n---\n",
    "content/drafts/_index.md": "---\ntitle: Drafts\n---\n",
    "content/drafts/untitled.md": "---\ndate: 2024-01-01\n---\n",
}


def test_hugo_permalinks_give_pages_their_routes(open_workspace):
    workspace = open_workspace(PERMALINKS)
    workspace.write(
        "content/posts/more.md",
        (
            b"---\ntitle: More\ndate: 2024-06-01\n---\n\nRead [hello](/2024/05/hello-world/#why), "
            b"[launch](/2023/11/launch-day/), [install](/setup/install/) and [drafts](/draft/anything/). "
            b"Wrong: [by path](/posts/hello-world/), [month](/2024/06/hello-world/), [guide](/guides/setup/install/).\n"
        ),
    )
    report = check_docs(workspace)
    assert [p.message for p in report.problems] == [
        "broken link: /2024/06/hello-world/ (no page has the route /2024/06/hello-world/)",
        "broken link: /guides/setup/install/ (no page has the route /guides/setup/install/)",
        "broken link: /posts/hello-world/ (no page has the route /posts/hello-world/)",
    ]
    # `drafts` has a page without the title its pattern needs: its routes are not known, so not judged.
    workspace.write("content/_index.md", b"---\ntitle: Notes\n---\n\n[a draft](/drafts/untitled/)\n")
    assert not any(p.path == "content/_index.md" for p in check_docs(workspace).problems)


def test_hugo_a_post_moved_between_folders_keeps_its_permalink(open_workspace):
    workspace = open_workspace(
        dict(PERMALINKS, **{"content/_index.md": "---\ntitle: Notes\n---\n\nStart [here](/2024/05/hello-world/).\n"})
    )
    workspace.move("content/posts/hello-world.md", "content/posts/2024/hello-world.md")
    assert check_docs(workspace).problems == []
    workspace.write("content/posts/2024/hello-world.md", b"---\ntitle: Hello World\ndate: 2024-07-02\n---\n")
    assert [p.message for p in check_docs(workspace).problems] == [
        "link to /2024/05/hello-world/, which this run moved or deleted"
    ]
