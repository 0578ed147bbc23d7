"""The overview and the site description follow the detected site's languages and navigation order: Docusaurus
`i18n`, the MkDocs i18n plugin (suffix and folder structures) and Sphinx toctrees, on small sites modelled on
real ones."""

from service.agent.docs_check import check_docs
from service.agent.docsite.detect import detect_site, navigation_order
from service.agent.docsite.tree import Tree
from service.agent.overview import repository_overview


def overview(workspace) -> tuple[str, object]:
    site = detect_site(workspace)
    return repository_overview(workspace, site=site, nav_order=navigation_order(Tree(workspace), site)), site


# --- Docusaurus ------------------------------------------------------------------------------------------------

DOCUSAURUS_I18N = {
    "docusaurus.config.ts": "import type {Config} from '@docusaurus/types';\n\nconst config: Config = {\n"
    "  baseUrl: '/',\n  i18n: {\n    defaultLocale: 'en',\n    locales: ['en', 'fr', 'ja'],\n"
    "    localeConfigs: {ja: {label: '日本語', path: 'ja-JP'}},\n  },\n"
    "  presets: [['classic', {docs: {sidebarPath: './sidebars.ts'}}]],\n};\n\n"
    "export default config;\n",
    "sidebars.ts": "export default {docs: ['intro', 'guides/setup']};\n",
    "docs/intro.md": "# Intro\n\nSee [setup](guides/setup.md).\n",
    "docs/guides/setup.md": "# Setup\n",
    "i18n/fr/docusaurus-plugin-content-docs/current/intro.md": "# Introduction\n",
    "i18n/fr/docusaurus-plugin-content-docs/current/guides/setup.md": "# Installation\n",
    "i18n/fr/docusaurus-theme-classic/navbar.json": "{}\n",
    "i18n/ja-JP/docusaurus-plugin-content-docs/current/intro.md": "# はじめに\n",
}


def test_docusaurus_i18n_default_locale_first_and_translations_named_not_listed(open_workspace):
    workspace = open_workspace(DOCUSAURUS_I18N)
    text, site = overview(workspace)
    assert [(lang.code, lang.folder) for lang in site.languages] == [
        ("en", "docs"),
        ("fr", "i18n/fr/docusaurus-plugin-content-docs/current"),
        ("ja", "i18n/ja-JP/docusaurus-plugin-content-docs/current"),
    ]
    assert "Docs pages under docs/ in the default language (en): 2 (.md 2)." in text
    assert (
        "Translations (not listed here): fr (i18n/fr/docusaurus-plugin-content-docs/current/, 2 pages), "
        "ja (i18n/ja-JP/docusaurus-plugin-content-docs/current/, 1 pages)"
    ) in text
    assert "Pages (2 of 2, in navigation order):\ndocs/intro.md\ndocs/guides/setup.md" in text
    assert "i18n/fr/docusaurus-plugin-content-docs/current/intro.md" not in text
    assert (
        "Default language: en; translations: fr (i18n/fr/docusaurus-plugin-content-docs/current/), ja "
        "(i18n/ja-JP/docusaurus-plugin-content-docs/current/)"
    ) in site.describe()
    workspace.write("docs/intro.md", b"# Intro\n\nSee [the setup](guides/setup.md).\n")
    assert check_docs(workspace).problems == []  # translations are not pages of the current docs


