"""VitePress by its own rules, on small sites modelled on real ones: `srcDir`, `base`, `rewrites`, multi-sidebar
configs with group `base`s, `locales`, routes with or without `.md`/`.html`, `public/` files, dynamic routes."""

from service.agent.docs_check import check_docs
from service.agent.docsite.detect import detect_site


def messages(report) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in report.problems]


CONFIG = """\
import { defineConfig } from 'vitepress'

// https://vitepress.dev/reference/site-config
export default defineConfig({
  title: 'Gizmo',
  description: 'Build gizmos fast',
  base: '/gizmo/',
  srcDir: 'src',
  cleanUrls: true,
  srcExclude: ['**/CHANGELOG.md', 'drafts/**'],
  rewrites: {
    'packages/:pkg/README.md': 'reference/:pkg.md',
  },
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/' },
      { text: 'Changelog', link: 'https://github.com/acme/gizmo/releases' },
    ],
    sidebar: {
      '/guide/': [
        {
          text: 'Introduction',
          items: [
            { text: 'What is Gizmo?', link: '/guide/' },
            { text: 'Getting started', link: '/guide/getting-started' },
          ],
        },
        { text: 'Deploying', base: '/guide/deploy/', items: [{ text: 'Static hosts', link: 'static' }] },
      ],
      '/reference/': [
        { text: 'Packages', items: [{ text: 'core', link: '/reference/core' }] },
      ],
    },
  },
  locales: {
    root: { label: 'English', lang: 'en-US' },
    fr: {
      label: 'Français',
      lang: 'fr',
      themeConfig: { sidebar: [{ text: 'Guide', items: [{ text: 'Démarrer', link: '/fr/guide/getting-started' }] }] },
    },
  },
})
"""

VITEPRESS = {
    "package.json": '{"scripts": {"docs:dev": "vitepress dev docs"}}\n',
    "docs/.vitepress/config.mts": CONFIG,
    "docs/src/index.md": "---\nlayout: home\nhero:\n  name: Gizmo\n  actions:\n    - text: Start\n      link: "
    "/guide/getting-started\n---\n",
    "docs/src/guide/index.md": "# What is Gizmo?\n\nRead [getting started](./getting-started.md#install) or "
    "[deploy](/guide/deploy/static.html). ![logo](/logo.svg)\n",
    "docs/src/guide/getting-started.md": "# Getting started\n\n## Install\n\nSee [core](/reference/core) and "
    "[the intro](/guide/).\n\n## Client/server `cleanUrls`\n",
    "docs/src/guide/deploy/static.md": "# Static hosts\n\nBack to [install](../getting-started#install).\n",
    "docs/src/packages/core/README.md": "# core\n\nUsed by [the guide](/guide/getting-started).\n",
    "docs/src/public/logo.svg": "<svg/>\n",
    "docs/src/fr/guide/getting-started.md": "# Démarrer\n\nVoir [l'intro](/fr/guide/getting-started#demarrer).\n",
    "docs/src/blog/[slug].md": "# {{ $params.title }}\n",
    "docs/src/drafts/idea.md": "# Not built\n",
    "docs/src/blog/[slug].paths.js": "export default { paths() { return [] } }\n",
}


def test_vitepress_site_is_detected_from_its_config_with_src_dir_and_locales(open_workspace):
    site = detect_site(open_workspace(VITEPRESS))
    assert (site.framework, site.config_path, site.docs_root) == ("vitepress", "docs/.vitepress/config.mts", "docs/src")
    assert site.explicit_nav and site.nav_files == ["docs/.vitepress/config.mts"]
    assert [lang.code for lang in site.languages] == ["en-US", "fr"]
    text = site.describe()
    assert text.startswith("Docs site: VitePress (detected from docs/.vitepress/config.mts).")
    assert "no navigation file" not in text and "themeConfig.sidebar" in text
    assert len(text) < 800  # the system prompt's paragraph stays short


def test_vitepress_routes_rewrites_base_and_public_files_resolve(open_workspace):
    workspace = open_workspace(VITEPRESS)
    # A new page written like its neighbours: routes, .md and .html forms, a rewritten page, a public file.
    workspace.write(
        "docs/src/guide/deploy/docker.md",
        b"# Docker\n\n[start](/guide/getting-started#install) "
        b"[static](./static.md) [core](/reference/core.html) "
        b"[based](/gizmo/guide/) ![logo](/logo.svg) "
        b"[a post](/blog/hello) "
        b"[ids](/guide/getting-started#client-server-cleanurls)\n",
    )
    workspace.write(
        "docs/.vitepress/config.mts",
        CONFIG.replace(
            "{ text: 'Static hosts', link: 'static' }",
            "{ text: 'Static hosts', link: 'static' }, { text: 'Docker', link: 'docker' }",
        ).encode(),
    )
    report = check_docs(workspace)
    assert report.problems == []
    assert report.notes == ["links to routes of VitePress dynamic pages (`[param].md`) are not checked"]


