"""Fumadocs by its own rules, on a small site modelled on real ones: `defineDocs({dir})`, the loader's
`baseUrl`, `meta.json` pages (by name, "..." for the rest, separators, links), `(group)` folders, and
`x.<locale>.mdx` translations that fall back to the default language."""

import json

from service.agent.docs_check import check_docs
from service.agent.docsite.detect import detect_site


def messages(report) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in report.problems]


FUMADOCS = {
    "source.config.ts": "import { defineConfig, defineDocs, frontmatterSchema, metaSchema } from "
    "'fumadocs-mdx/config';\n\nexport const docs = defineDocs({\n  dir: 'content/docs',\n"
    "  docs: { schema: frontmatterSchema },\n  meta: { schema: metaSchema },\n});\n\n"
    "export default defineConfig({ mdxOptions: {} });\n",
    "lib/source.ts": "import { docs } from '@/.source';\nimport { loader } from 'fumadocs-core/source';\n"
    "import { i18n } from '@/lib/i18n';\n\nexport const source = loader({\n  baseUrl: '/docs',\n"
    "  source: docs.toFumadocsSource(),\n  i18n,\n});\n",
    "lib/i18n.ts": "import { defineI18n } from 'fumadocs-core/i18n';\n\nexport const i18n = defineI18n({\n"
    "  defaultLanguage: 'en',\n  languages: ['en', 'cn'],\n});\n",
    "public/docs/layout.png": b"\x89PNG\0",
    "app/(home)/page.tsx": "export default function Home() { return <main>Home</main>; }\n",
    "content/docs/meta.json": json.dumps(
        {
            "title": "Docs",
            "pages": [
                "index",
                "---Getting Started---",
                "installation",
                "[GitHub](https://github.com/acme/kit)",
                "ui",
                "...integrations",
            ],
        },
        indent=2,
    )
    + "\n",
    "content/docs/index.mdx": "---\ntitle: Introduction\n---\n\nStart with [installation](/docs/installation) or "
    '[the theme](./ui/theme.mdx#colors).\n\n<Cards>\n  <Card title="OpenAPI" '
    'href="/docs/openapi" />\n</Cards>\n',
    "content/docs/installation.mdx": "---\ntitle: Installation\n---\n\n## Requirements\n\nThen [theme it]"
    "(/docs/ui/theme).\n",
    "content/docs/installation.cn.mdx": "---\ntitle: 安装\n---\n\n## 要求\n",
    "content/docs/ui/meta.json": json.dumps({"title": "UI", "pages": ["index", "..."]}) + "\n",
    "content/docs/ui/index.mdx": "---\ntitle: UI\n---\n\nSee [theme](theme).\n",
    "content/docs/ui/theme.mdx": "---\ntitle: Theme\n---\n\n## Color palette [#colors]\n",  # its own id
    "content/docs/ui/shared.mdx": "---\ntitle: Shared\n---\n\n<include>../installation.mdx</include>\n",
    "content/docs/integrations/openapi.mdx": "---\ntitle: OpenAPI\n---\n\nBack to [install](/docs/installation"
    "#requirements).\n",
    "content/docs/(guides)/deploy.mdx": "---\ntitle: Deploy\n---\n",
}


def test_fumadocs_is_detected_with_its_docs_folder_and_languages(open_workspace):
    site = detect_site(open_workspace(FUMADOCS))
    assert (site.framework, site.config_path, site.docs_root) == ("fumadocs", "source.config.ts", "content/docs")
    assert [(lang.code, lang.suffix) for lang in site.languages] == [("en", ""), ("cn", "cn")]
    assert site.page_count == 8
    text = site.describe()
    assert text.startswith("Docs site: Fumadocs (detected from source.config.ts).") and "meta.json" in text
    assert len(text) < 800  # the system prompt's paragraph stays short