def test_docusaurus_i18n_read_from_a_computed_config_and_odd_values_tolerated(open_workspace):
    computed = {
        **DOCUSAURUS_I18N,
        "docusaurus.config.ts": "export default async function createConfig() {\n"
        "  return {i18n: {defaultLocale: 'en', locales: ['en', \"fr\"]}, presets: [['classic', {}]]};\n}\n",
    }
    site = detect_site(open_workspace(computed))
    assert [lang.code for lang in site.languages] == ["en", "fr"]
    for i18n in (
        "{defaultLocale: process.env.LOCALE, locales: ['en', 'fr']}",
        "{defaultLocale: 'en', locales: ['en', '../../etc', 42, ...extra]}",
        "{defaultLocale: 'en'}",
        "'en'",
        "{defaultLocale: 'en', locales: ['en', 'fr'], localeConfigs: {fr: {path: '../../..'}}}",
    ):
        odd = {
            **DOCUSAURUS_I18N,
            "docusaurus.config.ts": f"export default {{i18n: {i18n}, presets: [['classic', "
            "{docs: {sidebarPath: './sidebars.ts'}}]]};\n",
        }
        site = detect_site(open_workspace(odd))
        assert (site.framework, site.languages) == ("docusaurus", []), i18n


# --- MkDocs ----------------------------------------------------------------------------------------------------

MKDOCS_SUFFIX = {
    "mkdocs.yml": "site_name: Demo\nnav:\n  - Home: index.md\n  - Setup: setup.md\n  - Topic: topic/index.md\n"
    "plugins:\n  - search\n  - i18n:\n      docs_structure: suffix\n      languages:\n"
    "        - locale: fr\n          name: Français\n        - locale: en\n          default: true\n"
    "          name: English\n        - locale: de\n          name: Deutsch\n",
    "docs/index.md": "# Home\n\nRead [setup](setup.md).\n",
    "docs/index.fr.md": "# Accueil\n",
    "docs/index.de.md": "# Start\n",
    "docs/setup.en.md": "# Setup\n",
    "docs/setup.fr.md": "# Installation\n",
    "docs/topic/index.md": "# Topic\n",
    "docs/topic/index.fr.md": "# Sujet\n",
}


def test_mkdocs_i18n_suffix_structure_lists_default_pages_only(open_workspace):
    workspace = open_workspace(MKDOCS_SUFFIX)
    text, site = overview(workspace)
    assert [(lang.code, lang.suffix) for lang in site.languages] == [("en", ""), ("fr", "fr"), ("de", "de")]
    assert "Docs pages under docs/ in the default language (en): 3 (.md 3)." in text
    assert "Translations (not listed here): fr (docs/**/*.fr.*, 3 pages), de (docs/**/*.de.*, 1 pages)" in text
    # The plugin serves setup.en.md for `setup.md`, so it is listed in its navigation place.
    assert "Pages (3 of 3, in navigation order):\ndocs/index.md\ndocs/setup.en.md\ndocs/topic/index.md" in text
    assert ".fr.md" not in text.replace("*.fr.*", "")
    assert "Default language: en; translations: fr (docs/**/*.fr.*), de (docs/**/*.de.*)" in site.describe()
    workspace.write("docs/topic/index.de.md", b"# Thema\n")  # a translation needs no `nav:` entry of its own
    workspace.write("docs/topic/index.md", b"# Topic\n\nSee [setup](../setup.md).\n")  # served as setup.en.md
    assert check_docs(workspace).problems == []
    workspace.move("docs/setup.en.md", "docs/install.en.md")
    assert ("docs/index.md", "link to setup.md, which this run moved or deleted") in [
        (p.path, p.message) for p in check_docs(workspace).problems
    ]


MKDOCS_FOLDER = {
    # The options as siblings of `i18n:` and the 0.x `default_language` with a mapping of languages: both seen
    # in real configs, both read.
    "mkdocs.yml": "site_name: Demo\nnav:\n  - index.md\n  - guide/usage.md\nplugins:\n  - i18n:\n"
    "    docs_structure: folder\n    default_language: en\n    languages:\n      en: English\n"
    "      es: Español\n",
    "docs/en/index.md": "# Home\n",
    "docs/en/guide/usage.md": "# Usage\n",
    "docs/es/index.md": "# Inicio\n",
    "docs/es/guide/usage.md": "# Uso\n",
    "docs/assets/logo.md": "shared\n",
}


