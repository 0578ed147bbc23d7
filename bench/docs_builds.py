"""Compares the docs check with the frameworks' own strict builds on real MkDocs and Sphinx sites.

Run by hand: `.venv/bin/python bench/docs_builds.py [owner/name or bare repo ...]` (none: the default set in
bench/docs_repos.py).
Bring the repositories with the `fetch` tool; nothing here writes to them or commits anything.

Per repository, the site's tree is exported to a temporary folder and built with its own tool, in a venv of its
own under the cache folder (`--cache`, default ~/.cache/copydesk-bench/docs-builds; pip installs mkdocs,
mkdocs-material, sphinx, myst-parser and the site's `docs` requirements from pyproject.toml or a docs
requirements file, never into Copydesk's venv): `mkdocs build --strict` or `sphinx-build -n -W --keep-going -E`.
Then for each edit an agent makes (one-word edit, move a page, rename a heading, delete a page, add a page with
links, break a link) the same change is made to the exported tree and to a Copydesk workspace, the site is built
again and its new warnings (after minus the baseline, per file, line numbers ignored) are compared with what
`check_docs` reports on the workspace. Printed per site and overall: build problems the check reported, build
problems it missed, and check reports the build did not find, each shown so it can be classified (a real break
the build does not check, or false).
"""

import argparse
import hashlib
import io
import posixpath
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import docs_repos  # noqa: E402
from bench.docs_real import one_word_edit  # noqa: E402
from service.agent.docs_check import check_docs  # noqa: E402
from service.agent.docsite.detect import detect_site  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from service.workspace.overlay import Workspace  # noqa: E402

BASE_PACKAGES = ("mkdocs", "mkdocs-material", "sphinx", "myst-parser")
BUILD_SECONDS = 900
# The file a MkDocs warning is about: a page's links, or a blog post's metadata (Material's blog plugin).
_MKDOCS_FILE = re.compile(r"(?:Doc file|of post) '([^']+)'")
_SPHINX = re.compile(r"^(?P<file>[^\s:][^:]*?)(?::(?P<line>\d+))?: (?:WARNING|ERROR|CRITICAL): (?P<msg>.*)$")
_QUOTED = re.compile(r"""['"`]([^'"`]+)['"`]""")
_MD_LINK = re.compile(r"\]\(\s*([^)\s#]+\.md)(#[^)\s]*)?\)")
_MD_HEADING = re.compile(r"^(#{2,4})\s+(.+?)\s*$", re.M)


class BuildFailed(Exception):
    """The site's own build stopped (a missing plugin, a config error); the message is its last output."""


@dataclass(frozen=True)
class Warning_:
    path: str  # repository path of the file the warning is about ("" when it names none)
    text: str  # the message, line numbers and temporary folders taken out


@dataclass
class Outcome:
    site: str
    edit: str
    found: list[Warning_] = field(default_factory=list)  # new build warnings
    reported: list[str] = field(default_factory=list)  # check problems, "path:line message"
    matched: int = 0
    pairs: list[str] = field(default_factory=list)  # "warning <-> problem", for --show-matched
    missed: list[Warning_] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)


# --- the site's own build ---------------------------------------------------------------------------------


def site_requirements(root: Path) -> list[str]:
    """The site's docs requirements where they are simple: a `docs` (`doc`, `documentation`, `recommended`)
    dependency group or extra in pyproject.toml, or a docs requirements file (plain requirement lines)."""
    found: list[str] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        data = tomllib.loads(pyproject.read_text())
        for table in (data.get("dependency-groups", {}), data.get("project", {}).get("optional-dependencies", {})):
            for group in ("docs", "doc", "documentation", "recommended"):  # "recommended": Material's plugins
                found += [r for r in table.get(group, []) if isinstance(r, str)]
    for name in (
        "requirements.txt" if (root / "mkdocs.yml").is_file() else "docs/requirements.txt",
        "docs/requirements.txt",
        "requirements/docs.txt",
        "requirements-docs.txt",
        "docs-requirements.txt",
        "docs/requirements.in",
    ):
        path = root / name
        if path.is_file():
            found += [
                line.strip()
                for line in path.read_text().splitlines()
                if line.strip() and not line.startswith(("#", "-"))
            ]
    return sorted(set(found))


