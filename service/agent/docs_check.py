"""The docs check the agent runs before finishing: what this run's changes broke in pages, links and navigation.

Every problem in a page the run changed is compared with the same check of that page at the run's start (for a
moved page, of the page it came from), and only new ones are reported; links in pages the run did not touch are
reported only when they landed at the start and no longer do. A repository's older problems do not hold the
agent up.
"""

import difflib
import logging
import posixpath
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cached_property

from service.agent.docs_navigation import navigation_problems
from service.agent.docs_report import DocsProblem, DocsReport
from service.agent.docs_translations import translation_problems
from service.agent.docsite.detect import (
    detect_site,
    extra_anchors,
    extra_links,
    has_extras,
    make_router,
    page_problems,
)
from service.agent.docsite.mkdocs_anchors import hook_may_write
from service.agent.docsite.pages import Link, LinkKind, ParsedPage
from service.agent.docsite.routing import Outcome, Verdict, split_target
from service.agent.docsite.site import SKIPPED_FOLDERS, DocsSite
from service.agent.docsite.sphinx import default_role_links
from service.agent.docsite.tree import Tree

log = logging.getLogger(__name__)
__all__ = ["DocsProblem", "DocsReport", "check_docs"]

PAGE_SUFFIXES = (".md", ".mdx", ".markdown", ".rst")
ROUTE_KEYS = ("slug", "id", "permalink")  # front matter that changes a page's route
_WORDS = re.compile(r"[^\W_]+")  # a label's words, which any text that references it holds


def check_docs(workspace, site: DocsSite | None = None) -> DocsReport:
    """Check what this run changed: links, anchors, front matter and JSX tags of changed pages, links and
    navigation entries its moves and deletes broke, and whether its new pages are in the navigation.

    `site` is the detected docs site (`detect_site`); it is detected here when not given. An unexpected error
    inside the check is logged and reported as the check's failure, never raised.
    """
    changes = workspace.changes()
    if not changes:
        return DocsReport()
    try:
        with workspace.start_view() as start:
            run = _Run(Tree(workspace), Tree(start), site or detect_site(workspace), changes)
            problems = _changed_page_problems(run)
            problems += _links_broken_elsewhere(run)
            problems += navigation_problems(run)
            problems += _redirects_to_add(run)
            problems += translation_problems(run)
    except Exception as exc:  # a bug or a hostile file must not end the run: the model and the PR are told
        log.exception("the docs check failed")
        return DocsReport(
            failure=f"an internal error stopped the check ({type(exc).__name__}); the changes were "
            "not checked, review links and navigation by hand"
        )
    problems = sorted(set(problems), key=lambda p: (p.path, p.line, p.message))
    return DocsReport(problems, pages_checked=len(run.changed_pages), notes=sorted(run.now.unknown))


@dataclass
class _State:
    """The check's view of one tree (now or at the start): files, parsed pages and the site's router."""

    tree: Tree
    site: DocsSite
    unknown: set[str] = field(default_factory=set)  # why links were not judged: routing the check cannot know
    pages: dict[str, ParsedPage] = field(default_factory=dict)  # with the links the framework adds

    @cached_property
    def extras(self) -> bool:
        return has_extras(self.site)

    @cached_property
    def router(self):
        return make_router(self.site, self.tree)

    def page(self, path: str) -> ParsedPage:
        if path not in self.pages:
            parsed = self.tree.page(path, self.site.page_mode(path))
            if self.extras and not parsed.uncheckable:  # read the text only where the framework adds to it
                text = self.tree.text(path) or ""
                extra, anchors = extra_links(self.site, path, text), extra_anchors(self.site, text)
                parsed = replace(parsed, links=parsed.links + extra, anchors=parsed.anchors | anchors)
            self.pages[path] = parsed
        return self.pages[path]


