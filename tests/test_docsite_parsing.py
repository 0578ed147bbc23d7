"""The docs site readers on their own: heading anchors, front matter, JSX tags, JS sidebars, toctrees, YAML tags."""

import pytest

from service.agent.docsite.anchors import github_slug, python_markdown_slug
from service.agent.docsite.frontmatter import FrontMatterError, front_matter_keys, parse_front_matter
from service.agent.docsite.jsliteral import OPAQUE, Str, exported_value
from service.agent.docsite.limits import Uncheckable
from service.agent.docsite.mdx import TagProblem
from service.agent.docsite.pages import Mode, Toctree, parse_page
from service.agent.docsite.yamltext import load_yaml


def anchor_ids(text: str) -> frozenset[str]:
    return parse_page(text, Mode.MDX).anchors


def tag_problems(text: str) -> list[TagProblem]:
    return parse_page(text, Mode.MDX).tag_problems


# --- anchors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "heading, github, mkdocs",
    [
        ("Getting Started", "getting-started", "getting-started"),
        ("What's new in v2.0?", "whats-new-in-v20", "whats-new-in-v20"),
        ("A  --  B", "a------b", "a-b"),
        ("Café & crème", "café--crème", "cafe-creme"),
        ("snake_case name", "snake_case-name", "snake_case-name"),
    ],
)
def test_slug_styles(heading, github, mkdocs):
    assert github_slug(heading) == github
    assert python_markdown_slug(heading) == mkdocs


def test_anchor_ids_cover_headings_duplicates_explicit_ids_and_html():
    page = """\
---
title: "# not a heading"
---
# Intro

## The `run` **command** and [links](x.md)

## Options
## Options

Setext heading
--------------

## Custom {#my-id}

<a id="legacy-anchor"></a>
<Accordion title="Why Copydesk">text</Accordion>

```md
## In a fence
```
"""
    ids = anchor_ids(page)
    assert {
        "intro",
        "the-run-command-and-links",
        "options",
        "options-1",
        "options_1",
        "setext-heading",
        "my-id",
        "legacy-anchor",
        "why-copydesk",
    } <= ids
    assert "custom" not in ids and "in-a-fence" not in ids and "not-a-heading" not in ids and "options-2" not in ids


# --- front matter --------------------------------------------------------------------------------------


def test_front_matter_parses_and_lists_keys():
    page = "---\ntitle: Setup\ntags: [a, b]\ndate: 2024-01-02\n---\n# Setup\n"
    assert parse_front_matter(page)["tags"] == ["a", "b"]
    assert front_matter_keys(page) == ["title", "tags", "date"]
    assert parse_front_matter("# No front matter\n---\n") == {}
    assert parse_front_matter("---\n---\nEmpty\n") == {}


@pytest.mark.parametrize(
    "page, line, start",
    [
        ("---\ntitle: Setup: the basics\n---\n", 2, "front matter is not valid YAML (mapping values are not allowed"),
        (
            "---\ntitle: A\ndescription: [unclosed\n---\n",
            3,
            "front matter is not valid YAML (while parsing a flow sequence: ",
        ),
        ("---\ntitle: Setup\n\n# Setup\n", 1, "the front matter that starts here is never closed"),
        ("---\n- a\n- b\n---\n", 1, "front matter must be a list of `key: value` lines, not a list"),
    ],
)
def test_bad_front_matter(page, line, start):
    with pytest.raises(FrontMatterError) as caught:
        parse_front_matter(page)
    assert caught.value.line == line and caught.value.message.startswith(start)
    assert front_matter_keys(page) == []


def test_yaml_with_tags_it_does_not_know_loads_as_plain_values():
    value = load_yaml("a: !ENV [KEY, default]\nb: !!python/name:os.system\nc: !relative $config_dir\n")
    assert value == {"a": ["KEY", "default"], "b": "", "c": "$config_dir"}


# --- MDX tags ------------------------------------------------------------------------------------------


def test_balanced_mdx_passes():
    page = """\
import {Chart} from '../components/chart'
export const meta = {
  wide: true,
}

<Tabs>
  <Tab title="a > b" icon={<Icon name="x" />}>
    Text with <br> and <img src="x.png"> and a < b, <https://example.com>, <me@example.com>.
    `<Inline>` code and {/* <Commented> */}
  </Tab>
</Tabs>
<Chart data={[{x: 1}]} />
<>fragment</>

```jsx
<Unclosed in a fence>
```
"""
    assert tag_problems(page) == []


