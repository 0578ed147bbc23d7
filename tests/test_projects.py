"""Projects that follow a code host's installations: one per repository, disabled with a reason, re-enabled."""

import threading

from service.ids import UlidGenerator
from service.projectstate import DisabledReason
from service.store.projects import ProjectStore
from tests.harness import wait_until
from tests.model_fixtures import PROVIDERS
from tests.model_standin import Hang, ModelStandIn, Reply, ToolUse

REPO = dict(
    account="acme",
    host="github",
    repository="acme/docs",
    web_url="https://github.com/acme/docs",
    ref="main",
    host_data={"installation_id": 7, "repository_id": 70},
)


def test_ensure_makes_one_project_per_repository_and_re_enables_it(redis_client):
    projects = ProjectStore(redis_client, UlidGenerator())
    first, created = projects.ensure(**REPO)
    assert created and first.enabled
    projects.disable(first.id, DisabledReason.INSTALLATION_REMOVED)
    assert projects.get(first.id).disabled_reason == "installation_removed"

    again, created = projects.ensure(
        **{**REPO, "repository": "ACME/docs", "ref": "trunk", "host_data": {"installation_id": 8}}
    )
    assert not created and again.id == first.id
    stored = projects.get(first.id)
    assert stored.enabled and stored.disabled_reason is None and stored.ref == "trunk"
    assert stored.host_data == {"installation_id": 8, "repository_id": 70}
    assert projects.find_by_repository("github", "acme/DOCS").id == first.id
    assert projects.find_by_repository("local", "acme/docs") is None
    assert [p.id for p in projects.all()] == [first.id]


def test_racing_deliveries_for_one_repository_make_one_project(redis_url):
    import redis

    barrier = threading.Barrier(8)
    made = []

    def deliver():
        store = ProjectStore(redis.Redis.from_url(redis_url), UlidGenerator())
        barrier.wait()
        made.append(store.ensure(**REPO))

    threads = [threading.Thread(target=deliver) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({project.id for project, _ in made}) == 1
    assert sum(created for _, created in made) == 1


def test_a_project_disabled_before_its_run_fails_the_run_with_the_reason(stack):
    stack.script([{"tool": "finish", "args": {"title": "t", "summary": "s"}}])
    job = stack.create().json()
    stack.ctx.services.projects.disable(stack.project_id, DisabledReason.INSTALLATION_REMOVED)
    stack.drain()
    failed = stack.job(job["id"])
    assert failed["status"] == "failed" and failed["error"]["code"] == "installation_removed"
    assert "uninstalled" in failed["error"]["message"]


def test_access_removed_during_a_run_fails_it_before_the_push(stack_factory):
    with ModelStandIn() as standin:
        stack = stack_factory(**PROVIDERS["openai"](standin))
        answer = threading.Event()  # the model thinks until the project is gone, however long that takes
        standin.script(
            Hang(120, until=answer),
            Reply(tool_calls=[ToolUse("write_file", {"path": "docs/new.md", "content": "# New\n"})]),
            Reply(tool_calls=[ToolUse("finish", {"title": "New page", "summary": "Added it."})]),
        )
        job = stack.create().json()

        def uninstall_while_the_model_thinks():
            try:
                wait_until(lambda: standin.requests, 60, "the run's model call", interval=0.02)
                stack.ctx.services.projects.disable(stack.project_id, DisabledReason.INSTALLATION_REMOVED)
            finally:
                answer.set()

        remover = threading.Thread(target=uninstall_while_the_model_thinks)
        remover.start()
        stack.drain()
        remover.join()
    failed = stack.job(job["id"])
    assert failed["status"] == "failed" and failed["error"]["code"] == "installation_removed"
    assert stack.ctx.git.out("branch", "--list", "copydesk/*", git_dir=stack.repo) == ""
    # Still readable: get, list and the conversation.
    assert stack.api.get(f"/v2/agent/{stack.project_id}/jobs").json()["jobs"][0]["id"] == job["id"]
    assert stack.conversation(job["id"])[0]["status"] == "failed"
