"""Runs the three automation templates against real documentation repositories on the local code host, with a
scripted model (the model vendors' HTTP stand-in, so every model request is counted and its prompt measured).

Run by hand: `.venv/bin/python bench/automation_templates.py /work/.mirror/encode+httpx/repo [more bare repos ...]`.
Bring the repositories with the `fetch` tool. Each is cloned (bare) into a temporary folder, so nothing is written
to it. Per repository, with its own redis-server, the whole service in this process and a worker draining the queue:

- a small local source repository ("widgets") gets commits: the code change of *Update docs from code changes* (one
  commit, one run) and the three merged changes of *Draft a changelog entry* (one batched run over all three);
- *Fix broken links* fires on a schedule slot: the worker checks the whole site first; the model runs only when the
  check finds problems;
- the scripted model's turns are worked out from the repository (the page to edit, the changelog or its fragments
  folder, the first broken anchor with one suggestion); it is a stand-in for a model, not a judge of the docs.

Printed per run: template, repository and commit, the round's prompt (the user message: the automation's prompt and
the trigger's data or the check's report) and the first model request in all (system prompt, site overview, tools
excluded), in characters; model calls; the outcome and its reason; seconds.
"""

import argparse
import contextlib
import copy
import json
import os
import posixpath
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot import context  # noqa: E402
from service.agent.docsite.detect import detect_site  # noqa: E402
from service.agent.docsite.tree import Tree  # noqa: E402
from service.agent.site_check import check_site, site_pages  # noqa: E402
from service.automations.events import TriggerEvent  # noqa: E402
from service.automations.localchanges import new_commits  # noqa: E402
from service.automations.model import parse_spec  # noqa: E402
from service.automations.outcomes import outcome  # noqa: E402
from service.automations.runs import fire  # noqa: E402
from service.automations.templates import TEMPLATES, TemplateId  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.workspace.git import Git  # noqa: E402
from service.workspace.overlay import Workspace  # noqa: E402
from tests.conftest import commit_files, free_port  # noqa: E402
from tests.harness import drain_queues  # noqa: E402
from tests.model_standin import ModelStandIn, Reply, ToolUse  # noqa: E402
from tests.redis_servers import running_redis  # noqa: E402

SOURCE_FILES = {
    "widgets/cli.py": "import argparse\n\nTIMEOUT = 3\n\n\ndef parser():\n    p = argparse.ArgumentParser()\n"
    "    p.add_argument('--dry-run', action='store_true')\n    return p\n",
    "README.md": "# widgets\n",
}
CODE_CHANGE = (
    "Add a --verbose flag that logs each request",
    {
        "widgets/cli.py": SOURCE_FILES["widgets/cli.py"].replace(
            "    return p",
            "    p.add_argument('--verbose', action='store_true', help='log each request')\n    return p",
        )
    },
)
BATCH = [
    ("Fix the timeout default: 30 s, was 3 s", {"widgets/cli.py": None}),
    ("Add widgets sync --since", {"widgets/sync.py": "def sync(since=None):\n    ...\n"}),
    ("CI: cache pip downloads", {".github/workflows/ci.yml": "steps:\n  - uses: actions/cache@v4\n"}),
]
FRAGMENT_FOLDERS = ("changelog.d", "newsfragments", "changelog_unreleased", ".changeset")
CHANGELOG_NAMES = re.compile(r"^(changelog|changes|history|release[-_ ]?notes)(\.(md|rst|markdown|txt))?$", re.I)
_DID_YOU_MEAN = re.compile(r"broken anchor: (\S+) .*; did you mean (#[\w-]+)\?$")


@dataclass
class Row:
    template: str
    repository: str
    commit: str
    prompt_chars: int
    request_chars: int
    model_calls: int
    state: str
    reason: str
    seconds: float
    changed: str  # the files the round committed


