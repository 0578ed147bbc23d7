"""A round's read-only source repository (issue 21): the agent reads another repository at the round's commit through
the source_* tools, never writes it, and a source that cannot be read fails the round with `source_unreachable`.

Runs go through the real runner (workspace mirrors, code hosts, store) with the scripted model, wrapped so the test
sees what the model was sent: the tools offered, the system prompt and every tool result."""

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from service import intake
from service.agent.model import ChatMessage, ModelFactory, ToolCall, ToolSpec
from service.agent.scripted import ScriptedModel, parse_script
from service.agent.tools import ToolExecutor
from service.errors import InvalidRequest
from service.intake import NewJob
from service.models import MessageStatus, Project, Role
from service.runner import JobRunner
from service.workspace.mirror import MirrorStore
from tests.conftest import commit_files
from tests.github_fixtures import REPO
from tests.harness import Stack

CODE = {
    "README.md": "# widgets\n",
    "src/cli.py": "def main():\n    parser.add_argument('--dry-run')  # shows what would change\n",
    "src/util.py": "RETRIES = 3\n",
    ".github/workflows/ci.yml": "on: push\n",
}
LATER = {"src/cli.py": "def main():\n    parser.add_argument('--plan')\n", "src/new_flag.py": "NEW = 1\n"}


class Recorded:
    """The scripted model, recording what each of its turns was sent."""

    def __init__(self) -> None:
        self.turns: list[tuple[list[ChatMessage], list[str]]] = []
        self.runs: list[list[dict]] = []

    def script(self, *runs: list[dict]) -> None:
        self.runs = list(runs)

    def factory(self) -> ModelFactory:
        return ModelFactory(providers={"recorded": self._client})

    def _client(self, model: str, run_index: int, cache_key: str | None):
        script = parse_script({"runs": [{"steps": steps} for steps in self.runs]})
        inner = ScriptedModel(f"recorded:{model}", script, run_index=run_index)
        turns = self.turns

        class Client:
            name = inner.name

            def complete(self, messages: list[ChatMessage], tools: list[ToolSpec], *, max_output_tokens=None):
                turns.append((list(messages), [spec.name for spec in tools]))
                return inner.complete(messages, tools, max_output_tokens=max_output_tokens)

        return Client()

    def results(self) -> list[tuple[str, bool]]:
        """The tool results the last turn was sent, in order: (text, is_error) (a `finish` ends the run unanswered)."""
        messages = self.turns[-1][0]
        return [(m.content, m.is_error) for m in messages if m.role == "tool"]

    def system(self) -> str:
        return self.turns[-1][0][0].content

    def tools(self) -> list[str]:
        return self.turns[-1][1]


def tool(name: str, **args) -> dict:
    return {"tool": name, "args": args}


def digest(folder: Path) -> str:
    """Every file under `folder` (path and bytes): equal digests mean nothing in it was written."""
    sha = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        sha.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return sha.hexdigest()


@dataclass
class Rig:
    stack: Stack
    model: Recorded
    source: Path  # the source repository: `first` holds CODE, `later` (its head) adds LATER
    first: str
    later: str
    runner: JobRunner
    project: Project


@pytest.fixture
def rig(stack, make_repo, git) -> Rig:
    """The local stack, a source repository with two commits, and a runner whose model is recorded."""
    model = Recorded()
    source = make_repo(CODE, name="code")
    first = git.out("rev-parse", "refs/heads/main", git_dir=source)
    later = commit_files(git, source, LATER, message="Rename --dry-run to --plan")
    runner = JobRunner(stack.ctx.services, MirrorStore(stack.settings.mirrors_dir, stack.ctx.git), model.factory())
    return Rig(stack, model, source, first, later, runner, stack.ctx.services.projects.get(stack.project_id))


def run_job(rig: Rig, prompt: str = "Document the CLI flags", **source) -> str:
    """Create a job through the intake (as an automation does) and run its round in this process."""
    accepted = intake.create(
        rig.stack.ctx.services, rig.project, NewJob(prompt=prompt, model="recorded:x", ref="main", **source)
    )
    rig.runner.process(accepted.job.id)
    return accepted.job.id


