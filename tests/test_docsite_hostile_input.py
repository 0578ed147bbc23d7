"""Docs-site input the type checker showed could crash the docs check is reported or skipped instead."""

from service.agent.docsite import starlight
from service.agent.docsite.jsx import scan_tags
from service.agent.docsite.site import DocsSite, Navigation


def test_a_stray_equals_sign_or_brace_in_a_tag_is_skipped():
    tags, unfinished = scan_tags('<Foo =x>text</Foo>\n<Card title="a" }>b</Card>')
    assert unfinished is None
    assert [(t.name, t.closing, t.attrs) for t in tags] == [
        ("Foo", False, {"x": None}),
        ("Foo", True, {}),
        ("Card", False, {"title": "a"}),
        ("Card", True, {}),
    ]


def test_a_sidebar_slug_that_climbs_out_of_the_repository_is_an_entry_without_a_page():
    site = DocsSite("starlight", "astro.config.mjs", "src/content/docs")
    result = Navigation()
    starlight._add(result, site, {}, "astro.config.mjs", 7, "../../../../etc/passwd")
    [entry] = result.entries
    assert (entry.line, entry.targets, entry.found) == (7, (), False)