@dataclass
class _Run:
    now_tree: Tree
    start_tree: Tree
    site: DocsSite
    changes: dict[str, bytes | None]

    @cached_property
    def now(self) -> _State:
        return _State(self.now_tree, self.site)

    @cached_property
    def start(self) -> _State:
        return _State(self.start_tree, self.site)

    @cached_property
    def removed(self) -> set[str]:
        return {p for p, data in self.changes.items() if data is None and p in self.start_tree.files}

    @cached_property
    def added(self) -> set[str]:
        return {p for p, data in self.changes.items() if data is not None and p not in self.start_tree.files}

    @cached_property
    def changed_pages(self) -> list[str]:
        return sorted(p for p, data in self.changes.items() if data is not None and _is_page(self.site, p))

    @cached_property
    def moved_to(self) -> dict[str, str]:
        """Removed page -> the added page it most likely became."""
        return {old: new for new, old in sorted(self.moved_from.items(), reverse=True)}

    @cached_property
    def moved_from(self) -> dict[str, str]:
        """Added page -> the removed page it most likely was (same content, else same file name)."""
        pairs = {}
        removed = sorted(p for p in self.removed if _is_page(self.site, p))
        for page in sorted(self.added):
            same = [old for old in removed if self.start_tree.text(old) == self.now_tree.text(page)] or [
                old for old in removed if posixpath.basename(old) == posixpath.basename(page)
            ]
            if same:
                pairs[page] = same[0]
        return pairs


# --- pages the run changed -----------------------------------------------------------------------------------


def _changed_page_problems(run: _Run) -> list[DocsProblem]:
    problems = []
    for page in run.changed_pages:
        origin = run.moved_from.get(page, page if page not in run.added else None)
        before = _page_problems(run.start, origin) if origin else []
        found = _page_problems(run.now, page)
        # How many of each problem are new; which ones: those whose line text the start did not have.
        new = Counter(key for key, _ in found) - Counter(key for key, _ in before)
        old_lines = _line_texts(run.start_tree, origin, before) if origin else Counter()
        lines = (run.now_tree.text(page) or "").split("\n")
        unmatched = []
        for key, problem in found:
            text = (key, _line(lines, problem.line))
            if old_lines[text] > 0:
                old_lines[text] -= 1
            else:
                unmatched.append((key, problem))
        for key, problem in unmatched + [item for item in found if item not in unmatched]:
            if new[key] > 0:
                new[key] -= 1
                problems.append(problem)
    return problems


def _line_texts(tree: Tree, page: str, found: list) -> Counter:
    lines = (tree.text(page) or "").split("\n")
    return Counter((key, _line(lines, problem.line)) for key, problem in found)


def _line(lines: list[str], number: int) -> str:
    return lines[number - 1].strip() if 0 < number <= len(lines) else ""


def _page_problems(state: _State, page: str) -> list[tuple[tuple, DocsProblem]]:
    """Every problem of one page in one state, each with a key that does not depend on lines or the page's path."""
    parsed = state.page(page)
    if parsed.uncheckable:
        return [
            (("uncheckable",), DocsProblem(page, 1, f"this page is {parsed.uncheckable}; its links were not checked"))
        ]
    found: list[tuple[tuple, DocsProblem]] = []
    if parsed.front_matter_error is not None:
        error = parsed.front_matter_error
        found.append((("front matter", error.message), DocsProblem(page, error.line, error.message)))
    found += [(("tag", p.message), DocsProblem(page, p.line, p.message)) for p in parsed.tag_problems]
    found += [
        (("page", message), DocsProblem(page, line, message))
        for line, message in page_problems(state.tree, state.site, page)
    ]
    shared = state.site.routing.get("shared_names") if state.site.framework == "sphinx" else None
    if shared is not None:  # names rst_prolog/rst_epilog define count on every page
        found += [
            (
                ("name", name),
                DocsProblem(
                    page, line, f"broken reference: `{name}`_ (this page has no section title or target named `{name}`)"
                ),
            )
            for line, name in parsed.unknown_names
            if name not in shared
        ]
    links = parsed.links
    if parsed.interpreted and state.site.framework == "sphinx":
        links = links + default_role_links(state.site, parsed.interpreted)
    for link in links:
        message = _link_problem(state, page, link)
        if message is not None:
            found.append(
                (("link", link.kind, link.target, message.split(" (")[0]), DocsProblem(page, link.line, message))
            )
    return found


