"""Bad or hostile configs of the frameworks detected by path (VitePress, Hugo, Fumadocs, GitBook): the check
says what it cannot read, loses nothing and never crashes."""

from service.agent.docs_check import check_docs
from service.agent.docsite.detect import detect_site


def messages(report) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in report.problems]


def test_a_hugo_config_the_run_broke_is_reported_with_its_line(open_workspace):
    workspace = open_workspace(
        {
            "hugo.toml": "baseURL = 'https://x.example/'\ntitle = 'X'\n",
            "content/_index.md": "---\ntitle: X\n---\n",
            "content/docs/a.md": "# A\n",
        }
    )
    workspace.write("hugo.toml", b"baseURL = 'https://x.example/'\ntitle = 'X\n")
    report = check_docs(workspace)
    assert report.failure is None
    [(path, message)] = messages(report)
    assert path == "hugo.toml" and "is not valid TOML" in message and "fix it so the site builds" in message
    assert detect_site(workspace).framework == "hugo"  # still Hugo's: content/ is still its pages


def test_unreadable_or_computed_vitepress_configs_leave_a_working_check(open_workspace):
    for config in (
        "export default defineConfig({ themeConfig: { sidebar: [ { text: 'A', link: '/a' ",
        "export default defineConfig(" + "[" * 5000 + "]" * 5000 + ")",
        "module.exports = require('./shared')\n",
        "\0\0\0",
    ):
        workspace = open_workspace(
            {"docs/.vitepress/config.ts": config, "docs/index.md": "# Home\n\n[A](/a)\n", "docs/a.md": "# A\n"}
        )
        site = detect_site(workspace)
        assert (site.framework, site.docs_root) == ("vitepress", "docs"), config[:40]
        workspace.write("docs/b.md", b"# B\n\n[A](/a) [gone](/nope)\n")
        report = check_docs(workspace)
        assert report.failure is None, config[:40]
        assert ("docs/b.md", "broken link: /nope (no page has the route /nope)") in messages(report)


def test_fumadocs_meta_json_of_odd_shapes_is_read_or_skipped(open_workspace):
    workspace = open_workspace(
        {
            "source.config.ts": "import { defineDocs } from 'fumadocs-mdx/config';\nexport const docs = defineDocs({});\n",
            "content/docs/meta.json": '{"pages": [1, null, {"x": 1}, "../../../../etc/passwd", "index"]}\n',
            "content/docs/a/meta.json": '["not", "an", "object"]\n',
            "content/docs/index.mdx": "# Home\n",
            "content/docs/a/b.mdx": "# B\n",
        }
    )
    workspace.write("content/docs/a/c.mdx", b"# C\n\n[B](/docs/a/b)\n")
    report = check_docs(workspace)
    assert report.failure is None and report.problems == []


def test_a_gitbook_yaml_that_does_not_parse_or_climbs_out_is_not_followed(open_workspace):
    for config in (".gitbook.yaml: [", "root: ../../../../\n", "root: 7\nstructure: 3\n"):
        workspace = open_workspace(
            {
                ".gitbook.yaml": config,
                "README.md": "# Home\n",
                "SUMMARY.md": "* [Home](README.md)\n",
                "guide.md": "# Guide\n",
            }
        )
        site = detect_site(workspace)
        workspace.write("guide.md", b"# Guide\n\n[home](README.md) [nope](nope.md)\n")
        report = check_docs(workspace)
        assert report.failure is None, config
        assert ("guide.md", "broken link: nope.md (no file nope.md)") in messages(report), (config, site.framework)