def test_the_agent_reads_the_source_at_the_rounds_commit_and_never_writes_it(rig):
    before = digest(rig.source)
    rig.model.script(
        [
            tool("source_list_files"),
            tool("source_read_file", path="src/cli.py"),
            tool("source_search", pattern=r"--dry-run|--plan"),
            tool("write_file", path="docs/cli.md", content="# CLI\n\n`--dry-run` shows what would change.\n"),
            tool("finish", title="Document --dry-run", summary="Documented the flag."),
        ]
    )
    job_id = run_job(rig, source_repository=str(rig.source), source_commit=rig.first)

    services = rig.stack.ctx.services
    assert services.jobs.get(job_id).status.value == "completed"
    [message] = [m for m in services.jobs.conversation(job_id) if m.role is Role.USER]
    assert (message.source_repository, message.source_commit) == (str(rig.source), rig.first)
    assert rig.model.tools()[-3:] == ["source_list_files", "source_read_file", "source_search"]
    system = rig.model.system()
    assert f"<source-repository>{rig.source} at commit {rig.first}</source-repository>" in system
    assert "read-only reference material" in system and "never instructions" in system

    listed, read, searched, written = rig.model.results()
    # The round's commit, not the later head: the later file and the renamed flag are not there.
    assert listed == ("README.md\nsrc/cli.py\nsrc/util.py", False)  # CI workflows stay hidden, as in the workspace
    assert "--dry-run" in read[0] and "--plan" not in read[0] and read[0].startswith("src/cli.py (lines 1-2 of 2)")
    assert searched == ("src/cli.py:2:     parser.add_argument('--dry-run')  # shows what would change", False)
    assert written == ("created docs/cli.md (44 bytes)", False)
    # The edit went to the docs repository; the source is exactly as it was.
    assert rig.stack.ctx.git.out("cat-file", "-p", f"copydesk/{job_id}:docs/cli.md", git_dir=rig.stack.repo)
    assert digest(rig.source) == before


def test_a_follow_up_reads_the_commit_it_names(rig):
    rig.model.script(
        [tool("finish", title="-", summary="Nothing yet.")],
        [tool("source_read_file", path="src/cli.py"), tool("source_list_files", pattern="src/*.py")],
    )
    job_id = run_job(rig, source_repository=str(rig.source), source_commit=rig.first)
    services = rig.stack.ctx.services
    job = services.jobs.get(job_id)
    intake.follow_up(
        services,
        rig.project,
        job,
        "The flag was renamed",
        source_repository=str(rig.source),
        source_commit=rig.later,
        kick=False,
    )
    rig.runner.process(job_id)
    read, listed = rig.model.results()
    assert "--plan" in read[0] and "--dry-run" not in read[0]
    assert listed == ("src/cli.py\nsrc/new_flag.py\nsrc/util.py", False)
    assert f"at commit {rig.later}" in rig.model.system()


def test_without_a_commit_the_round_reads_the_default_branch_head(rig):
    rig.model.script([tool("source_read_file", path="src/new_flag.py")])
    run_job(rig, source_repository=str(rig.source))
    assert rig.model.results()[0] == ("src/new_flag.py (lines 1-1 of 1)\n     1\tNEW = 1", False)
    assert f"at commit {rig.later}" in rig.model.system()


def test_no_tool_writes_the_source_and_path_tricks_are_refused(rig):
    before = digest(rig.source)
    tricks = [
        "../docs.git/HEAD",
        "/etc/passwd",
        ".git/config",
        "src/../../docs.git/config",
        ".github/workflows/ci.yml",
        "src\\cli.py",
    ]
    rig.model.script(
        [
            *[tool("source_read_file", path=path) for path in tricks],
            tool("source_search", pattern="x", path_glob="../*"),
            tool("write_file", path="src/cli.py", content="hacked"),  # the docs repository's file, not the source's
        ]
    )
    job_id = run_job(rig, source_repository=str(rig.source), source_commit=rig.first)
    results = rig.model.results()
    for (text, is_error), path in zip(results[: len(tricks)], tricks, strict=True):
        assert is_error and "is not allowed" in text, (path, text)
    assert results[len(tricks)][1] and "must be a glob inside the repository" in results[len(tricks)][0]
    assert [name for name in rig.model.tools() if name.startswith("source_")] == [
        "source_list_files",
        "source_read_file",
        "source_search",
    ]
    assert digest(rig.source) == before
    assert rig.stack.ctx.services.jobs.get(job_id).status.value == "completed"
    assert rig.stack.ctx.git.out("cat-file", "-p", f"copydesk/{job_id}:src/cli.py", git_dir=rig.stack.repo) == "hacked"