def test_vitepress_broken_routes_and_anchors_are_reported_as_the_build_would(open_workspace):
    workspace = open_workspace(VITEPRESS)
    workspace.write(
        "docs/src/guide/index.md",
        b"# What is Gizmo?\n\n[typo](/guide/getting-startd) "
        b"[anchor](/guide/getting-started#instal) [file](./nope.md)\n",
    )
    assert messages(check_docs(workspace)) == [
        (
            "docs/src/guide/index.md",
            "broken anchor: /guide/getting-started#instal (docs/src/guide/getting-started.md "
            "has no heading or id `instal`); did you mean #install?",
        ),
        ("docs/src/guide/index.md", "broken link: ./nope.md (no page has the route /guide/nope)"),
        ("docs/src/guide/index.md", "broken link: /guide/getting-startd (no page has the route /guide/getting-startd)"),
    ]


def test_vitepress_new_page_needs_a_sidebar_entry_and_a_move_breaks_links_and_entries(open_workspace):
    workspace = open_workspace(VITEPRESS)
    workspace.write("docs/src/guide/faq.md", b"# FAQ\n\nSee [getting started](/guide/getting-started).\n")
    workspace.write("docs/src/fr/guide/faq.md", b"# FAQ\n")  # the French sidebar is its own: needs an entry too
    found = messages(check_docs(workspace))
    assert (
        "docs/src/guide/faq.md",
        "new page is not in the navigation, so readers cannot find it: add "
        "{ text: '…', link: '/guide/faq' } to `themeConfig.sidebar` in docs/.vitepress/config.mts",
    ) in found
    assert len(found) == 2
    workspace.write("docs/src/drafts/later.md", b"# Later\n")  # srcExclude: not a page, needs no entry
    assert len(messages(check_docs(workspace))) == 2
    workspace = open_workspace(VITEPRESS)
    workspace.move("docs/src/guide/getting-started.md", "docs/src/guide/start.md")
    found = messages(check_docs(workspace))
    assert ("docs/src/guide/index.md", "link to ./getting-started.md#install, which this run moved or deleted") in found
    assert (
        "docs/src/packages/core/README.md",
        "link to /guide/getting-started, which this run moved or deleted",
    ) in found
    assert any(path == "docs/.vitepress/config.mts" and "/guide/getting-started" in message for path, message in found)


def test_vitepress_ignore_dead_links_and_computed_sidebars_are_not_judged(open_workspace):
    config = CONFIG.replace("cleanUrls: true,", "cleanUrls: true,\n  ignoreDeadLinks: true,").replace(
        "sidebar: {", "sidebar: sidebars(), _unused: {"
    )
    workspace = open_workspace({**VITEPRESS, "docs/.vitepress/config.mts": config})
    site = detect_site(workspace)
    assert not site.explicit_nav and "built by code" in site.describe()
    workspace.write("docs/src/guide/new.md", b"# New\n\n[later](/guide/not-yet)\n")
    report = check_docs(workspace)
    assert report.problems == [] and len(report.notes) == 1 and "ignoreDeadLinks" in report.notes[0]


def test_vitepress_rest_parameter_rewrites_serve_a_language_folder_at_the_root(open_workspace):
    # As sites that keep English pages in `en/` do: `'en/:rest*': ':rest*'`; the sidebar lives elsewhere.
    workspace = open_workspace(
        {
            "docs/.vitepress/config.ts": "import { defineConfig } from 'vitepress'\n\nexport default defineConfig({\n"
            "  rewrites: { 'en/:rest*': ':rest*' },\n  cleanUrls: true,\n})\n",
            "docs/en/index.md": "# Home\n\n[Guide](/guide/what-is)\n",
            "docs/en/guide/what-is.md": "# What is it\n\n## Use cases\n",
        }
    )
    site = detect_site(workspace)
    assert not site.explicit_nav and "No sidebar is set in docs/.vitepress/config.ts" in site.describe()
    workspace.write(
        "docs/en/guide/start.md",
        b"# Start\n\n[what](/guide/what-is#use-cases) [same](./what-is.md) [typo](/guide/what)\n",
    )
    assert messages(check_docs(workspace)) == [
        ("docs/en/guide/start.md", "broken link: /guide/what (no page has the route /guide/what)")
    ]