Turns = list[tuple[str, dict]]  # the scripted model's tool calls in order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="+", help="bare git repositories (e.g. /work/.mirror/owner+name/repo)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON lines too")
    parser.add_argument("--prompts", type=Path, help="write each round's prompt as the model got it to this folder")
    args = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="copydesk-bench-") as tmp, ModelStandIn() as model:
        for n, repo in enumerate(args.repos):
            rows += run_repository(Path(repo), Path(tmp) / f"r{n}", model, args.prompts)
    print_table(rows)
    if args.json:
        for row in rows:
            print(json.dumps(row.__dict__))


def run_repository(bare: Path, workdir: Path, model: ModelStandIn, prompts: Path | None) -> list[Row]:
    git = Git()
    name = bare.parent.name.replace("+", "/") if bare.name == "repo" else bare.name
    copy_path = workdir / "docs.git"
    git.run("clone", "--bare", "-q", str(bare), str(copy_path))
    branch = git.out("symbolic-ref", "--short", "HEAD", git_dir=copy_path)
    commit = git.out("rev-parse", "HEAD", git_dir=copy_path)
    source = workdir / "widgets.git"
    git.run("init", "--bare", "-q", str(source))
    git.run("symbolic-ref", "HEAD", "refs/heads/main", git_dir=source)
    commit_files(git, source, SOURCE_FILES, message="widgets 1.0")
    with running_redis(workdir / "redis", "--save", "", "--appendonly", "no") as redis_url:
        settings = Settings(
            redis_url=redis_url,
            data_dir=workdir / "data",
            base_url=f"http://127.0.0.1:{free_port()}",
            model="openai:gpt-bench",
        ).with_overrides(openai_api_key="sk-bench", openai_base_url=model.openai_base_url)
        os.environ.update(settings.to_env())  # the worker's task builds its own context from the environment
        ctx = context.build(settings)
        project = ctx.local.register(ctx.services.projects, path=copy_path, ref=branch)
        plan = _Plan(git, copy_path, commit)
        runs = [
            (TemplateId.UPDATE_FROM_CODE, lambda a: _code_change(git, source, a), plan.update_turns()),
            (
                TemplateId.FIX_BROKEN_LINKS,
                lambda a: TriggerEvent(kind="schedule", key=f"slot:{a.id}@bench"),
                plan.fix_turns(),
            ),
            (TemplateId.DRAFT_CHANGELOG, lambda a: _batch(git, source, a), plan.changelog_turns()),
        ]
        rows = []
        checked = time.monotonic()
        with Workspace(git, copy_path, commit) as workspace:
            report = check_site(workspace)
        print(
            f"{name} @ {commit[:12]}: the whole-site check read {report.pages_checked} page(s) in "
            f"{time.monotonic() - checked:.1f} s (parse cache warm from planning) and found "
            f"{len(report.problems)} problem(s)"
        )
        for template, event_of, turns in runs:
            rows.append(
                _run(
                    ctx,
                    settings,
                    project,
                    template,
                    event_of,
                    turns,
                    model,
                    source,
                    name=name,
                    commit=commit,
                    prompts=prompts,
                )
            )
    return rows


def _run(
    ctx,
    settings: Settings,
    project,
    template: TemplateId,
    event_of: Callable,
    turns: Turns,
    model: ModelStandIn,
    source: Path,
    *,
    name: str,
    commit: str,
    prompts: Path | None,
) -> Row:
    services = ctx.services
    body = copy.deepcopy(TEMPLATES[template.value].body)
    if "trigger.repository" in TEMPLATES[template.value].needs:
        body["trigger"]["repository"] = str(source)
    spec = parse_spec(body, host=project.host)
    automation = services.automations.create(
        project.id, host=project.host, account=project.account, spec=spec, template=template.value
    )[0]
    model.respond(_responder(turns))
    before = len(model.requests)
    started = time.monotonic()
    run = fire(services, automation, event_of(automation))
    drain_queues(services.redis, settings.queue_name)
    seconds = time.monotonic() - started
    requests = model.requests[before:]
    seen = outcome(services, run)
    user = requests[0].body["messages"][-1]["content"] if requests else ""
    if prompts is not None and requests:
        prompts.mkdir(parents=True, exist_ok=True)
        (prompts / f"{name.replace('/', '+')}-{template.value}.txt").write_text(
            "\n\n=====\n\n".join(str(m.get("content")) for m in requests[0].body["messages"])
        )
    whole = sum(len(m.get("content") or "") for m in requests[0].body["messages"]) if requests else 0
    replies = [m for m in services.jobs.conversation(run.job_id) if m.reply_to == run.message_id] if run.job_id else []
    changed = ", ".join(replies[0].changed_files) if replies else ""
    return Row(
        template.value,
        name,
        commit[:12],
        len(user),
        whole,
        len(requests),
        seen.state.value,
        (seen.reason or _error(services, run) or "")[:160],
        round(seconds, 1),
        changed,
    )


