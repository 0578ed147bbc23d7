"""GitBook sites: `.gitbook.yaml` (its `root` and `structure.summary`) or a `SUMMARY.md` table of contents, which
is the navigation; links are relative paths to files, and root-relative ones are not judged."""

import posixpath
import re

from service.agent.docsite.framework import listed_order
from service.agent.docsite.routing import Router, is_external, join, split_target, unknown
from service.agent.docsite.site import DocsSite, NavEntry, Navigation, read_text
from service.agent.docsite.tree import Tree
from service.agent.docsite.yamltext import YAMLError, load_yaml

CONFIG_NAMES = (".gitbook.yaml", "SUMMARY.md")
CONFIG_TAILS: tuple[str, ...] = ()
SUFFIXES = (".md",)
_ENTRY = re.compile(r"^\s*(?:[*+-]|\d+\.)\s+\[[^\]]*\]\(\s*<?([^)>\s]+)>?(?:\s+\"[^\"]*\")?\s*\)")
UNKNOWN_ROUTES = "links of the form `/x` are not checked: GitBook's routes for them are not modelled"
UNKNOWN_RELATIVE = (
    "relative links without a file extension that name no file are routes GitBook resolves, which "
    "the check does not model: not checked"
)


def detect(workspace, config_path: str, files: set[str]) -> DocsSite | None:
    """The GitBook site of `.gitbook.yaml`, or of a `SUMMARY.md` that lists pages (a guess without the former)."""
    folder = posixpath.dirname(config_path)
    if posixpath.basename(config_path) == ".gitbook.yaml":
        try:
            config = load_yaml(read_text(workspace, config_path) or "")
        except (YAMLError, ValueError):
            config = None
        config = config if isinstance(config, dict) else {}
        root = join(folder, str(config.get("root") or ".").strip("/") or ".")
        structure = config.get("structure")
        structure = structure if isinstance(structure, dict) else {}
        summary = join(root or "", str(structure.get("summary") or "SUMMARY.md")) if root is not None else None
        guessed = False
    else:
        root, summary, guessed = folder, config_path, True
        text = read_text(workspace, config_path) or ""
        if not any(_ENTRY.match(line) for line in text.splitlines()) or any(
            join(folder, name) in files for name in ("book.toml", "../book.toml")
        ):
            return None  # a summary of something else, or mdBook's
    if root is None or summary is None:
        return None
    hint = (
        f"Navigation is the table of contents in {summary}: a nested list of links to page files. New pages "
        "must be added to it. Links between pages are relative paths to their .md files."
    )
    evidence = config_path if not guessed else f"{config_path}, a table of contents in GitBook's form"
    return DocsSite(
        "gitbook",
        config_path,
        root,
        nav_files=[summary],
        nav_hint=hint,
        page_suffixes=SUFFIXES,
        ignored=(f"/{summary}",),
        explicit_nav=summary in files,
        routing={"summary": summary},
        detected_from=evidence,
        guessed=guessed,
    )


def navigation(tree: Tree, site: DocsSite) -> Navigation:
    """The pages SUMMARY.md links to, each with its line."""
    workspace, files = tree.workspace, tree.files
    summary = site.routing["summary"]
    text = read_text(workspace, summary)
    if text is None:
        return Navigation(complete=False)
    result = Navigation()
    folder = posixpath.dirname(summary)
    for number, line in enumerate(text.splitlines(), 1):
        match = _ENTRY.match(line)
        if not match or is_external(match.group(1)):
            continue
        written = split_target(match.group(1))[0]
        # A `/x.md` entry starts at the root GitBook syncs (the summary's own folder is the usual case).
        path = join(site.docs_root if written.startswith("/") else folder, written.lstrip("/"))
        if path is None:
            continue
        targets = (path,) if path.endswith(SUFFIXES) else (path + "/README.md", path + ".md")
        result.entries.append(NavEntry(summary, number, match.group(1), targets, any(t in files for t in targets)))
    return result


navigation_order = listed_order(navigation)


class GitBookRouter(Router):
    """Relative links to files and folders (a folder lands on its README.md); root-relative routes not judged."""

    index_names = ("README.md", "index.md")

    def route(self, page: str, path: str):
        if path.startswith("/"):
            return unknown(UNKNOWN_ROUTES)
        stem, extension = posixpath.splitext(path)
        if extension.lower() == ".html":  # legacy GitBook builds x.md as x.html and README.md as index.html
            name = "README.md" if posixpath.basename(stem) == "index" else posixpath.basename(stem) + ".md"
            built = super().route(page, posixpath.join(posixpath.dirname(stem), name))
            if built.ok:
                return built
        outcome = super().route(page, path)
        if not outcome.ok and not extension:
            return unknown(UNKNOWN_RELATIVE)
        return outcome


def router(site: DocsSite, tree: Tree) -> Router:
    """The router for links on this GitBook site."""
    return GitBookRouter(site, tree)


def suggest_entry(tree: Tree, site: DocsSite, page: str) -> str:
    """How to list `page` in SUMMARY.md."""
    summary = site.routing["summary"]
    relative = posixpath.relpath(page, posixpath.dirname(summary) or ".")
    return f"add `* [Title]({relative})` to {summary}"