def _link_problem(state: _State, page: str, link: Link) -> str | None:
    outcome = state.router.resolve(page, link)
    if outcome.verdict is Verdict.UNKNOWN:
        state.unknown.add(outcome.reason)
        return None
    if outcome.verdict is Verdict.OUTSIDE:
        return f"link to {link.target} points outside the repository"
    if outcome.verdict is Verdict.BROKEN:
        return _broken_message(link, outcome)
    if outcome.verdict is Verdict.OK and link.kind is LinkKind.URL:
        return _anchor_problem(state, page, link, outcome.landing)
    return None


def _broken_message(link: Link, outcome: Outcome) -> str:
    if link.kind is LinkKind.DOC:
        return f"broken document reference: {link.target} ({outcome.reason})"
    if link.kind is LinkKind.REF:
        return f"unknown label: {link.target} ({outcome.reason})"
    if link.kind is LinkKind.OPTION:
        return f"unknown option: {link.target} ({outcome.reason})"
    return f"broken link: {link.target} ({outcome.reason})"


def _anchor_problem(state: _State, page: str, link: Link, landing: str | None) -> str | None:
    anchor = split_target(link.target)[1]
    if anchor is None or landing is None or not _checks_anchors(state.site, landing):
        return None
    target = state.page(landing)
    if (
        target.uncheckable
        or target.includes
        or anchor.lower() in target.anchors
        or (state.site.framework == "sphinx" and anchor.lower() in target.labels)
        or (state.site.routing.get("page_hooks") and hook_may_write(anchor))
    ):
        return None
    where = "this page" if landing == page else landing
    close = difflib.get_close_matches(anchor.lower(), sorted(target.anchors), n=3)
    hint = (
        f"; did you mean {', '.join('#' + c for c in close)}?"
        if close
        else "; link to an existing heading or remove the anchor"
    )
    return f"broken anchor: {link.target} ({where} has no heading or id `{anchor}`){hint}"


def _checks_anchors(site: DocsSite, landing: str) -> bool:
    # Sphinx builds heading anchors only when configured to (MyST's `myst_heading_anchors`), and reST labels are
    # not headings.
    if site.framework == "sphinx":
        return bool(site.routing.get("heading_anchors")) and landing.lower().endswith(".md")
    return landing.lower().endswith((".md", ".mdx", ".markdown"))


# --- links elsewhere that the run broke --------------------------------------------------------------------


def _links_broken_elsewhere(run: _Run) -> list[DocsProblem]:
    """Links in pages the run did not touch that landed at the start and no longer do (moved or deleted pages,
    renamed headings, changed routes)."""
    existing_changed = [p for p in run.changed_pages if p not in run.added]
    lost_anchors = {p: run.start.page(p).anchors - run.now.page(p).anchors for p in existing_changed}
    lost_labels: set[str] = set()
    for page in existing_changed:
        lost_labels |= run.start.page(page).labels - run.now.page(page).labels
    for page in run.removed:
        lost_labels |= run.start.page(page).labels
    lost_options = _lost_options(run, existing_changed)
    route_changed = {
        p
        for p in existing_changed
        if any(run.start.page(p).front_matter.get(key) != run.now.page(p).front_matter.get(key) for key in ROUTE_KEYS)
    }
    affected = run.removed | {p for p, lost in lost_anchors.items() if lost} | route_changed
    if not affected and not lost_labels and not lost_options:
        return []
    names = set()
    for path in affected:
        names |= run.start.router.names(path)
    names.discard("")
    label_words = [_WORDS.findall(label) for label in lost_labels]
    # An :option: (or MyST {option}) reference names the option string (`-b`, which most texts hold) after the
    # role's name.
    option_words = [["option", name.lower()] for name in lost_options]
    problems = []
    for other in sorted(run.now_tree.files):
        if other in run.changes or not _is_page(run.site, other):
            continue
        if not run.now_tree.parsed(other, run.site.page_mode(other)):
            # Not parsed yet: parse it only when its text names one of the pages or lost labels (most pages do not).
            text = (run.now_tree.text(other) or "").lower()
            if not any(name in text for name in names) and not any(
                all(word in text for word in words) for words in label_words + option_words
            ):
                continue
        for link in _links_elsewhere(run, other):
            # MyST's `[text](label)` names a label as :ref: does.
            by_label = (
                link.target.lower() in lost_labels
                and link.kind in (LinkKind.REF, LinkKind.URL)
                or link.kind is LinkKind.OPTION
                and any(name in link.target for name in lost_options)
            )
            if link.kind in (LinkKind.REF, LinkKind.OPTION) and not by_label:
                continue
            if not by_label and not any(name in link.target.lower() for name in names):
                continue
            broken = _newly_broken(run, other, link, affected, by_label)
            if broken:
                problems.append(DocsProblem(other, link.line, *broken))
    return problems


