"""Parses every reST file of real repositories with the docs check's reST parse and with docutils as released, and
prints mismatches (goal 0) and pages per second of each; and checks the text tests that spare parses (a page is
parsed for a label only if `may_define` says so, for its toctrees only if the directive is written, for an option
only if its option signatures hold it): every label, toctree and option a parse finds must pass them (misses,
goal 0).

Run by hand: `.venv/bin/python bench/rst_parity.py [owner/name or bare repo ...]` (none: sphinx-doc/sphinx,
pallets/flask, python-attrs/attrs). Bring the repositories with the `fetch` tool. Times are CPU seconds of this
process (time.process_time), so other load on the machine does not inflate them; each path parses every page
once, after an untimed pass over them all (imports, compiled patterns) (the parse cache is not involved).
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import docs_repos  # noqa: E402
from service.agent.docsite.rst import (  # noqa: E402
    may_define,
    names_text,
    option_signatures,
    parse_rst,
    plain_docutils,
)
from service.agent.docsite.sphinx import _TOCTREE_DIRECTIVE  # noqa: E402

DEFAULT = ("sphinx-doc/sphinx", "pallets/flask", "python-attrs/attrs")


def rst_files(bare: Path) -> dict[str, str]:
    """Every `.rst` file at HEAD of the bare repository, by path."""
    listed = subprocess.run(
        ["git", "--git-dir", str(bare), "ls-tree", "-r", "-z", "--name-only", "HEAD"],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    names = [name for name in listed if name.endswith(b".rst")]
    batch = subprocess.run(
        ["git", "--git-dir", str(bare), "cat-file", "--batch"],
        input=b"".join(b"HEAD:" + name + b"\n" for name in names),
        capture_output=True,
        check=True,
    ).stdout
    texts, position = {}, 0
    for name in names:
        header_end = batch.index(b"\n", position)
        header = batch[position:header_end].split()
        if header[-1] == b"missing":
            position = header_end + 1
            continue
        size = int(header[2])
        texts[name.decode()] = batch[header_end + 1 : header_end + 1 + size].decode("utf-8", "replace")
        position = header_end + 1 + size + 1
    return texts


def timed_parses(texts: dict[str, str]) -> tuple[float, dict]:
    started = time.process_time()
    parsed = {}
    for path, text in texts.items():
        try:
            parsed[path] = parse_rst(text)
        except RecursionError:
            parsed[path] = "RecursionError"
    return time.process_time() - started, parsed


def filter_misses(texts: dict[str, str], parsed: dict) -> list[str]:
    """Labels and toctrees the parse finds that the text tests would have skipped the page for."""
    misses = []
    for path, text in texts.items():
        page = parsed[path]
        if isinstance(page, str):
            continue
        names = names_text(text)
        misses += [f"{path}: label {label!r}" for label in sorted(page.labels) if not may_define(names, label)]
        if page.toctrees and "toctree" in text and not _TOCTREE_DIRECTIVE.search(text):
            misses.append(f"{path}: toctree")
        signatures = option_signatures(text)
        misses += [f"{path}: option {name!r}" for _, name in sorted(page.options) if name not in signatures]
    return misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    docs_repos.add_arguments(parser)
    parser.add_argument("--show", type=int, default=5, help="mismatching files to name per repository")
    args = parser.parse_args()
    print("| repository | .rst files | KiB | docutils ms/page | ours ms/page | speed-up | mismatches | filter misses |")
    print("|---|---|---|---|---|---|---|---|")
    total_mismatches = 0
    for bare in docs_repos.resolve(args.repos or list(DEFAULT), args.mirrors):
        texts = rst_files(bare)
        if not texts:
            continue
        timed_parses(texts)  # warm-up: what the first parses import and compile is not either path's cost
        with plain_docutils():
            plain_s, plain = timed_parses(texts)
        ours_s, ours = timed_parses(texts)
        mismatches = sorted(path for path in texts if plain[path] != ours[path])
        misses = filter_misses(texts, ours)
        total_mismatches += len(mismatches) + len(misses)
        name = bare.parent.name if bare.name == "repo" else bare.name
        kib = sum(len(text) for text in texts.values()) // 1024
        pages = len(texts)
        print(
            f"| {name} | {pages} | {kib} | {plain_s / pages * 1000:.2f} | {ours_s / pages * 1000:.2f} | "
            f"{plain_s / ours_s:.2f}x | {len(mismatches)} | {len(misses)} |"
        )
        for path in mismatches[: args.show]:
            print(f"  mismatch: {path}", file=sys.stderr)
        for miss in misses[: args.show]:
            print(f"  filter miss: {miss}", file=sys.stderr)
    print(f"total mismatches and misses: {total_mismatches}")


if __name__ == "__main__":
    main()
