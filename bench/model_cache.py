"""Replays a 30-step run through both protocol stand-ins and prints the share of input tokens served from cache.

Run by hand: `.venv/bin/python bench/model_cache.py [--steps 30] [--context-chars 200000]`. The run is the real
agent loop (briefing, tools, compaction at COPYDESK_AGENT_CONTEXT_CHARS) with the real vendor adapters against
tests/model_standin.py, whose prompt caches follow the vendors' rules (tests/prompt_cache.py; tokens are
estimated as bytes / 4). Goal: at least 70 % of the input served from cache for both protocols. The same run
is replayed as before prompt caching (no Anthropic breakpoints, the transcript compacted from scratch on every
step) as the baseline the ratios are taken against.
"""

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.first_request import generate  # noqa: E402
from bench.workspace import plain_env  # noqa: E402
from service.agent import loop  # noqa: E402
from service.agent.briefing import brief  # noqa: E402
from service.agent.compaction import compact_transcript  # noqa: E402
from service.agent.loop import RunLimits, run_agent  # noqa: E402
from service.agent.providers import anthropic_messages  # noqa: E402
from service.agent.providers.anthropic_messages import AnthropicModel  # noqa: E402
from service.agent.providers.openai_chat import OpenAIChatModel  # noqa: E402
from service.agent.providers.retry import RetryPolicy  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from service.workspace.overlay import Workspace  # noqa: E402
from tests.model_standin import ModelStandIn, Reply, ToolUse  # noqa: E402

PROMPT = "Document the new --dry-run flag of the deploy command on every guide page that shows a deploy."
PAGES = 40
LINE = "Deploying copies the built site to the server; this line is filler text of a realistic width. "


def repository():
    """(path, content) pairs: an MkDocs site whose guide pages are about 14 KB each."""
    yield (
        "mkdocs.yml",
        "site_name: Widgets\nnav:\n" + "".join(f"  - Guide {i}: guides/guide-{i}.md\n" for i in range(PAGES)),
    )
    yield "docs/index.md", "# Widgets\n\nSee the guides.\n"
    for i in range(PAGES):
        body = "".join(f"{LINE}(guide {i}, line {n})\n" for n in range(130))
        yield f"docs/guides/guide-{i}.md", f"# Guide {i}\n\nRun `widgets deploy` to publish.\n\n{body}"


def step(number: int, steps: int) -> ToolUse:
    """The model's tool call at model call `number` (0-based): mostly reading pages, some searches and edits."""
    if number == steps - 1:
        return ToolUse("finish", {"title": "Document --dry-run", "summary": "Added the flag to the guides."})
    page = f"docs/guides/guide-{number}.md"
    if number % 5 == 0:
        return ToolUse("search", {"pattern": f"guide {number}, line [0-9]$", "path_glob": "docs/**/*.md"})
    if number % 5 == 4:
        return ToolUse(
            "edit_file",
            {
                "path": f"docs/guides/guide-{number - 1}.md",
                "old": "Run `widgets deploy` to publish.",
                "new": "Run `widgets deploy` to publish (`--dry-run` shows what would change).\n\n" + LINE * 12,
            },
        )
    return ToolUse("read_file", {"path": page})


@contextlib.contextmanager
def before_caching():
    """The loop and adapter as they were: no breakpoints, and compaction from scratch on every request."""

    class FromScratch:
        def __init__(self, max_chars: int) -> None:
            self.max_chars = max_chars

        def __call__(self, messages):
            return compact_transcript(messages, max_chars=self.max_chars)

    with (
        mock.patch.object(anthropic_messages, "mark_cache_breakpoints", lambda request: None),
        mock.patch.object(loop, "TranscriptCompactor", FromScratch),
    ):
        yield


def replay(vendor: str, steps: int, context_chars: int) -> dict:
    """Run the scripted run once through `vendor`'s adapter; the stand-in's token counts, totalled."""
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-") as tmp_s, ModelStandIn() as standin:
        tmp = Path(tmp_s)
        bare = tmp / "source.git"
        generate(bare, repository(), plain_env(tmp))
        standin.script(*[Reply(tool_calls=[step(n, steps)], output_tokens=120) for n in range(steps)])
        retry = RetryPolicy(budget=0)
        if vendor == "anthropic":
            model = AnthropicModel("claude-sonnet-4-5", api_key="k", base_url=standin.anthropic_base_url, retry=retry)
        else:
            model = OpenAIChatModel("gpt-5.1", api_key="k", base_url=standin.openai_base_url, retry=retry)
        git = Git()
        with Workspace(git, bare, git.out("rev-parse", "refs/heads/main", git_dir=bare)) as workspace:
            task = brief(workspace, PROMPT, base_commit=workspace.start_commit, docs_root="docs")
            limits = RunLimits(max_steps=steps + 5, max_bytes_written=10_000_000, context_chars=context_chars)
            result = run_agent(workspace, model, task, limits)
        usage = result.usage
        return {
            "requests": len(standin.requests),
            "steps": result.steps,
            "input": usage.input_tokens,
            "read": usage.cache_read_tokens,
            "written": usage.cache_write_tokens,
            "billable_input": usage.billable_tokens - usage.output_tokens,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--context-chars", type=int, default=200_000)
    args = parser.parse_args()
    print(f"{args.steps}-step run, context budget {args.context_chars:,} characters; tokens ~ bytes / 4")
    print(
        f"{'protocol':>20} {'calls':>6} {'input tokens':>13} {'cache read':>11} {'cache write':>12} "
        f"{'from cache':>11} {'billed input':>13} {'vs before':>10}"
    )
    for vendor in ("anthropic", "openai"):
        with before_caching():
            base = replay(vendor, args.steps, args.context_chars)
        now = replay(vendor, args.steps, args.context_chars)
        for label, r in ((f"{vendor} before", base), (vendor, now)):
            print(
                f"{label:>20} {r['requests']:>6} {r['input']:>13,} {r['read']:>11,} {r['written']:>12,} "
                f"{r['read'] / r['input']:>10.0%} {r['billable_input'] / r['input']:>12.2f}x "
                f"{r['billable_input'] / base['billable_input']:>9.2f}x"
            )


if __name__ == "__main__":
    main()
