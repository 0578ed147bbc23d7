"""The docs check of a whole site as it stands: every page's links, anchors and references, and the navigation's
entries, without comparing with any earlier state (the round's own check, docs_check, reports only what a run
broke). Fix broken links runs it before the model, so a clean site costs no tokens (service.automations.docsfirst).
"""

import logging
import re

from service.agent.docs_check import _is_page, _page_problems, _State
from service.agent.docs_report import DocsProblem, DocsReport
from service.agent.docsite.detect import detect_site, read_navigation
from service.agent.docsite.limits import Uncheckable
from service.agent.docsite.pages import Link, LinkKind
from service.agent.docsite.routing import split_target
from service.agent.docsite.site import DocsSite
from service.agent.docsite.tree import Tree

log = logging.getLogger(__name__)

# The kinds of page problems (docs_check's keys) that are links a reader can follow and land nowhere: broken links,
# anchors and document references, unknown labels, and reST names no target defines.
LINK_KINDS = ("link", "name")
# What a heading's slug is made of. An anchor with anything else (`config.blog_dir`, `fn:7`, `9.7.0`) is an id some
# markup gave an element (an attribute list, a theme's hook, footnotes), which the check may not know of.
_SLUG = re.compile(r"[a-z0-9_-]+")
UNJUDGED_NOTE = (
    "{count} link(s) to anchors that are not heading slugs and that their page names (ids a plugin, "
    "hook, attribute list or footnote may make) were not judged"
)


def check_site(workspace, site: DocsSite | None = None) -> DocsReport:
    """Every page of the site (older versions' folders left out) checked for links that land nowhere, and every
    navigation entry for a page that exists. An unexpected error is logged and reported as the check's failure."""
    try:
        site = site or detect_site(workspace)
        tree = Tree(workspace)
        state = _State(tree, site)
        pages = site_pages(tree, site)
        problems, unjudged = [], 0
        for page in pages:
            for key, problem in _page_problems(state, page):
                if key[0] not in LINK_KINDS:
                    continue
                if key[0] == "link" and _named_elsewhere(state, page, key[2]):
                    unjudged += 1
                    continue
                problems.append(problem)
        problems += _navigation_problems(site, tree)
    except Exception as exc:  # a bug or a hostile file must not pass for a clean site
        log.exception("the docs check of the whole site failed")
        return DocsReport(failure=f"an internal error stopped the check ({type(exc).__name__})", whole_site=True)
    problems = sorted(set(problems), key=lambda p: (p.path, p.line, p.message))
    notes = sorted(state.unknown) + ([UNJUDGED_NOTE.format(count=unjudged)] if unjudged else [])
    return DocsReport(problems, pages_checked=len(pages), notes=notes, whole_site=True)


def site_pages(tree: Tree, site: DocsSite) -> list[str]:
    """The pages the whole-site check reads: the site's current pages, or on a site with no known framework every
    Markdown or reST file outside dependency and hidden folders."""
    return sorted(
        path
        for path in tree.files
        if (site.is_page(path) or (site.framework == "markdown" and _is_page(site, path)))
        and not site.is_versioned(path)
    )


def _named_elsewhere(state: _State, page: str, target: str) -> bool:
    """Whether a link's anchor is one the check cannot judge: not a heading slug, and named in its page's text.

    The round's own check reports only what a run broke, so an id made by markup it does not read costs nothing
    there; here the same id would be reported on every run and start the model each time.
    """
    anchor = split_target(target)[1]
    if anchor is None or _SLUG.fullmatch(anchor):
        return False
    landing = state.router.resolve(page, Link(0, target, LinkKind.URL)).landing
    text = state.tree.text(landing or page) or ""
    label = anchor.split(":", 1)[1] if anchor.startswith(("fn:", "fnref:")) else None
    return anchor in text or (label is not None and f"[^{label}]" in text)


def _navigation_problems(site: DocsSite, tree: Tree) -> list[DocsProblem]:
    """Navigation files the framework could not read, and entries that name no page."""
    if site.framework == "markdown":
        return []
    try:
        navigation = read_navigation(tree, site)
    except Uncheckable as exc:
        where = exc.path or site.config_path or ""
        return [DocsProblem(where, 1, f"{where} is {exc}, so the navigation was not checked")]
    problems = [DocsProblem(e.file, e.line, f"{e.message}; fix it so the site builds") for e in navigation.errors]
    for entry in navigation.entries:
        if not entry.found:
            looked = ", ".join(entry.targets[:2]) or "a page inside the repository"
            problems.append(
                DocsProblem(
                    entry.file,
                    entry.line,
                    f"navigation entry `{entry.ref}` points to no page "
                    f"(looked for {looked}); fix the entry or remove it",
                    kind="navigation entries that point to no page",
                )
            )
    return problems