def _error(services, run) -> str | None:
    job = services.jobs.find(run.job_id) if run.job_id else None
    return json.dumps(job.error) if job is not None and job.error else None


def _responder(turns: Turns):
    """A model that makes the planned tool calls in order, one per turn (its turn is the number of assistant
    messages the request holds), then finishes."""

    def respond(body: dict):
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        name, args = turns[min(turn, len(turns) - 1)]
        return 0.0, Reply(tool_calls=[ToolUse(name, args)])

    return respond


def _code_change(git: Git, source: Path, automation) -> TriggerEvent:
    """One commit on the source's default branch, as the local code-change trigger finds it."""
    before = git.out("rev-parse", "refs/heads/main", git_dir=source)
    title, files = CODE_CHANGE
    commit_files(git, source, files, message=title)
    head, changes = new_commits(source, before, max_diff_chars=20_000)
    return TriggerEvent(
        kind="code_change",
        key=f"commit:{source}@{head}",
        changes=tuple(changes),
        source_repository=str(source),
        source_commit=head,
    )


def _batch(git: Git, source: Path, automation) -> TriggerEvent:
    """Three commits merged since the last run, handed over as one batched event."""
    before = git.out("rev-parse", "refs/heads/main", git_dir=source)
    for title, files in BATCH:
        if files.get("widgets/cli.py", "") is None:
            text = git.out("show", "refs/heads/main:widgets/cli.py", git_dir=source) + "\n"
            files = {"widgets/cli.py": text.replace("TIMEOUT = 3", "TIMEOUT = 30")}
        commit_files(git, source, files, message=title)
    head, changes = new_commits(source, before, max_diff_chars=20_000)
    return TriggerEvent(
        kind="code_change",
        key=f"batch:{automation.id}@bench",
        changes=tuple(changes),
        source_repository=str(source),
        source_commit=head,
    )