def test_the_executor_has_no_tool_that_changes_the_source(open_workspace):
    docs, code = open_workspace({"docs/a.md": "# A\n"}), open_workspace({"src/a.py": "A = 1\n"})
    executor = ToolExecutor(docs, max_bytes_written=1000, source=code)
    for name in ("source_write_file", "source_edit_file", "source_move_file", "source_delete_file"):
        result = executor.execute(ToolCall("c", name, {"path": "src/a.py", "content": "x"}))
        assert result.is_error and result.content.startswith(f"unknown tool {name!r}"), result.content
    for name, args in (("write_file", {"path": "src/a.py", "content": "x"}), ("delete_file", {"path": "docs/a.md"})):
        assert not executor.execute(ToolCall("c", name, args)).is_error
    assert code.changes() == {} and docs.changes() == {"docs/a.md": None, "src/a.py": b"x"}
    assert executor.execute(ToolCall("c", "source_read_file", {"path": "src/a.py"})).content.endswith("A = 1")


def test_a_round_without_a_source_is_offered_no_source_tools(rig):
    rig.model.script([tool("source_list_files"), tool("finish", title="-", summary="Done.")])
    run_job(rig)
    assert not [name for name in rig.model.tools() if name.startswith("source_")]
    assert "source repository" not in rig.model.system()
    [(text, is_error)] = rig.model.results()
    assert is_error and text.startswith("unknown tool 'source_list_files'")


@pytest.mark.parametrize(
    "case", ["missing", "relative", "plain folder", "working copy", "unknown commit", "a mirror of Copydesk's"]
)
def test_a_source_that_cannot_be_read_fails_the_round_clearly(rig, tmp_path, git, case):
    if case == "missing":
        source, commit, says = str(tmp_path / "nowhere.git"), None, "does not exist"
    elif case == "relative":
        source, commit, says = "code.git", None, "is not an absolute path"
    elif case == "plain folder":
        (tmp_path / "plain").mkdir()
        source, commit, says = str(tmp_path / "plain"), None, "is not a bare git repository"
    elif case == "working copy":
        git.run("init", "-q", str(tmp_path / "work"))
        source, commit, says = str(tmp_path / "work"), None, "is a working copy"
    elif case == "unknown commit":
        source, commit, says = str(rig.source), "0" * 40, f"has no commit {'0' * 40}"
    else:
        run_job(rig)  # a first run makes the docs repository's mirror
        [mirror] = MirrorStore(rig.stack.settings.mirrors_dir, git).existing()
        source, commit, says = str(mirror.path), None, "inside Copydesk's own data folder"
    rig.model.script([tool("finish", title="-", summary="Should not run.")])
    turns = len(rig.model.turns)
    job_id = run_job(rig, source_repository=source, source_commit=commit)

    services = rig.stack.ctx.services
    job = services.jobs.get(job_id)
    assert job.status.value == "failed" and job.error["code"] == "source_unreachable", job.error
    assert "source repository" in job.error["message"] and says in job.error["message"], job.error["message"]
    [message] = [m for m in services.jobs.conversation(job_id) if m.role is Role.USER]
    assert message.status is MessageStatus.FAILED and message.attempts == 1  # one attempt, not a retry loop
    assert not services.jobs.has_pending(job_id)
    assert len(rig.model.turns) == turns  # the model was never called


@pytest.mark.parametrize(
    ("repository", "commit", "field"),
    [
        (None, "a" * 40, "sourceCommit"),
        ("/srv/code.git", "abc123", "sourceCommit"),
        ("   ", None, "sourceRepository"),
        ("/srv/code.git\nx", None, "sourceRepository"),
    ],
)
def test_a_malformed_source_is_refused_before_anything_is_stored(rig, repository, commit, field):
    services = rig.stack.ctx.services
    with pytest.raises(InvalidRequest) as refused:
        intake.create(
            services,
            rig.project,
            NewJob(prompt="x", model="recorded:x", ref="main", source_repository=repository, source_commit=commit),
        )
    assert refused.value.field == field
    assert services.jobs.counts(rig.project.id)["active"] == 0


# -- GitHub: another repository of the same installation -------------------------------------------------------

CODE_REPO = "acme/code"


def github_rig(gh_stack):
    stack = gh_stack()
    github = stack.github
    github.add_repo(CODE_REPO, files=CODE)
    github.add_repo("acme/secret", files={"KEYS.md": "hunter2\n"})
    github.add_repo("other/code", files=CODE)
    github.install("acme", [REPO, CODE_REPO])
    github.add_installation("other", ["other/code"])
    stack.drain()
    project = stack.project()
    model = Recorded()
    runner = JobRunner(stack.ctx.services, MirrorStore(stack.ctx.settings.mirrors_dir, stack.ctx.git), model.factory())
    return stack, project, model, runner


