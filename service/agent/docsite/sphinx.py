"""Sphinx sites: `conf.py`, its source folder and the `toctree` directives that make the navigation."""

import posixpath
import re

from service.agent.docsite.links import is_external
from service.agent.docsite.site import DocsSite, Navigation, NavEntry, read_text

CONFIG_NAMES = ("conf.py",)
# Suffixes a toctree entry may stand for (nbsphinx and myst-nb add notebooks).
DOCUMENT_SUFFIXES = (".rst", ".md", ".txt", ".ipynb")
_ROOT_DOC = re.compile(r"^(?:root_doc|master_doc)\s*=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
_EXCLUDES = re.compile(r"^exclude_patterns\s*=\s*\[(.*?)\]", re.MULTILINE | re.DOTALL)
_STRING = re.compile(r"['\"]([^'\"]+)['\"]")
_RST_TOCTREE = re.compile(r"^(\s*)\.\.\s+toctree::")
_MYST_TOCTREE = re.compile(r"^\s*(`{3,}|:{3,})\{toctree\}")
_TITLED = re.compile(r"^(.*?)\s*<([^<>]+)>$")


def detect(workspace, config_path: str, files: set[str]) -> DocsSite | None:
    """The Sphinx site whose `conf.py` is `config_path`, or None when that file is not a Sphinx config."""
    text = read_text(workspace, config_path) or ""
    source = posixpath.dirname(config_path)
    prefix = f"{source}/" if source else ""
    if not any(word in text for word in ("sphinx", "extensions", "html_theme")) \
            and not any(f"{prefix}index{s}" in files for s in (".rst", ".md")):
        return None
    suffixes = (".rst", ".md") if "myst" in text else (".rst",)
    root_doc = _ROOT_DOC.search(text)
    root_doc = root_doc.group(1) if root_doc else "index"
    root_page = next((f"{prefix}{root_doc}{s}" for s in suffixes if f"{prefix}{root_doc}{s}" in files), None)
    excludes = _EXCLUDES.search(text)
    ignored = [f"/{prefix}{pattern}" for pattern in _STRING.findall(excludes.group(1))] if excludes else []
    start = f", starting at {root_page}" if root_page else ""
    hint = (f"Navigation is the `toctree` directives in the pages{start}: entries are document names relative to "
            "the page that holds the toctree, without the extension. New pages must be added to the toctree of "
            "the page above them (or marked `:orphan:`).")
    return DocsSite("sphinx", config_path, source, nav_files=[root_page] if root_page else [], nav_hint=hint,
                    page_suffixes=suffixes, ignored=(f"/{prefix}_build", *ignored),
                    unlisted_ok=(f"/{prefix}{root_doc}.*",), explicit_nav=True, unlisted_keys=("orphan",))


def navigation(workspace, site: DocsSite, files: set[str]) -> Navigation:
    """Every toctree entry of the site's pages, with the documents they stand for."""
    prefix = f"{site.docs_root}/" if site.docs_root else ""
    globs = [f"{prefix}**/*{s}" if prefix else f"*{s}" for s in site.page_suffixes]
    holders = sorted({m.path for m in workspace.search(r"toctree", globs=globs, max_matches=20_000)})
    result = Navigation()
    for page in holders:
        if site.is_page(page):
            for line, raw, glob in toctree_entries(read_text(workspace, page) or "", markdown=page.endswith(".md")):
                _add_entry(result, site, files, page, line, raw, glob)
    return result


def toctree_entries(text: str, *, markdown: bool) -> list[tuple[int, str, bool]]:
    """(line, entry as written, whether the toctree has :glob:) for every toctree entry in a page."""
    lines = text.splitlines()
    found = []
    for index, line in enumerate(lines):
        rst = _RST_TOCTREE.match(line)
        myst = _MYST_TOCTREE.match(line) if markdown else None
        if rst:
            found += _rst_block(lines, index + 1, len(rst.group(1)))
        elif myst:
            found += _myst_block(lines, index + 1, myst.group(1))
    return found


def _rst_block(lines: list[str], start: int, indent: int) -> list[tuple[int, str, bool]]:
    body = []
    for index in range(start, len(lines)):
        line = lines[index]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append((index + 1, line.strip()))
    return _entries(body)


def _myst_block(lines: list[str], start: int, fence: str) -> list[tuple[int, str, bool]]:
    body, in_yaml = [], False
    for index in range(start, len(lines)):
        stripped = lines[index].strip()
        if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
            break
        if stripped == "---" and (in_yaml or not body):
            in_yaml = not in_yaml
            body.append((index + 1, ":options:"))
            continue
        body.append((index + 1, f":{stripped}" if in_yaml and stripped else stripped))
    return _entries(body)


def _entries(body: list[tuple[int, str]]) -> list[tuple[int, str, bool]]:
    glob = any(text.replace(" ", "") in (":glob:", ":glob:true") for _, text in body)
    return [(number, text, glob) for number, text in body if text and not text.startswith(":")]


def _add_entry(result: Navigation, site: DocsSite, files: set[str], page: str, line: int, raw: str,
               glob: bool) -> None:
    titled = _TITLED.match(raw)
    target = titled.group(2).strip() if titled else raw
    if target == "self" or is_external(target):
        return
    folder = site.docs_root if target.startswith("/") else posixpath.dirname(page)
    name = posixpath.normpath(posixpath.join(folder, target.lstrip("/")))
    if name == ".." or name.startswith("../"):
        return
    stem, suffix = posixpath.splitext(name)
    name = stem if suffix in DOCUMENT_SUFFIXES else name
    if glob and any(c in target for c in "*?["):
        result.patterns.append("/" + name)
        return
    targets = tuple(name + s for s in DOCUMENT_SUFFIXES)
    result.entries.append(NavEntry(page, line, raw, targets, any(t in files for t in targets)))


def suggest_entry(site: DocsSite, page: str, files: set[str]) -> str:
    """How to list `page` in the navigation."""
    folder = posixpath.dirname(page)
    indexes = [f"{folder}/index{s}" if folder else f"index{s}" for s in site.page_suffixes]
    holder = next((p for p in indexes if p in files and p != page), site.nav_files[0] if site.nav_files else None)
    if holder is None:
        return "add it to the toctree of the page above it"
    name = posixpath.relpath(posixpath.splitext(page)[0], posixpath.dirname(holder) or ".")
    return f"add `{name}` to the toctree in {holder}"