def build_venv(cache: Path, requirements: list[str]) -> Path:
    """A venv holding the build tools and `requirements`, made once per set of requirements under `cache`."""
    wanted = sorted({*BASE_PACKAGES, *requirements})
    venv = cache / hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:16]
    if not (venv / "ready").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        print(f"  pip install {' '.join(wanted)}", file=sys.stderr)
        subprocess.run(
            [str(venv / "bin/pip"), "install", "-q", *wanted],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        (venv / "ready").write_text("\n".join(wanted))
    return venv


def build(framework: str, venv: Path, tree: Path, config: str, docs_root: str) -> Counter:
    """The warnings of a strict build of the site in `tree`, as a multiset."""
    with tempfile.TemporaryDirectory(prefix="copydesk-build-") as out:
        if framework == "mkdocs":
            command = [str(venv / "bin/mkdocs"), "build", "--strict", "-f", str(tree / config), "-d", out]
        else:
            command = [
                str(venv / "bin/sphinx-build"),
                "-n",
                "-W",
                "--keep-going",
                "-E",
                "-q",
                "-b",
                "html",
                str(tree / posixpath.dirname(config)),
                out,
            ]
        done = subprocess.run(
            command,
            cwd=tree,
            capture_output=True,
            text=True,
            timeout=BUILD_SECONDS,
            env={
                "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
                "HOME": str(tree),
                "NO_COLOR": "1",
                "NO_MKDOCS_2_WARNING": "1",
                "LC_ALL": "C.UTF-8",
            },
        )
    output = (done.stderr + "\n" + done.stdout).replace(str(tree) + "/", "")
    fatal = re.search(r"^.*(Aborted with a|Configuration error|Extension error|Exception occurred).*$", output, re.M)
    if fatal:  # the build stopped before it looked at the pages: its warnings say nothing about them
        raise BuildFailed(output[max(0, fatal.start() - 600) : fatal.end()].strip())
    parse = _mkdocs_warnings if framework == "mkdocs" else _sphinx_warnings
    return Counter(parse(output, docs_root, config))


def _mkdocs_warnings(output: str, docs_root: str, config: str) -> list[Warning_]:
    found = []
    for line in output.splitlines():
        if not line.startswith(("WARNING", "ERROR")):
            continue
        text = re.sub(r"^(WARNING|ERROR)\s*-\s*", "", line).strip()
        if text.startswith("Aborted with") or "warnings in strict mode" in text:
            continue
        named = _MKDOCS_FILE.search(text)
        path = posixpath.join(docs_root, named.group(1)) if named else (config if "'nav'" in text else "")
        found.append(Warning_(path, text))
    return found


def _sphinx_warnings(output: str, docs_root: str, config: str) -> list[Warning_]:
    found = []
    for line in output.splitlines():
        match = _SPHINX.match(line.strip())
        if match:
            path = match.group("file")
            path = path.split(":docstring of")[0]
            found.append(Warning_(path if not path.startswith("/") else "", match.group("msg").strip()))
        elif re.match(r"^(WARNING|ERROR): ", line) and "build finished with problems" not in line:
            found.append(Warning_("", line.split(": ", 1)[1].strip()))
    return found


# --- the edits ---------------------------------------------------------------------------------------------


@dataclass
class Edit:
    name: str
    writes: dict[str, bytes | None]  # path -> new content (None: deleted)
    move: tuple[str, str] | None = None


def plan_edits(texts: dict[str, str], pages: list[str], framework: str, docs_root: str) -> list[Edit]:
    """One edit of each kind, on pages chosen the same way on every site (the most-linked ones where it matters)."""
    linked = _most_linked(texts, pages)
    edits = []
    prose = next((p for p in pages if one_word_edit(texts[p]) != texts[p].rstrip("\n") + "\n\nIndeed.\n"), pages[0])
    edits.append(Edit("one-word edit", {prose: one_word_edit(texts[prose]).encode()}))
    moved = linked[0]
    folder, name = posixpath.split(moved)
    edits.append(Edit("move a page", {}, (moved, posixpath.join(folder, "moved-by-bench", name))))
    renamed = _rename_heading(texts, pages)
    if renamed:
        edits.append(Edit("rename a heading", {renamed[0]: renamed[1].encode()}))
    deleted = linked[1] if len(linked) > 1 else linked[0]
    edits.append(Edit("delete a page", {deleted: None}))
    edits.append(Edit("add a page with links", _new_page(texts, pages, framework, docs_root)))
    broken = _break_link(texts, pages, framework)
    if broken:
        edits.append(Edit("break a link", {broken[0]: broken[1].encode()}))
    return edits


def _most_linked(texts: dict[str, str], pages: list[str]) -> list[str]:
    joined = "\n".join(texts.values())

    def mentions(page: str) -> int:
        base = posixpath.basename(posixpath.splitext(page)[0])
        return (
            0
            if base in ("index", "README")
            else joined.count(base + ".md")
            + joined.count("/" + base + ">")
            + joined.count(f"`{base}`")
            + joined.count(f"<{base}>")
        )

    return sorted(pages, key=lambda p: (-mentions(p), p))


def _rename_heading(texts: dict[str, str], pages: list[str]) -> tuple[str, str] | None:
    """A heading other pages link to by anchor, renamed; else the second heading of the first page with one."""
    anchors = Counter(m.group(2)[1:] for t in texts.values() for m in _MD_LINK.finditer(t) if m.group(2))
    for page in pages:
        for match in _MD_HEADING.finditer(texts[page]):
            slug = re.sub(r"[^\w\- ]", "", match.group(2).lower()).strip().replace(" ", "-")
            if anchors.get(slug):
                return page, texts[page].replace(match.group(0), match.group(0) + " renamed", 1)
    for page in pages:
        lines = texts[page].split("\n")
        for i in range(1, len(lines) - 1):
            if re.fullmatch(r"(-{3,}|~{3,}|\^{3,})", lines[i + 1]) and len(lines[i + 1]) >= len(lines[i]) > 0:
                lines[i] += " renamed"
                lines[i + 1] += lines[i + 1][0] * 8
                return page, "\n".join(lines)
        match = _MD_HEADING.search(texts[page])
        if match:
            return page, texts[page].replace(match.group(0), match.group(0) + " renamed", 1)
    return None


def _new_page(texts: dict[str, str], pages: list[str], framework: str, docs_root: str) -> dict[str, bytes | None]:
    """A new page in the docs root linking three existing pages the way the site links them."""
    targets = [p for p in pages if posixpath.dirname(p) == docs_root][:3] or pages[:3]
    md = any(p.endswith(".md") for p in pages) and (
        framework == "mkdocs" or sum(p.endswith(".md") for p in pages) > len(pages) / 2
    )
    relative = [posixpath.relpath(t, docs_root or ".") for t in targets]
    if md:
        links = "\n".join(f"- [{posixpath.basename(r)}]({r})" for r in relative)
        return {posixpath.join(docs_root, "copydesk-bench-new.md"): f"# New page\n\nSee:\n\n{links}\n".encode()}
    links = "\n".join(f"- :doc:`/{posixpath.splitext(r)[0]}`" for r in relative)
    return {posixpath.join(docs_root, "copydesk-bench-new.rst"): f"New page\n========\n\nSee:\n\n{links}\n".encode()}


def _break_link(texts: dict[str, str], pages: list[str], framework: str) -> tuple[str, str] | None:
    """A page's first link to another page, pointed at a page that does not exist."""
    for page in pages:
        text = texts[page]
        match = _MD_LINK.search(text) if page.endswith(".md") else re.search(r":doc:`(?:[^`<]*<)?([^`>]+)>?`", text)
        if match and "://" not in match.group(1):
            start, end = match.span(1)
            return page, text[:start] + match.group(1).replace(".md", "") + "-broken" + (
                ".md" if match.group(1).endswith(".md") else ""
            ) + text[end:]
    return None


# --- one site ------------------------------------------------------------------------------------------------


def run_site(bare: Path, cache: Path, extra: list[str]) -> list[Outcome]:
    git = Git()
    name = bare.parent.name if bare.name == "repo" else bare.name
    commit = git.out("rev-parse", "HEAD", git_dir=bare)
    with Workspace(git, bare, commit) as workspace:
        site = detect_site(workspace)
        pages = sorted(p for p in workspace.list_files() if site.is_page(p))
        texts = {p: workspace.read(p).decode("utf-8", "replace") for p in pages}
    if site.framework not in ("mkdocs", "sphinx") or not site.config_path:
        print(f"{name}: {site.framework} is not built by this bench", file=sys.stderr)
        return []
    with tempfile.TemporaryDirectory(prefix="copydesk-builds-") as tmp_s:
        pristine = Path(tmp_s) / "pristine"
        export(git, bare, commit, pristine)
        venv = build_venv(cache, site_requirements(pristine) + _project(pristine) + extra)
        try:
            baseline = build(site.framework, venv, pristine, site.config_path, site.docs_root)
        except BuildFailed as exc:
            print(f"{name}: the site's own build fails before any edit, so it is skipped:\n{exc}", file=sys.stderr)
            return []
        print(
            f"{name}: {site.framework}, {len(pages)} pages, {sum(baseline.values())} baseline warning(s)",
            file=sys.stderr,
        )
        outcomes = []
        for edit in plan_edits(texts, pages, site.framework, site.docs_root):
            tree = Path(tmp_s) / "edited"
            shutil.rmtree(tree, ignore_errors=True)
            shutil.copytree(pristine, tree, symlinks=True)
            apply_to_tree(tree, edit)
            new = build(site.framework, venv, tree, site.config_path, site.docs_root) - _moved(baseline, edit)
            with Workspace(git, bare, commit) as workspace:
                apply_to_workspace(workspace, edit)
                report = check_docs(workspace, site)
            outcomes.append(compare(name, edit, list(new.elements()), report))
    return outcomes


def _moved(baseline: Counter, edit: Edit) -> Counter:
    """The baseline with a moved page's warnings under its new path: they are the page's old problems."""
    if not edit.move:
        return baseline
    old, new = edit.move
    return Counter(
        {Warning_(new if w.path == old else w.path, w.text.replace(old, new)): n for w, n in baseline.items()}
    )


def _project(root: Path) -> list[str]:
    # Sphinx configs often read the project's version from its installed metadata (Flask's `get_version`).
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return []
    name = tomllib.loads(pyproject.read_text()).get("project", {}).get("name")
    return [name] if isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9._-]+", name) else []