def test_unclosed_and_stray_tags_are_reported_with_lines():
    page = '<Steps>\n  <Step title="One">\n  Do it.\n</Steps>\n\n</Note>\n<Card title="x"\n'
    assert tag_problems(page) == [
        TagProblem(2, "<Step> is never closed: add </Step> after its content, or end the tag with /> if it has none"),
        TagProblem(6, "</Note> closes a tag that is not open: remove it or add the opening <Note> before it"),
        TagProblem(7, "the tag <Card never ends: finish it with > or />"),
    ]


def test_jsx_inside_expressions_is_balanced_and_comparisons_are_not_tags():
    # Cards rendered from a list, as Docusaurus pages do; `<` in the JavaScript around them compares or types.
    page = """\
export const Cards = ({entries}) => (
  <div className="row">
    {entries.map((entry) => (

      <Card key={entry.slug} {...entry} />
    ))}
  </div>
);

{sections.filter((s, i) => i<limit).map((s: Section<string>) => <Card key={s.id} title={s.title} />)}

<ul>
{sections.map((s) => <li key={s.id}>{s.count < 3 ? 'few' : 'many'} <b>{s.name}</b></li>)}
</ul>

<Tabs render={() => <p>Don't switch yet</p>}>

Body text.

</Tabs>
"""
    assert tag_problems(page) == []
    # A tag the expression really leaves open is still reported.
    assert [p.line for p in tag_problems("{rows.map((r) => <Row key={r}>{r})}\n")] == [1]


def test_links_in_html_comments_are_not_links_in_mdx():
    page = """\
# Setup

<!--
Old steps, kept for later:
see [the old guide](./old-guide.md) and [the API](/docs/api/removed).
-->

Read [the guide](./guide.md) {/* not [this](./draft.md) */}.

```md
<!-- [kept](./in-code.md) -->
```
"""
    assert [link.target for link in parse_page(page, Mode.MDX).links] == ["./guide.md"]


# --- JavaScript sidebars -------------------------------------------------------------------------------


def test_exported_value_reads_literals_and_const_names():
    source = """\
// @ts-check
const guides = ['guides/a', "guides/b"];
/** @type {import('@docusaurus/plugin-content-docs').SidebarsConfig} */
module.exports = {
  main: ['intro', {type: 'category', label: 'Guides', items: guides, collapsed: false}],
  other: [`tmpl`, `${prefix}/x`, ...more, require('./api.js'), 'a' + 'b'],
};
"""
    value = exported_value(source)
    assert value["main"][0] == Str("intro", 5)
    assert value["main"][1]["items"] == [Str("guides/a", 2), Str("guides/b", 2)]
    assert value["main"][1]["collapsed"] is False
    assert value["other"] == [Str("tmpl", 6), OPAQUE, OPAQUE, OPAQUE, OPAQUE]


def test_exported_value_of_typescript_and_json():
    ts = "import type {S} from 'x';\nconst s: S = {a: ['x']} satisfies S;\nexport default s;\n"
    assert exported_value(ts) == {"a": [Str("x", 2)]}
    assert exported_value('{"a": [{"type": "doc", "id": "y"}]}') == {"a": [{"type": Str("doc", 1), "id": Str("y", 1)}]}
    assert exported_value("export default makeSidebars();\n") is OPAQUE


def test_exported_value_of_broken_code_ends_with_what_it_could_read():
    assert exported_value("module.exports = {a: 1 ], b: ['x' ) };")["b"][0] == Str("x", 1)
    assert exported_value("export default {a: [") == {"a": []}
    with pytest.raises(Uncheckable, match="nested deeper than 100 levels"):
        exported_value("[" * 5000)
    assert exported_value("const = ; module.exports = {'a' 'b': }") == {OPAQUE: OPAQUE}


# --- toctrees ------------------------------------------------------------------------------------------


def test_rst_and_myst_toctrees():
    rst = """\
Title
=====

.. toctree::
   :maxdepth: 2
   :glob:

   intro
   Guide <guide/index>
   reference/*

Text after the directive.
"""
    assert parse_page(rst, Mode.RST).toctrees == [
        Toctree(8, "intro", True),
        Toctree(9, "Guide <guide/index>", True),
        Toctree(10, "reference/*", True),
    ]
    myst = "# T\n\n:::{toctree}\n:hidden:\na\nb\n:::\n\n```{toctree}\n---\nglob: true\n---\nc/*\n```\n"
    assert parse_page(myst, Mode.MYST).toctrees == [
        Toctree(5, "a", False),
        Toctree(6, "b", False),
        Toctree(13, "c/*", True),
    ]
