"""Locales resolved by each framework's rules, on small sites modelled on real ones: Starlight locale folders
spelt differently from their key, Docusaurus i18n folders and mkdocs-static-i18n folders that fall back to the
default language's pages (a link valid through the fallback is valid, and a move that breaks it is reported)."""

import json

from service.agent.docs_check import check_docs
from service.agent.docsite.detect import detect_site


def messages(report) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in report.problems]


# --- Starlight: `zh-CN/` holds the `zh-cn` locale ---------------------------------------------------------------

STARLIGHT = {
    "astro.config.mjs": "import { defineConfig } from 'astro/config';\nimport starlight from '@astrojs/starlight';\n\n"
    "export default defineConfig({\n  integrations: [\n    starlight({\n      title: 'Docs',\n"
    "      defaultLocale: 'root',\n      locales: {\n        root: { label: 'English', lang: 'en' },\n"
    "        'zh-cn': { label: '简体中文', lang: 'zh-CN' },\n        fr: { label: 'Français' },\n"
    "      },\n      sidebar: [{ label: 'Guides', items: ['guides/setup', 'guides/deploy'] }],\n"
    "    }),\n  ],\n});\n",
    "src/content/docs/index.mdx": "---\ntitle: Home\n---\n\n[Setup](/guides/setup/)\n",
    "src/content/docs/guides/setup.md": "---\ntitle: Setup\n---\n\n## Install\n",
    "src/content/docs/guides/deploy.md": "---\ntitle: Deploy\n---\n\nAfter [setup](/guides/setup/).\n",
    "src/content/docs/zh-CN/index.mdx": "---\ntitle: 首页\n---\n\n[安装](/zh-cn/guides/setup/)\n",
    "src/content/docs/zh-CN/guides/setup.md": "---\ntitle: 安装\n---\n\n## 安装\n",
    "src/content/docs/fr/guides/setup.md": "---\ntitle: Installation\n---\n",
}


def test_starlight_locale_folder_spelt_differently_from_its_key_is_that_locale(open_workspace):
    workspace = open_workspace(STARLIGHT)
    site = detect_site(workspace)
    assert [(lang.code, lang.folder) for lang in site.languages] == [
        ("en", "src/content/docs"),
        ("zh-CN", "src/content/docs/zh-CN"),
        ("fr", "src/content/docs/fr"),
    ]
    assert site.language_of("src/content/docs/zh-CN/guides/setup.md").code == "zh-CN"
    # A new translation is listed by its English page's sidebar entry; its links to untranslated pages fall back.
    workspace.write(
        "src/content/docs/zh-CN/guides/deploy.md",
        "---\ntitle: 部署\n---\n\n[安装](/zh-cn/guides/setup/) "
        "[部署](/zh-cn/guides/deploy/) [法语](/fr/guides/deploy/)"
        "\n".encode(),
    )
    assert check_docs(workspace).problems == []


# --- Docusaurus: translations in i18n/<locale>/docusaurus-plugin-content-docs/current --------------------------

DOCUSAURUS = {
    "docusaurus.config.js": "// @ts-check\n\n/** @type {import('@docusaurus/types').Config} */\nconst config = {\n"
    "  title: 'Kit',\n  url: 'https://kit.example.com',\n  baseUrl: '/',\n"
    "  i18n: {\n    defaultLocale: 'en',\n    locales: ['en', 'ko'],\n  },\n"
    "  presets: [['classic', {docs: {sidebarPath: require.resolve('./sidebars.js')}}]],\n};\n\n"
    "module.exports = config;\n",
    "sidebars.js": "module.exports = {docs: ['intro', 'guides/setup', 'guides/deploy']};\n",
    "docs/intro.md": "# Intro\n\nSee [setup](guides/setup.md).\n",
    "docs/guides/setup.md": "# Setup\n\n## Install\n",
    "docs/guides/deploy.md": "# Deploy\n\nAfter [setup](./setup.md#install).\n",
    # Korean has two of the three docs; links to the third fall back to the English page.
    "i18n/ko/docusaurus-plugin-content-docs/current/intro.md": "# 소개\n\n[설치](guides/setup.md) "
    "[배포](guides/deploy.md) [배포 URL](/ko/docs/guides/deploy)\n",
    "i18n/ko/docusaurus-plugin-content-docs/current/guides/deploy.md": "# 배포\n\n[설치](./setup.md#install) "
    "[설치 URL](setup)\n",
}