def test_vitepress_config_is_named_in_the_overview(open_workspace):
    from service.agent.overview import repository_overview

    workspace = open_workspace(VITEPRESS)
    text = repository_overview(workspace, site=detect_site(workspace))
    assert "docs/.vitepress/config.mts" in text.split("Docs configuration files: ", 1)[1].split("\n", 1)[0]


def test_vitepress_nav_links_to_custom_pages_are_not_judged_but_broken_doc_links_are(open_workspace):
    workspace = open_workspace(VITEPRESS)
    workspace.write(
        "docs/.vitepress/config.mts",
        CONFIG.replace(
            "{ text: 'Guide', link: '/guide/' },",
            "{ text: 'Guide', link: '/guide/' }, { text: 'Team', link: '/team' }, { text: 'FAQ', link: '/guide/faq' },",
        ).encode(),
    )
    found = messages(check_docs(workspace))
    assert [message.split(" (")[0] for path, message in found] == ["navigation entry `/guide/faq` points to no page"]


# --- per-folder config files (VitePress 2's `defineAdditionalConfig`) ---------------------------------------------

MAIN_CONFIG = """\
import { defineConfig } from 'vitepress'

export default defineConfig({
  title: 'Widget',
  cleanUrls: true,
  locales: {
    root: { label: 'English', lang: 'en-US' },
    de: { label: 'Deutsch', lang: 'de-DE' },
  },
})
"""

FOLDER_CONFIG = """\
import { defineAdditionalConfig } from 'vitepress'

export default defineAdditionalConfig({
  description: 'Widgets, built fast.',
  themeConfig: {
    nav: [{ text: 'Guide', link: '/guide/intro' }],
    sidebar: {
      '/guide/': {
        base: '/guide/',
        items: [{ text: 'Intro', link: 'intro' }, { text: 'Setup', link: 'setup' }],
      },
    },
  },
})
"""

PER_FOLDER = {
    "docs/.vitepress/config.ts": MAIN_CONFIG,
    "docs/config.ts": FOLDER_CONFIG,
    "docs/de/config.ts": FOLDER_CONFIG.replace("'/guide/", "'/de/guide/").replace("/guide/intro'", "/de/guide/intro'"),
    "docs/index.md": "# Widget\n",
    "docs/guide/intro.md": "# Intro\n",
    "docs/guide/setup.md": "# Setup\n",
    "docs/de/guide/intro.md": "# Einführung\n",
    "docs/de/guide/setup.md": "# Einrichtung\n",
}


def test_vitepress_folder_configs_hold_the_sidebar(open_workspace):
    workspace = open_workspace(PER_FOLDER)
    site = detect_site(workspace)
    assert site.explicit_nav and site.nav_files == ["docs/config.ts", "docs/de/config.ts"]
    assert "Navigation is `themeConfig.sidebar` in docs/config.ts and docs/de/config.ts" in site.describe()
    workspace.write("docs/guide/faq.md", b"# FAQ\n")
    workspace.write("docs/de/guide/faq.md", b"# FAQ\n")
    workspace.delete("docs/de/guide/setup.md")
    assert sorted(messages(check_docs(workspace))) == [
        (
            "docs/de/config.ts",
            "navigation entry `setup` points to docs/de/guide/setup.md, which this run moved or deleted; update the "
            "entry to the page's new path or remove it",
        ),
        (
            "docs/de/guide/faq.md",
            "new page is not in the navigation, so readers cannot find it: add "
            "{ text: '…', link: '/de/guide/faq' } to `themeConfig.sidebar` in docs/de/config.ts",
        ),
        (
            "docs/guide/faq.md",
            "new page is not in the navigation, so readers cannot find it: add "
            "{ text: '…', link: '/guide/faq' } to `themeConfig.sidebar` in docs/config.ts",
        ),
    ]


def test_vitepress_computed_folder_sidebars_leave_new_pages_unjudged(open_workspace):
    computed = FOLDER_CONFIG.replace(
        "items: [{ text: 'Intro', link: 'intro' }, { text: 'Setup', link: 'setup' }]", "items: sidebarGuide()"
    )
    workspace = open_workspace({**PER_FOLDER, "docs/config.ts": computed})
    workspace.write("docs/guide/faq.md", b"# FAQ\n")
    assert messages(check_docs(workspace)) == []
