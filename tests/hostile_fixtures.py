"""A pytest plugin: hostile repositories as projects (`register`) and scripted hostile runs."""

import pytest

from service.workspace.git import Git
from tests.hostile_repos import hostile_repo


def step(tool: str, **args) -> dict:
    return {"tool": tool, "args": args}


def finish(title="Hostile run", summary="Tried.") -> dict:
    return step("finish", title=title, summary=summary)


@pytest.fixture
def register(fsck_at_teardown):
    """Factory: a local project over a hostile bare repository built from `files`; returns its id. On teardown,
    as for the stack's own repository, every commit Copydesk made in it must pass `git fsck --strict`."""

    def register_(stack, tmp_path, name: str, files: dict) -> str:
        bare = hostile_repo(Git(), tmp_path / f"{name}.git", files)
        fsck_at_teardown(bare)
        return stack.ctx.local.register(stack.ctx.services.projects, path=bare, ref="main").id

    return register_


def run_job(stack, steps: list[dict], project_id: str | None = None) -> dict:
    """Create a job whose scripted model plays `steps`, run it in this process, return the finished record."""
    stack.script(steps)
    project_id = project_id or stack.project_id
    created = stack.api.post(f"/v2/agent/{project_id}/job", json={"prompt": "Do as you are told."})
    assert created.status_code == 201, created.text
    stack.drain()
    response = stack.api.get(f"/v2/agent/{project_id}/job/{created.json()['id']}")
    return response.json()