def test_docusaurus_translations_link_to_untranslated_docs_through_the_fallback(open_workspace):
    workspace = open_workspace(DOCUSAURUS)
    workspace.write(
        "i18n/ko/docusaurus-plugin-content-docs/current/intro.md",
        DOCUSAURUS["i18n/ko/docusaurus-plugin-content-docs/current/intro.md"].replace("# 소개", "# 소개하기").encode(),
    )
    workspace.write(
        "i18n/ko/docusaurus-plugin-content-docs/current/guides/deploy.md",
        "# 배포\n\n[설치](./setup.md#install) [설치 URL](setup) [없음](./nowhere.md)\n".encode(),
    )
    assert messages(check_docs(workspace)) == [
        (
            "i18n/ko/docusaurus-plugin-content-docs/current/guides/deploy.md",
            "broken link: ./nowhere.md (no file i18n/ko/docusaurus-plugin-content-docs/current/guides/nowhere.md or "
            "docs/guides/nowhere.md)",
        )
    ]


def test_docusaurus_a_move_reports_the_translations_links_that_fell_back_to_it(open_workspace):
    workspace = open_workspace(DOCUSAURUS)
    workspace.move("docs/guides/setup.md", "docs/setup.md")
    found = messages(check_docs(workspace))
    translated = [(path, message) for path, message in found if path.startswith("i18n/")]
    assert sorted(translated) == [
        (
            "i18n/ko/docusaurus-plugin-content-docs/current/guides/deploy.md",
            "link to ./setup.md#install, which this run moved or deleted",
        ),
        (
            "i18n/ko/docusaurus-plugin-content-docs/current/guides/deploy.md",
            "link to setup, which this run moved or deleted",
        ),
        (
            "i18n/ko/docusaurus-plugin-content-docs/current/intro.md",
            "link to guides/setup.md, which this run moved or deleted",
        ),
    ]


# Docusaurus translations of a further docs instance and of an older version: each in its own i18n folder, falling
# back to the pages of the docs it translates.
DOCUSAURUS_INSTANCES = {
    "docusaurus.config.js": "module.exports = {\n  title: 'Kit',\n  baseUrl: '/',\n"
    "  i18n: {defaultLocale: 'en', locales: ['en', 'ja']},\n"
    "  presets: [['classic', {docs: {sidebarPath: require.resolve('./sidebars.js')}}]],\n"
    "  plugins: [['@docusaurus/plugin-content-docs', {id: 'community', path: 'community', "
    "routeBasePath: 'community', sidebarPath: require.resolve('./sidebarsCommunity.js')}]],\n};\n",
    "sidebars.js": "module.exports = {docs: ['intro', 'guides/setup']};\n",
    "sidebarsCommunity.js": "module.exports = {community: ['support', 'team/contributing']};\n",
    "versions.json": json.dumps(["1.0"]),
    "docs/intro.md": "# Intro\n",
    "docs/guides/setup.md": "# Setup\n",
    "versioned_docs/version-1.0/intro.md": "# Intro 1.0\n",
    "versioned_docs/version-1.0/guides/setup.md": "# Setup 1.0\n\n## Install\n",
    "versioned_sidebars/version-1.0-sidebars.json": json.dumps({"docs": ["intro", "guides/setup"]}),
    "community/support.md": "# Support\n",
    "community/team/contributing.md": "# Contributing\n\n## Pull requests\n",
    # Japanese translates one page of each; links to the others fall back.
    "i18n/ja/docusaurus-plugin-content-docs-community/current/support.md": "# サポート\n\n"
    "[貢献](team/contributing.md#pull-requests) [貢献 URL](team/contributing)\n",
    "i18n/ja/docusaurus-plugin-content-docs/version-1.0/intro.md": "# はじめに\n\n"
    "[セットアップ](guides/setup.md#install) [URL](guides/setup)\n",
}