class _Plan:
    """The scripted model's turns for each template, worked out from the repository."""

    def __init__(self, git: Git, bare: Path, commit: str) -> None:
        with Workspace(git, bare, commit) as workspace:
            self.files = set(workspace.list_files())
            site = detect_site(workspace)
            self.pages = site_pages(Tree(workspace), site)
            self.texts = {
                p: workspace.read(p).decode("utf-8", "replace") for p in self.pages if p.endswith((".md", ".mdx"))
            }
            self.report = check_site(workspace, site)
            self.changelogs = {p: workspace.read(p).decode("utf-8", "replace") for p in self._changelog_paths()}

    def update_turns(self) -> Turns:
        for page, text in sorted(self.texts.items()):
            heading = next(
                (line for line in text.split("\n") if line.startswith("## ") and text.count(line) == 1), None
            )
            if heading:
                new = f"{heading}\n\nPass `--verbose` to log each request as it is made."
                return [
                    ("search", {"pattern": "verbose|--dry-run", "ignore_case": True}),
                    ("read_file", {"path": page}),
                    ("edit_file", {"path": page, "old": heading, "new": new}),
                    (
                        "finish",
                        {
                            "title": "Document the --verbose flag",
                            "summary": f"Added a sentence on --verbose to {page}.",
                        },
                    ),
                ]
        return [("finish", {"title": "", "summary": "No page describes the CLI.", "no_change_needed": True})]

    def fix_turns(self) -> Turns:
        for problem in self.report.problems:
            found = _DID_YOU_MEAN.search(problem.message)
            text = self.texts.get(problem.path, "")
            if found and text.count(f"]({found.group(1)})") == 1:
                target = found.group(1)
                fixed = target.split("#")[0] + found.group(2)
                return [
                    ("read_file", {"path": problem.path}),
                    ("edit_file", {"path": problem.path, "old": f"]({target})", "new": f"]({fixed})"}),
                    ("check_docs", {}),
                    ("finish", {"title": "Fix a broken anchor", "summary": f"Pointed {target} at {fixed}."}),
                ]
        return [("finish", {"title": "", "summary": "Scripted: nothing it can fix.", "no_change_needed": True})]

    def changelog_turns(self) -> Turns:
        look = [("list_files", {"pattern": "*hange*"})]
        folder = next((f for f in FRAGMENT_FOLDERS if any(p.startswith(f + "/") for p in self.files)), None)
        if folder is not None:
            examples = sorted(
                (p for p in self.files if p.startswith(folder + "/") and p.endswith(".md")),
                key=lambda p: (posixpath.basename(p) != "TEMPLATE.md", p),
            )
            sub = posixpath.dirname(examples[0]) if examples else folder
            if folder == "changelog_unreleased":
                sub = f"{folder}/cli"
            return look + [
                ("read_file", {"path": examples[0]}) if examples else ("list_files", {"pattern": folder}),
                (
                    "write_file",
                    {
                        "path": f"{sub}/+sync-since.change.md" if folder == "changelog.d" else f"{sub}/sync-since.md",
                        "content": "`widgets sync` takes `--since` to sync only newer items.\n",
                    },
                ),
                (
                    "finish",
                    {
                        "title": "Changelog fragment for widgets sync --since",
                        "summary": "Added a fragment; the timeout fix and the CI change need none.",
                    },
                ),
            ]
        paths = self._changelog_paths()
        if not paths:
            return look + [
                ("finish", {"title": "", "no_change_needed": True, "summary": "This repository keeps no changelog."})
            ]
        path = paths[0]
        text = self.changelogs[path]
        first = next((line for line in text.split("\n") if line.startswith("## ")), None)
        if first is None:
            return look + [
                ("finish", {"title": "", "no_change_needed": True, "summary": f"{path} has no entries to follow."})
            ]
        entry = "## Unreleased\n\n### Added\n\n* `widgets sync --since` syncs only newer items.\n\n"
        old, new = (
            (first, f"{first}\n\n### Added\n\n* `widgets sync --since` syncs only newer items.")
            if "unreleased" in first.lower()
            else (first, entry + first)
        )
        return look + [
            ("read_file", {"path": path}),
            ("edit_file", {"path": path, "old": old, "new": new}),
            ("finish", {"title": "Changelog entry for widgets sync --since", "summary": f"Added the entry to {path}."}),
        ]

    def _changelog_paths(self) -> list[str]:
        found = [
            p
            for p in self.files
            if CHANGELOG_NAMES.match(posixpath.basename(p)) and p.count("/") <= 1 and not p.startswith(".")
        ]
        return sorted(found, key=lambda p: (p.count("/"), p))


def print_table(rows: list[Row]) -> None:
    print(
        f"{'template':32} {'repository':26} {'commit':12} {'prompt':>7} {'request':>8} {'calls':>5} "
        f"{'outcome':17} {'s':>6}  changed | reason"
    )
    for r in rows:
        print(
            f"{r.template:32} {r.repository:26} {r.commit:12} {r.prompt_chars:7,} {r.request_chars:8,} "
            f"{r.model_calls:5} {r.state:17} {r.seconds:6.1f}  {r.changed or '-'} | {r.reason or '-'}"
        )


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