def _lost_options(run: _Run, existing_changed: list[str]) -> set[str]:
    """Option strings whose `.. option::` the run removed (from a page it changed, moved or deleted)."""
    lost: set[tuple[str, str]] = set()
    for page in existing_changed:
        lost |= run.start.page(page).options - run.now.page(page).options
    for page in run.removed:
        lost |= run.start.page(page).options
    return {name for _, name in lost}


def _links_elsewhere(run: _Run, page: str) -> list[Link]:
    parsed = run.now.page(page)
    if parsed.interpreted and run.site.framework == "sphinx":
        # Under `default_role = "any"` a bare `name` may be a document (labels are followed through the lost
        # labels); it is judged only if it was one at the start (see _newly_broken).
        any_role = (run.site.routing.get("default_role") or "").removeprefix("std:") == "any"
        return parsed.links + [
            Link(link.line, link.target, LinkKind.DOC) if any_role else link
            for link in default_role_links(run.site, parsed.interpreted, every=any_role)
        ]
    return parsed.links


def _newly_broken(
    run: _Run, page: str, link: Link, affected: set[str], by_label: bool = False
) -> tuple[str, str] | None:
    """The message and kind (see DocsProblem) of a link the run broke, or None."""
    before = run.start.router.resolve(page, link)
    if not before.ok or (before.landing not in affected and not by_label):
        return None
    after = run.now.router.resolve(page, link)
    if before.landing in run.removed and not after.ok:
        # The page that served it is gone: what else might serve it now (another app's route) is not a reason
        # to stay silent.
        now = run.moved_to.get(before.landing)
        fate = f"moved; now `{now}`" if now else "deleted"
        return f"link to {link.target}, which this run moved or deleted", f"links to `{before.landing}` ({fate})"
    if after.verdict is Verdict.UNKNOWN:
        run.now.unknown.add(after.reason)
        return None
    if not after.ok:
        return (
            f"link to {link.target} no longer resolves after this run ({after.reason or after.verdict.value})",
            f"links to `{before.landing}` that no longer resolve after this run",
        )
    # An anchor the start already lacked (one a theme's hook adds, say) is not this run's doing; the page it is on
    # going away is.
    if (
        link.kind is LinkKind.URL
        and _anchor_problem(run.now, page, link, after.landing)
        and not _anchor_problem(run.start, page, link, before.landing)
    ):
        anchor = split_target(link.target)[1]
        return (
            f"link to {link.target}: this run removed the anchor `{anchor}` from {after.landing} (a heading "
            "was renamed or deleted); point the link at the new heading",
            f"links to `{after.landing}#{anchor}`, an anchor this run removed (a heading was renamed or "
            "deleted); point them at the new heading",
        )
    return None


def _redirects_to_add(run: _Run) -> list[DocsProblem]:
    """On a site that keeps redirects, each page this run moved needs one from its old address, so links from
    outside the repository and readers' bookmarks keep working."""
    place = run.now.router.redirect_place()
    if place is None:
        return []
    problems = []
    for page, old in sorted(run.moved_from.items()):
        source, target = run.start.router.page_address(old), run.now.router.page_address(page)
        if source and source != target and not run.now.router.redirected(source):
            problems.append(
                DocsProblem(
                    page,
                    1,
                    f"this page moved from {old}: add a redirect from `{source}` to "
                    f"`{target or page}` in {place}, as the site does for moved pages",
                )
            )
    return problems


def _is_page(site: DocsSite, path: str) -> bool:
    # A page of the site, or any Markdown or reST file outside dependency and hidden folders (a README's links
    # count too).
    if site.is_page(path):
        return True
    if not path.lower().endswith(PAGE_SUFFIXES):
        return False
    return not any(part in SKIPPED_FOLDERS or part.startswith(".") for part in path.split("/")[:-1])