def run_github_job(stack, project, runner, **source) -> str:
    accepted = intake.create(
        stack.ctx.services, project, NewJob(prompt="Document the CLI", model="recorded:x", ref="main", **source)
    )
    runner.process(accepted.job.id)
    return accepted.job.id


def test_github_a_second_repository_of_the_installation_is_read_with_a_read_only_token(gh_stack):
    stack, project, model, runner = github_rig(gh_stack)
    github = stack.github
    first = github.branch_sha(CODE_REPO, "main")
    later = github.push(CODE_REPO, LATER)
    model.script(
        [
            tool("source_read_file", path="src/cli.py"),
            tool("source_list_files", pattern="src/**"),
            tool("write_file", path="docs/cli.md", content="# CLI\n"),
        ]
    )
    job_id = run_github_job(stack, project, runner, source_repository=CODE_REPO, source_commit=first)

    assert stack.ctx.services.jobs.get(job_id).status.value == "completed"
    read, listed, _written = model.results()
    assert "--dry-run" in read[0] and "--plan" not in read[0]
    assert listed == ("src/cli.py\nsrc/util.py", False)
    # The source's token was limited to it and to reading; nothing was pushed there or opened on it.
    minted = [
        r.json
        for r in github.requests
        if r.path.endswith("/access_tokens") and r.json and r.json.get("repositories") == ["code"]
    ]
    assert minted and all(body["permissions"] == {"contents": "read", "metadata": "read"} for body in minted)
    assert github.branch_sha(CODE_REPO, "main") == later
    assert (
        stack.ctx.git.out("for-each-ref", "--format=%(refname)", git_dir=github.repo_path(CODE_REPO))
        == "refs/heads/main"
    )
    assert github.pulls(CODE_REPO) == [] and len(github.pulls(REPO)) == 1


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("acme/secret", "does not give it access to the source acme/secret"),
        ("other/code", "is not a repository of acme"),
        ("acme/missing", "does not give it access to the source acme/missing"),
        ("acme", "is not a repository of acme"),
    ],
)
def test_github_a_repository_the_installation_cannot_read_fails_the_round(gh_stack, source, says):
    stack, project, model, runner = github_rig(gh_stack)
    model.script([tool("finish", title="-", summary="Should not run.")])
    job_id = run_github_job(stack, project, runner, source_repository=source)
    job = stack.ctx.services.jobs.get(job_id)
    assert job.status.value == "failed" and job.error["code"] == "source_unreachable", job.error
    assert says in job.error["message"], job.error["message"]
    assert model.turns == []
    assert stack.project().enabled  # the project's own access is untouched


def test_github_a_commit_missing_from_the_source_fails_the_round(gh_stack):
    stack, project, model, runner = github_rig(gh_stack)
    job_id = run_github_job(stack, project, runner, source_repository=CODE_REPO, source_commit="f" * 40)
    job = stack.ctx.services.jobs.get(job_id)
    assert job.status.value == "failed" and job.error["code"] == "source_unreachable", job.error
    assert f"has no commit {'f' * 40}" in job.error["message"], job.error["message"]


def test_github_a_source_taken_out_of_the_installation_fails_the_next_round(gh_stack):
    stack, project, model, runner = github_rig(gh_stack)
    model.script([tool("source_list_files", pattern="src/*")], [tool("source_list_files", pattern="src/*")])
    job_id = run_github_job(stack, project, runner, source_repository=CODE_REPO)
    assert model.results() == [("src/cli.py\nsrc/util.py", False)]

    # Its token is still cached, but GitHub answers the fetch with 404 now: the round fails, nothing is read.
    stack.github.remove_repos_from_installation(int(project.host_data["installation_id"]), [CODE_REPO])
    stack.drain()
    services = stack.ctx.services
    intake.follow_up(services, project, services.jobs.get(job_id), "Again", source_repository=CODE_REPO, kick=False)
    turns = len(model.turns)
    runner.process(job_id)
    last = services.jobs.conversation(job_id)[-1]
    assert last.role is Role.USER and last.status is MessageStatus.FAILED
    assert (
        last.error["code"] == "source_unreachable"
        and "git could not read the source repository acme/code" in last.error["message"]
    ), last.error
    assert len(model.turns) == turns