def test_docusaurus_instance_and_version_translations_fall_back_to_their_own_docs(open_workspace):
    workspace = open_workspace(DOCUSAURUS_INSTANCES)
    support = "i18n/ja/docusaurus-plugin-content-docs-community/current/support.md"
    intro = "i18n/ja/docusaurus-plugin-content-docs/version-1.0/intro.md"
    workspace.write(support, (DOCUSAURUS_INSTANCES[support] + "[なし](team/nope.md)\n").encode())
    workspace.write(intro, (DOCUSAURUS_INSTANCES[intro] + "\n改訂\n").encode())
    assert messages(check_docs(workspace)) == [
        (
            support,
            "broken link: team/nope.md (no file i18n/ja/docusaurus-plugin-content-docs-community/current/team/nope.md "
            "or community/team/nope.md or team/nope.md)",
        )
    ]


def test_docusaurus_a_move_in_an_instance_reports_its_translations_links(open_workspace):
    workspace = open_workspace(DOCUSAURUS_INSTANCES)
    workspace.move("community/team/contributing.md", "community/contributing.md")
    translated = sorted((path, message) for path, message in messages(check_docs(workspace)) if "i18n/" in path)
    support = "i18n/ja/docusaurus-plugin-content-docs-community/current/support.md"
    assert translated == [
        (support, "link to team/contributing, which this run moved or deleted"),
        (support, "link to team/contributing.md#pull-requests, which this run moved or deleted"),
    ]


# --- MkDocs (mkdocs-static-i18n, folder structure): per-language builds with fallback_to_default -------------

MKDOCS = {
    "mkdocs.yml": "site_name: Kit\ntheme:\n  name: material\nnav:\n  - index.md\n  - guide/setup.md\n"
    "  - guide/deploy.md\nplugins:\n  - search\n  - i18n:\n      docs_structure: folder\n"
    "      languages:\n        - locale: en\n          default: true\n          name: English\n"
    "        - locale: de\n          name: Deutsch\n",
    "docs/en/index.md": "# Kit\n\n[Setup](guide/setup.md)\n",
    "docs/en/guide/setup.md": "# Setup\n\n## Install\n",
    "docs/en/guide/deploy.md": "# Deploy\n\nAfter [setup](setup.md#install).\n",
    "docs/de/index.md": "# Kit\n\n[Einrichtung](guide/setup.md) [Bereitstellung](guide/deploy.md#deploy)\n",
    "docs/de/guide/deploy.md": "# Bereitstellung\n\nNach der [Einrichtung](setup.md#install).\n",
}


def test_mkdocs_per_language_build_falls_back_to_the_default_pages(open_workspace):
    workspace = open_workspace(MKDOCS)
    workspace.write("docs/de/index.md", b"# Kit\n\n[Einrichtung](guide/setup.md#install) [neu](guide/neu.md)\n")
    assert messages(check_docs(workspace)) == [
        ("docs/de/index.md", "broken link: guide/neu.md (no file docs/de/guide/neu.md)")
    ]
    workspace = open_workspace(MKDOCS)
    workspace.move("docs/en/guide/setup.md", "docs/en/setup.md")
    found = messages(check_docs(workspace))
    assert ("docs/de/index.md", "link to guide/setup.md, which this run moved or deleted") in found
    assert ("docs/de/guide/deploy.md", "link to setup.md#install, which this run moved or deleted") in found


def test_mkdocs_without_fallback_a_missing_translation_is_broken(open_workspace):
    config = MKDOCS["mkdocs.yml"].replace(
        "docs_structure: folder\n", "docs_structure: folder\n      fallback_to_default: false\n"
    )
    workspace = open_workspace({**MKDOCS, "mkdocs.yml": config})
    workspace.write("docs/de/index.md", b"# Kit\n\n[Einrichtung](guide/setup.md#install)\n")
    assert [message for _, message in messages(check_docs(workspace))] == [
        "broken link: guide/setup.md#install (no file docs/de/guide/setup.md)"
    ]