def export(git: Git, bare: Path, commit: str, into: Path) -> None:
    data = subprocess.run(
        ["git", f"--git-dir={bare}", "archive", "--format=tar", commit], capture_output=True, check=True
    ).stdout
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(into, filter="data")


def apply_to_tree(tree: Path, edit: Edit) -> None:
    if edit.move:
        (tree / edit.move[1]).parent.mkdir(parents=True, exist_ok=True)
        (tree / edit.move[0]).rename(tree / edit.move[1])
    for path, data in edit.writes.items():
        if data is None:
            (tree / path).unlink()
        else:
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_bytes(data)


def apply_to_workspace(workspace, edit: Edit) -> None:
    if edit.move:
        workspace.move(*edit.move)
    for path, data in edit.writes.items():
        if data is None:
            workspace.delete(path)
        else:
            workspace.write(path, data)


def compare(site: str, edit: Edit, found: list[Warning_], report) -> Outcome:
    """Pairs each new build warning with a check problem in the same file, naming the same target if one does."""
    outcome = Outcome(site, edit.name, found, [f"{p.path}:{p.line} {p.message}" for p in report.problems])
    left = list(report.problems)
    if report.failure:
        outcome.extra.append(f"(check failure) {report.failure}")
    # Three passes, so a problem naming a warning's exact target is not taken by a vaguer warning first.
    unpaired = list(found)
    for tier in range(3):
        for warning in list(unpaired):
            pick = _partner(warning, left, tier)
            if pick is not None:
                unpaired.remove(warning)
                left.remove(pick)
                outcome.matched += 1
                outcome.pairs.append(
                    f"{warning.path}: {warning.text[:140]}  <->  {pick.path}:{pick.line} {pick.message[:140]}"
                )
    outcome.missed = unpaired
    outcome.extra += [f"{p.path}:{p.line} {p.message}" for p in left]
    return outcome


