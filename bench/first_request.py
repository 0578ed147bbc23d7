"""Measures the size of the agent's first model request as the repository grows, against a whole-tree listing.

Run by hand: `.venv/bin/python bench/first_request.py [--sizes 500,5000,20000]`. Token counts are estimates
(characters / 4), not a tokenizer's count.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.workspace import PARAGRAPH, plain_env  # noqa: E402
from service.agent.briefing import brief  # noqa: E402
from service.agent.loop import SYSTEM_PROMPT, build_messages  # noqa: E402
from service.agent.model import ChatMessage  # noqa: E402
from service.agent.overview import repository_overview  # noqa: E402
from service.agent.tools import TOOL_SPECS  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from service.workspace.overlay import Workspace  # noqa: E402

PROMPT = "Document the new --dry-run flag of the deploy command, and link it from the CLI reference."
CHARS_PER_TOKEN = 4  # a rough average for English text and paths; good enough to compare sizes
DOCS_SHARE = 0.3  # the rest of the repository is source code
SECTIONS = ["getting-started", "guides", "reference", "api", "concepts", "tutorials", "integrations", "admin"]
CODE_DIRS = ["src/app", "src/core", "src/cli", "src/api", "src/storage", "tests/unit", "tests/integration"]
MKDOCS = "site_name: Widgets\ndocs_dir: docs\nnav:\n  - Home: index.md\n  - Guides: guides/index.md\n"


def repository_files(count: int):
    """(path, content) pairs of a realistic repository: nested docs pages with front matter, code, configs."""
    yield "README.md", "# Widgets\n\nSee the [documentation](docs/index.md).\n"
    yield "mkdocs.yml", MKDOCS
    yield "pyproject.toml", '[project]\nname = "widgets"\nversion = "1.0.0"\n'
    yield "docs/index.md", "---\ntitle: Widgets\n---\n\n# Widgets\n\n" + PARAGRAPH * 3
    pages = int(count * DOCS_SHARE)
    for i in range(pages - 1):
        section = SECTIONS[i % len(SECTIONS)]
        suffix = ".mdx" if i % 5 == 0 else ".md"
        path = f"docs/{section}/topic-{i // 40 % 25}/page-{i}{suffix}"
        yield (
            path,
            f"---\ntitle: Page {i}\ndescription: About part {i} of Widgets.\n---\n\n# Page {i}\n\n"
            + PARAGRAPH * (3 + i % 10)
            + f"\nSee [the next page](page-{i + 1}{suffix}).\n",
        )
    for i in range(count - pages - 3):
        folder = CODE_DIRS[i % len(CODE_DIRS)]
        yield (
            f"{folder}/module_{i // 50 % 40}/file_{i}.py",
            f'"""Module {i}."""\n\n\ndef handler_{i}(x):\n    return x + {i}\n',
        )


def generate(bare: Path, files, env: dict[str, str]) -> None:
    """A bare repository whose `main` holds `files` ((path, content) pairs), written with fast-import."""
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", str(bare)], check=True, env=env)
    proc = subprocess.Popen(["git", f"--git-dir={bare}", "fast-import", "--quiet"], stdin=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    proc.stdin.write(b"commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 7\nInitial\n")
    for path, content in files:
        data = content.encode()
        proc.stdin.write(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
    proc.stdin.write(b"done\n")
    proc.stdin.close()
    if proc.wait() != 0:
        raise SystemExit("fast-import failed")


def first_request(workspace) -> list[ChatMessage]:
    """The first request exactly as a run builds it: the runner's briefing, then the loop's messages."""
    return build_messages(brief(workspace, PROMPT, base_commit=workspace.start_commit, docs_root="docs"))


def whole_tree_request(workspace) -> list[ChatMessage]:
    """The naive alternative: the system prompt with every path in the repository, then the prompt."""
    listing = "\n".join(workspace.list_files())
    return [
        ChatMessage("system", f"{SYSTEM_PROMPT}\n\nThe repository's files:\n{listing}"),
        ChatMessage("user", PROMPT),
    ]


def request_chars(messages: list[ChatMessage]) -> int:
    """Characters of the request body as an OpenAI-style chat request: the messages and the tool specs."""
    body = {
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "tools": [
            {"type": "function", "function": {"name": s.name, "description": s.description, "parameters": s.parameters}}
            for s in TOOL_SPECS
        ],
    }
    return len(json.dumps(body, ensure_ascii=False))


def measure(count: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-") as tmp_s:
        tmp = Path(tmp_s)
        bare = tmp / "source.git"
        started = time.perf_counter()
        generate(bare, repository_files(count), plain_env(tmp))
        print(f"  generated {count} files in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        git = Git()
        with Workspace(git, bare, git.out("rev-parse", "refs/heads/main", git_dir=bare)) as workspace:
            files = len(workspace.list_files())
            started = time.perf_counter()
            messages = first_request(workspace)
            briefing_seconds = time.perf_counter() - started
            overview = repository_overview(workspace, docs_root="docs")
            return {
                "files": files,
                "first": request_chars(messages),
                "tree": request_chars(whole_tree_request(workspace)),
                "overview": len(overview),
                "seconds": briefing_seconds,
                "text": messages[0].content,
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,5000,20000", help="comma-separated file counts")
    parser.add_argument(
        "--show", action="store_true", help="print the system message of the largest repository's first request"
    )
    args = parser.parse_args()
    rows = []
    for count in [int(s) for s in args.sizes.split(",")]:
        print(f"measuring {count} files ...", file=sys.stderr)
        rows.append(measure(count))
    print(
        f"\nfirst request = system prompt + overview + prompt + tool specs, as JSON; tokens ~ chars/"
        f"{CHARS_PER_TOKEN} (an estimate)"
    )
    print(
        f"{'files':>7} {'first chars':>12} {'~tokens':>8} {'overview':>9} {'whole-tree chars':>17} "
        f"{'~tokens':>8} {'tree/first':>11} {'briefing s':>11}"
    )
    for r in rows:
        print(
            f"{r['files']:>7,} {r['first']:>12,} {r['first'] // CHARS_PER_TOKEN:>8,} {r['overview']:>9,} "
            f"{r['tree']:>17,} {r['tree'] // CHARS_PER_TOKEN:>8,} {r['tree'] / r['first']:>10.1f}x "
            f"{r['seconds']:>11.3f}"
        )
    if args.show:
        print("\n" + rows[-1]["text"])


if __name__ == "__main__":
    main()
