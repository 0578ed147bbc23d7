"""The docs check's navigation findings: entries without a page, new pages missing from it, files it cannot read.

Entries that were already broken at the run's start are left be; `run` is the docs check's view of one run.
"""

from service.agent.docs_report import DocsProblem
from service.agent.docsite.detect import read_navigation, suggest_entry
from service.agent.docsite.limits import Uncheckable
from service.agent.docsite.site import NavEntry, Navigation


def navigation_problems(run) -> list[DocsProblem]:
    """Problems in the site's navigation this run caused: unreadable navigation files it changed, entries it
    broke, and its new pages that no entry lists."""
    site = run.site
    watched = {site.config_path, *site.nav_files}
    if site.framework == "markdown" or not any(p in watched or site.is_page(p) for p in run.changes):
        return []
    try:
        navigation = read_navigation(run.now_tree, site)
    except Uncheckable as exc:
        where = exc.path or site.config_path or ""
        return [DocsProblem(where, 1, f"{where} is {exc}, so the navigation was not checked")]
    problems = [
        DocsProblem(e.file, e.line, f"{e.message}; fix it so the site builds")
        for e in navigation.errors
        if e.file in run.changes
    ]
    broken = [entry for entry in navigation.entries if not entry.found]
    if broken:
        problems += _broken_entry_problems(run, broken)
    missing = _pages_missing_from(run, navigation)
    problems += missing
    if any(p in watched or _holds_toctree(run, p) for p in run.changes):
        problems += _pages_dropped_from(run, navigation)
    problems += _unreadable_entries(run, navigation, bool(missing))
    return problems


def _holds_toctree(run, path: str) -> bool:
    # Sphinx's navigation lives in the pages' toctrees.
    return (
        run.site.framework == "sphinx"
        and run.site.is_page(path)
        and any("toctree" in (tree.text(path) or "") for tree in (run.now_tree, run.start_tree))
    )


def _pages_dropped_from(run, navigation: Navigation) -> list[DocsProblem]:
    """Pages that are still there and that the navigation listed at the start but no longer lists."""
    if not navigation.complete or navigation.errors:
        return []  # a navigation file that does not parse drops its pages: its error says what to fix
    try:
        before = read_navigation(run.start_tree, run.site)
    except Uncheckable:
        return []
    listed_before = {t for e in before.entries if e.found for t in e.targets}
    listed_now = {t for e in navigation.entries if e.found for t in e.targets}
    problems = []
    for page in sorted(listed_before - listed_now):
        if page not in run.now_tree.files or page in run.changes or page in run.removed or navigation.lists(page):
            continue
        if run.site.needs_nav_entry(page, run.now_tree.text(page) or ""):
            problems.append(
                DocsProblem(
                    page,
                    1,
                    "this run removed the page from the navigation, so readers cannot "
                    "find it: "
                    + suggest_entry(run.now_tree, run.site, page)
                    + ", or delete the page if it is no longer wanted",
                )
            )
    return problems


def _unreadable_entries(run, navigation: Navigation, pages_missing: bool) -> list[DocsProblem]:
    """Each navigation entry that could not be read, once: when it is new in a file the run changed, or when a
    new page is reported missing (the skipped entry might be what lists it)."""
    if not navigation.unreadable:
        return []
    if pages_missing:
        fresh = navigation.unreadable
    else:
        try:
            before = read_navigation(run.start_tree, run.site)
        except Uncheckable:
            before = Navigation()
        known = {(e.file, e.message) for e in before.unreadable}
        fresh = [e for e in navigation.unreadable if e.file in run.changes and (e.file, e.message) not in known]
    return [
        DocsProblem(
            e.file, e.line, f"{e.message}; it was skipped, so pages it lists count as missing from the navigation"
        )
        for e in dict.fromkeys(fresh)
    ]


def _broken_entry_problems(run, broken: list[NavEntry]) -> list[DocsProblem]:
    # Entries that were already broken at the start are not this run's doing and are left be.
    try:
        before = read_navigation(run.start_tree, run.site)
    except Uncheckable:
        before = Navigation(complete=False)
    found_before = {(e.file, e.ref): e for e in before.entries if e.found}
    broken_before = {(e.file, e.ref) for e in before.entries if not e.found}
    problems = []
    for entry in broken:
        key = (entry.file, entry.ref)
        if key in broken_before and key not in found_before:
            continue
        earlier = found_before.get(key)
        removed = [t for t in (earlier.targets if earlier else entry.targets) if t in run.removed]
        if removed:
            message = (
                f"navigation entry `{entry.ref}` points to {removed[0]}, which this run moved or deleted; "
                "update the entry to the page's new path or remove it"
            )
        else:
            looked = ", ".join(entry.targets[:2]) or "a page inside the repository"
            message = (
                f"navigation entry `{entry.ref}` points to no page (looked for {looked}); create the page "
                "or fix the entry"
            )
        problems.append(DocsProblem(entry.file, entry.line, message))
    return problems


def _pages_missing_from(run, navigation: Navigation) -> list[DocsProblem]:
    if not navigation.complete:
        return []  # part of the navigation could not be read, so any page may be listed there
    problems = []
    for page in sorted(run.added):
        text = run.now_tree.text(page) or ""
        if run.site.needs_nav_entry(page, text) and not navigation.lists(page):
            problems.append(
                DocsProblem(
                    page,
                    1,
                    "new page is not in the navigation, so readers cannot find it: "
                    + suggest_entry(run.now_tree, run.site, page),
                )
            )
    return problems