def _partner(warning: Warning_, problems: list, tier: int):
    """A check problem in the warning's file: naming its quoted target exactly (tier 0), by file name (1), any (2)."""
    same_file = [p for p in problems if p.path == warning.path]
    # What the warning quotes, but the file it is about (MkDocs names it first): the link target, the label.
    quoted = [q for q in _QUOTED.findall(warning.text) if len(q) > 2 and not warning.path.endswith(q)]
    if tier == 0:
        same_file = [p for p in same_file if any(q in p.message for q in quoted)]
    elif tier == 1:
        same_file = [p for p in same_file if any(posixpath.basename(q) in p.message for q in quoted)]
    return same_file[0] if same_file else None


def print_outcomes(outcomes: list[Outcome], show_matched: bool = False) -> None:
    print("| site | edit | build problems | reported by the check | missed | check reports the build did not find |")
    print("|---|---|---|---|---|---|")
    for o in outcomes:
        print(f"| {o.site} | {o.edit} | {len(o.found)} | {o.matched} | {len(o.missed)} | {len(o.extra)} |")
    print()
    for site in sorted({o.site for o in outcomes}) + ["overall"]:
        rows = [o for o in outcomes if site in ("overall", o.site)]
        found, matched = sum(len(o.found) for o in rows), sum(o.matched for o in rows)
        extra = sum(len(o.extra) for o in rows)
        share = f"{matched / found:.0%}" if found else "n/a"
        print(
            f"{site}: the check reported {matched} of the {found} problems the build found ({share}); "
            f"{extra} report(s) the build did not find"
        )
    print()
    for o in outcomes:
        for pair in o.pairs if show_matched else []:
            print(f"matched [{o.site} / {o.edit}] {pair}")
        for warning in o.missed:
            print(f"missed  [{o.site} / {o.edit}] {warning.path}: {warning.text[:220]}")
        for extra in o.extra:
            print(f"extra   [{o.site} / {o.edit}] {extra[:220]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    docs_repos.add_arguments(parser)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/copydesk-bench/docs-builds")
    parser.add_argument("--extra", action="append", default=[], help="another package the sites' builds need")
    parser.add_argument(
        "--show-matched",
        action="store_true",
        help="also print each build warning with the check problem it was paired with",
    )
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    outcomes = []
    repos = docs_repos.resolve(args.repos, args.mirrors)
    for repo in repos:
        outcomes += run_site(repo, args.cache, args.extra)
        print_outcomes([o for o in outcomes if o.site == outcomes[-1].site] if outcomes else [], args.show_matched)
    if len(repos) > 1:
        print("\n## all sites\n")
        print_outcomes(outcomes, args.show_matched)


if __name__ == "__main__":
    main()