def test_a_moved_page_whose_translations_stay_behind_is_reported_for_each_layout(open_workspace):
    workspace = open_workspace(DOCUSAURUS)
    workspace.move("docs/guides/deploy.md", "docs/deploy.md")
    found = messages(check_docs(workspace))
    assert (
        "i18n/ko/docusaurus-plugin-content-docs/current/guides/deploy.md",
        "this ko translation of "
        "docs/guides/deploy.md stays at the old path after the run moved the page to docs/deploy.md: move it to "
        "i18n/ko/docusaurus-plugin-content-docs/current/deploy.md",
    ) in found
    workspace.move(
        "i18n/ko/docusaurus-plugin-content-docs/current/guides/deploy.md",
        "i18n/ko/docusaurus-plugin-content-docs/current/deploy.md",
    )
    assert not any("translation" in message for _, message in messages(check_docs(workspace)))
    workspace = open_workspace(MKDOCS)
    workspace.move("docs/en/guide/deploy.md", "docs/en/deploy.md")
    assert any(
        path == "docs/de/guide/deploy.md" and "move it to docs/de/deploy.md" in message
        for path, message in messages(check_docs(workspace))
    )


# --- MkDocs per-language builds: docs/<locale>/mkdocs.yml inheriting the default's ----------------------------

BUILDS = {
    "docs/en/mkdocs.yml": "site_name: Kit\nsite_url: https://kit.example.com/\ntheme:\n  name: material\n"
    "  language: en\nnav:\n  - index.md\n  - Tutorial:\n    - tutorial/index.md\n"
    "    - tutorial/first-steps.md\n    - tutorial/body.md\n",
    "docs/en/docs/index.md": "# Kit\n\n[Start](tutorial/first-steps.md)\n",
    "docs/en/docs/tutorial/index.md": "# Tutorial\n",
    "docs/en/docs/tutorial/first-steps.md": "# First steps\n\n## Run it\n\nThen [a body](body.md).\n",
    "docs/en/docs/tutorial/body.md": "# Request body\n",
    "docs/es/mkdocs.yml": "INHERIT: ../en/mkdocs.yml\ntheme:\n  language: es\n",
    "docs/es/docs/index.md": "# Kit\n\n[Empezar](tutorial/first-steps.md#run-it)\n",
    "docs/es/docs/tutorial/first-steps.md": "# Primeros pasos\n\nLuego [un cuerpo](body.md).\n",
    "docs/pt/mkdocs.yml": "INHERIT: ../en/mkdocs.yml\ntheme:\n  language: pt\n",
    "docs/pt/docs/index.md": "# Kit\n",
    # A build whose mkdocs.yml a script writes at build time, laid out like the others.
    "docs/de/docs/index.md": "# Kit\n\n[Erste Schritte](tutorial/first-steps.md)\n",
}


def test_mkdocs_per_language_builds_are_one_site_whose_translations_fall_back(open_workspace):
    workspace = open_workspace(BUILDS)
    site = detect_site(workspace)
    assert (site.config_path, site.docs_root) == ("docs/en/mkdocs.yml", "docs/en/docs")
    assert [(lang.code, lang.folder) for lang in site.languages] == [
        ("en", "docs/en/docs"),
        ("es", "docs/es/docs"),
        ("pt", "docs/pt/docs"),
        ("de", "docs/de/docs"),
    ]
    # A Spanish page links to an untranslated page: the build fills it in from English.
    workspace.write(
        "docs/es/docs/tutorial/body.md",
        "# Cuerpo\n\n[Pasos](first-steps.md) [Índice](index.md) [nada](nada.md)\n".encode(),
    )
    assert messages(check_docs(workspace)) == [
        ("docs/es/docs/tutorial/body.md", "broken link: nada.md (no file docs/es/docs/tutorial/nada.md)")
    ]
    workspace = open_workspace(BUILDS)
    workspace.move("docs/en/docs/tutorial/body.md", "docs/en/docs/body.md")
    found = messages(check_docs(workspace))
    assert ("docs/es/docs/tutorial/first-steps.md", "link to body.md, which this run moved or deleted") in found
    assert ("docs/en/docs/tutorial/first-steps.md", "link to body.md, which this run moved or deleted") in found
    workspace = open_workspace(BUILDS)
    workspace.move("docs/en/docs/tutorial/first-steps.md", "docs/en/docs/first-steps.md")
    found = messages(check_docs(workspace))
    assert ("docs/de/docs/index.md", "link to tutorial/first-steps.md, which this run moved or deleted") in found
    assert (
        "docs/es/docs/tutorial/first-steps.md",
        "this es translation of docs/en/docs/tutorial/first-steps.md "
        "stays at the old path after the run moved the page to docs/en/docs/first-steps.md: move it to "
        "docs/es/docs/first-steps.md",
    ) in found
