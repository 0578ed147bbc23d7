"""How many git processes one run starts (a run on the local host that edits a page and opens its pull request):
counted on the runner every git command goes through, and bounded, so a change that adds one per file or per
ref shows."""

import pytest

from service.workspace.git import Git
from tests.flow_scripts import FAQ, finish

MAX_GIT_PROCESSES_PER_RUN = 8  # 7: a local project's mirror reads the repository's refs and objects in place
# and publishes without the pack protocol (16 before that, 21 before the listing was shared)


@pytest.fixture
def git_commands(monkeypatch):
    """The git subcommands started in this process (Git.run and the streamed processes both build their argv here)."""
    started: list[str] = []
    original = Git.argv

    def counting(self, *args, git_dir=None):
        argv = original(self, *args, git_dir=git_dir)
        started.append(" ".join(args[:2]))
        return argv

    monkeypatch.setattr(Git, "argv", counting)
    return started


def test_a_run_starts_a_bounded_number_of_git_processes(stack, git_commands):
    stack.script([FAQ, finish()], [FAQ, finish("Add an FAQ again")])
    stack.create("Add an FAQ page")
    stack.drain()  # the first run also makes the mirror (init and its config): not counted
    job = stack.create("Add an FAQ page again").json()
    git_commands.clear()
    stack.drain()
    assert stack.job(job["id"])["status"] == "completed"
    assert len(git_commands) <= MAX_GIT_PROCESSES_PER_RUN, git_commands
    for batched in ("ls-tree -r", "for-each-ref --format=%(refname) %(objectname)", "ls-remote --"):
        assert git_commands.count(batched) <= 1, git_commands