def test_mkdocs_i18n_folder_structure_names_the_other_folders(open_workspace):
    workspace = open_workspace(MKDOCS_FOLDER)
    text, site = overview(workspace)
    assert [(lang.code, lang.folder) for lang in site.languages] == [("en", "docs/en"), ("es", "docs/es")]
    assert "Translations (not listed here): es (docs/es/, 2 pages)" in text
    assert "Pages (3 of 3, in navigation order):\ndocs/en/index.md\ndocs/en/guide/usage.md\n" in text
    assert "docs/es/index.md" not in text
    assert "Default language: en; translations: es (docs/es/)" in site.describe()
    workspace.write("docs/es/guide/more.md", "# Más\n".encode())
    workspace.write("docs/en/guide/more.md", b"# More\n")
    assert [p.path for p in check_docs(workspace).problems] == ["docs/en/guide/more.md"]


def test_mkdocs_i18n_with_one_language_or_odd_settings_is_one_language(open_workspace):
    for plugin in (
        "- i18n",
        "- i18n:\n      languages: [{locale: en, default: true}]",
        "- i18n:\n      languages: 7",
        "- i18n:\n      languages: [{locale: ../x}, {locale: en}]",
    ):
        site = detect_site(
            open_workspace({"mkdocs.yml": f"site_name: D\nplugins:\n  {plugin}\n", "docs/index.md": "# Home\n"})
        )
        assert (site.framework, site.languages) == ("mkdocs", []), plugin


# --- Sphinx ----------------------------------------------------------------------------------------------------

SPHINX = {
    "docs/conf.py": "project = 'X'\nmaster_doc = 'contents'\nextensions = ['myst_parser']\n",
    "docs/contents.rst": "X\n=\n\n.. toctree::\n   :maxdepth: 2\n\n   tutorial/index\n   Reference <api>\n"
    "   https://example.com\n   self\n",
    "docs/tutorial/index.md": "# Tutorial\n\n```{toctree}\n:glob:\n\nstep-*\nzz-last\n```\n",
    "docs/tutorial/step-2.md": "# Step 2\n",
    "docs/tutorial/step-1.md": "# Step 1\n\n```{toctree}\nindex\n```\n",  # back to its parent: once only
    "docs/tutorial/zz-last.rst": "Last\n====\n",
    "docs/api.rst": "API\n===\n",
    "docs/aaa-orphan.md": "---\norphan: true\n---\n# Orphan\n",
}


def test_sphinx_overview_lists_pages_in_toctree_order_from_the_root_document(open_workspace):
    workspace = open_workspace(SPHINX)
    site = detect_site(workspace)
    assert navigation_order(Tree(workspace), site) == [
        "docs/contents.rst",
        "docs/tutorial/index.md",
        "docs/tutorial/step-1.md",
        "docs/tutorial/step-2.md",
        "docs/tutorial/zz-last.rst",
        "docs/api.rst",
    ]
    text = repository_overview(workspace, site=site, nav_order=navigation_order(Tree(workspace), site))
    assert (
        "Pages (7 of 7, in navigation order):\ndocs/contents.rst\ndocs/tutorial/index.md\n"
        "docs/tutorial/step-1.md\ndocs/tutorial/step-2.md\ndocs/tutorial/zz-last.rst\ndocs/api.rst\n"
        "docs/aaa-orphan.md"
    ) in text  # pages no toctree reaches come last


def test_sphinx_toctree_order_is_bounded_when_every_page_globs_every_page(open_workspace):
    pages = {f"docs/p{i:03}.md": f"# P{i}\n\n```{{toctree}}\n:glob:\n\n*\n```\n" for i in range(150)}
    workspace = open_workspace(
        {
            "docs/conf.py": "extensions = ['myst_parser']\n",
            **pages,
            "docs/index.md": "# Home\n\n```{toctree}\n:glob:\n\n*\n```\n",
        }
    )
    site = detect_site(workspace)
    assert navigation_order(Tree(workspace), site) == ["docs/index.md", *sorted(pages)]