def test_fumadocs_a_new_page_in_the_sites_style_passes(open_workspace):
    workspace = open_workspace(FUMADOCS)
    workspace.write(
        "content/docs/ui/layout.mdx",
        b"---\ntitle: Layout\n---\n\nPair with [the theme](/docs/ui/theme"
        b"#colors), [deploy](/docs/deploy), [theme](./theme.mdx), "
        b"[up](../installation), [in Chinese](/cn/docs/ui/theme) "
        b"and [home](/). ![shot](/docs/layout.png) [included](/docs/ui/shared#requirements)\n",
    )
    report = check_docs(workspace)
    assert report.problems == []
    assert report.notes == [
        "links of the form `/x` outside the docs' base URL are served by the app's other routes: not checked"
    ]


def test_fumadocs_broken_routes_and_pages_missing_from_meta_json(open_workspace):
    workspace = open_workspace(FUMADOCS)
    workspace.write(
        "content/docs/faq.mdx",
        b"---\ntitle: FAQ\n---\n\n[typo](/docs/ui/themes) [anchor](/docs/installation#requirement)\n",
    )
    workspace.write("content/docs/faq.cn.mdx", b"---\ntitle: FAQ\n---\n")  # a translation: listed by faq
    assert messages(check_docs(workspace)) == [
        (
            "content/docs/faq.mdx",
            'new page is not in the navigation, so readers cannot find it: add "faq" to '
            '`pages` in content/docs/meta.json (or "..." to list the rest)',
        ),
        (
            "content/docs/faq.mdx",
            "broken anchor: /docs/installation#requirement (content/docs/installation.mdx has "
            "no heading or id `requirement`); did you mean #requirements?",
        ),
        ("content/docs/faq.mdx", "broken link: /docs/ui/themes (no page has the route /docs/ui/themes)"),
    ]


def test_fumadocs_a_move_breaks_links_and_meta_entries(open_workspace):
    workspace = open_workspace(FUMADOCS)
    workspace.move("content/docs/installation.mdx", "content/docs/setup.mdx")
    found = messages(check_docs(workspace))
    assert ("content/docs/index.mdx", "link to /docs/installation, which this run moved or deleted") in found
    assert (
        "content/docs/integrations/openapi.mdx",
        "link to /docs/installation#requirements, which this run moved or deleted",
    ) in found
    assert any(path == "content/docs/meta.json" and "`installation`" in message for path, message in found)
    assert (
        "content/docs/installation.cn.mdx",
        "this cn translation of content/docs/installation.mdx stays at the old "
        "path after the run moved the page to content/docs/setup.mdx: move it to content/docs/setup.cn.mdx",
    ) in found


def test_fumadocs_an_invalid_meta_json_is_reported_when_the_run_changed_it(open_workspace):
    workspace = open_workspace(FUMADOCS)
    workspace.write("content/docs/ui/meta.json", b'{"title": "UI", "pages": ["index", ]}\n')
    found = messages(check_docs(workspace))
    assert len(found) == 1 and found[0][0] == "content/docs/ui/meta.json" and "not valid JSON" in found[0][1]


def test_fumadocs_a_folder_that_lost_its_last_page_still_has_its_meta_entries_checked(open_workspace):
    workspace = open_workspace(FUMADOCS)
    workspace.delete("content/docs/ui/index.mdx")
    workspace.delete("content/docs/ui/theme.mdx")
    found = messages(check_docs(workspace))
    assert (
        "content/docs/ui/meta.json",
        "navigation entry `index` points to content/docs/ui/index.mdx, which this "
        "run moved or deleted; update the entry to the page's new path or remove "
        "it",
    ) in found


def test_fumadocs_a_page_left_out_with_a_bang_needs_no_entry(open_workspace):
    meta = json.loads(FUMADOCS["content/docs/meta.json"])
    workspace = open_workspace(
        {**FUMADOCS, "content/docs/meta.json": json.dumps({**meta, "pages": meta["pages"] + ["!legacy"]}, indent=2)}
    )
    workspace.write("content/docs/legacy.mdx", b"---\ntitle: Legacy\n---\n")
    workspace.write("content/docs/other.mdx", b"---\ntitle: Other\n---\n")
    assert [path for path, _ in messages(check_docs(workspace))] == ["content/docs/other.mdx"]
