"""The docs check's translation findings: a page the run moved whose translations it left at the old path.

Frameworks find a translation by its page's path (Docusaurus `i18n/<locale>/…/current/x.md`, locale folders,
`x.<locale>.md`), so a translation left behind is no longer served with its page. `run` is the docs check's view
of one run.
"""

import posixpath

from service.agent.docs_report import DocsProblem
from service.agent.docsite.site import DocsSite, Language


def translation_problems(run) -> list[DocsProblem]:
    """One problem per translation of a moved page that still sits at the page's old path."""
    site: DocsSite = run.site
    if len(site.languages) < 2:
        return []
    problems = []
    for new, old in sorted(run.moved_from.items()):
        if site.language_of(old) is not None or site.language_of(new) is not None:
            continue  # the run moved a translation itself
        if run.now.page(new).front_matter.get("translationKey"):
            continue  # Hugo pairs translations by this key, not by path
        for language in site.languages[1:]:
            left, wanted = _translation(site, language, old), _translation(site, language, new)
            if left and wanted and run.now_tree.is_file(left) and not run.now_tree.is_file(wanted):
                problems.append(
                    DocsProblem(
                        left,
                        1,
                        f"this {language.code} translation of {old} stays at the old "
                        f"path after the run moved the page to {new}: move it to "
                        f"{wanted}",
                    )
                )
    return problems


def _translation(site: DocsSite, language: Language, page: str) -> str | None:
    """Where `language`'s translation of the default-language `page` lives; None when it cannot be said."""
    if site.root_of(page) != site.docs_root:
        return None  # an older version's page, or outside the docs
    root = site.languages[0].folder  # the default language's own folder (`docs/en/` on MkDocs' folder layout)
    if root and not page.startswith(root + "/"):
        return None
    relative = page[len(root) + 1 :] if root else page
    if language.suffix:
        stem, extension = posixpath.splitext(page)
        return f"{stem}.{language.suffix}{extension}"
    return f"{language.folder}/{relative}" if language.folder else relative
