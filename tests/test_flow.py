"""The whole job flow over real HTTP, real Redis, real git and a real RQ worker."""

import os
import subprocess
import sys

import requests

from service.projectstate import DisabledReason
from service.workspace.git import Git
from tests.conftest import commit_files
from tests.flow_scripts import FAQ, branch_log, edit, finish, show


def test_create_runs_to_completed_with_a_pull_request(stack):
    stack.script([FAQ, finish()])
    created = stack.create("Add an FAQ page")
    assert created.status_code == 201
    job = created.json()
    assert created.headers["Location"] == f"/v2/agent/{stack.project_id}/job/{job['id']}"
    assert job["status"] == "active" and job["prLink"] is None and job["archivedAt"] is None
    assert job["source"] == {"repository": f"{stack.url}/local/{stack.project_id}", "ref": "main"}
    assert job["model"] == stack.settings.model

    stack.drain()

    done = stack.job(job["id"])
    assert done["status"] == "completed", done
    assert done["branch"] == f"copydesk/{job['id']}"
    assert done["prLink"] == f"{stack.url}/local/{stack.project_id}/pulls/1"
    assert show(stack.repo, done["branch"], "docs/faq.md") == "# FAQ\n\nAsk away."
    assert show(stack.repo, "main", "docs/index.md").startswith("# Widgets")  # base untouched
    assert requests.get(done["prLink"], timeout=10, allow_redirects=False).status_code == 303  # sign in first
    page = stack.operator().get(done["prLink"], timeout=10)
    assert page.status_code == 200
    assert "Add an FAQ" in page.text and "+# FAQ" in page.text and str(stack.repo) not in page.text
    roles = [(m["role"], m.get("status")) for m in stack.conversation(job["id"])]
    assert roles == [("user", "processed"), ("agent", None)]


def test_follow_up_adds_a_commit_to_the_same_branch_and_pull_request(stack):
    stack.script(
        [FAQ, finish()], [edit("docs/faq.md", "Ask away.", "Ask away, politely."), finish("Polite", "Politer.")]
    )
    job = stack.create().json()
    stack.drain()
    first = stack.job(job["id"])

    answer = stack.message(job["id"], "Make it more polite")
    assert answer.status_code == 200 and answer.json()["status"] == "active"
    # The spec: prLink is null while the job is active; the branch stays visible.
    assert answer.json()["prLink"] is None and answer.json()["branch"] == first["branch"]
    stack.drain()

    second = stack.job(job["id"])
    assert second["status"] == "completed"
    assert second["prLink"] == first["prLink"]
    assert branch_log(stack.repo, second["branch"])[-2:] == ["Add an FAQ", "Polite"]
    assert "politely" in show(stack.repo, second["branch"], "docs/faq.md")
    pull = stack.ctx.local.pull(stack.project_id, 1)
    # One comment per round, each edited in place to its outcome.
    assert [c["body"].split(" · ")[0] for c in pull.comments] == ["**Round 1**", "**Round 2**"]
    assert "Politer." in pull.comments[1]["body"] and "✅ done" in pull.comments[1]["body"]
    assert len(stack.ctx.local.pulls(stack.project_id)) == 1


def test_messages_sent_while_active_wait_their_turn_in_order(stack):
    stack.script(
        [FAQ, finish("one", "first")],
        [edit("docs/faq.md", "Ask away.", "Ask away. Two."), finish("two", "second")],
        [edit("docs/faq.md", "Two.", "Two. Three."), finish("three", "third")],
    )
    job = stack.create().json()
    assert stack.message(job["id"], "second").json()["status"] == "active"
    assert stack.message(job["id"], "third").json()["status"] == "active"

    stack.drain()

    done = stack.job(job["id"])
    assert done["status"] == "completed"
    assert branch_log(stack.repo, done["branch"])[-3:] == ["one", "two", "three"]
    assert "Ask away. Two. Three." in show(stack.repo, done["branch"], "docs/faq.md")
    users = [m for m in stack.conversation(job["id"]) if m["role"] == "user"]
    assert [m["content"] for m in users] == ["Improve the docs", "second", "third"]
    assert all(m["status"] == "processed" for m in users)


def test_two_worker_processes_never_run_one_job_twice_at_once(stack, tmp_path):
    runs = [
        [
            {"tool": "write_file", "args": {"path": f"docs/page{i}.md", "content": f"# Page {i}\n"}},
            finish(f"page {i}", f"added page {i}"),
        ]
        for i in range(4)
    ]
    stack.script(*runs)
    job = stack.create().json()
    for i in range(1, 4):
        stack.message(job["id"], f"page {i}")
    env = {**os.environ, **stack.env()}
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "worker", "--burst"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    for worker in workers:
        assert worker.wait(timeout=120) == 0, worker.stderr.read().decode()
    stack.drain()  # whatever a burst worker left queued when the other took the lock

    done = stack.job(job["id"])
    assert done["status"] == "completed"
    assert branch_log(stack.repo, done["branch"])[-4:] == ["page 0", "page 1", "page 2", "page 3"]
    users = [m for m in stack.ctx.services.jobs.conversation(job["id"]) if m.role.value == "user"]
    assert [m.attempts for m in users] == [1, 1, 1, 1]


def test_archive_then_a_message_is_refused(stack):
    stack.script([FAQ, finish()])
    job = stack.create().json()
    stack.drain()
    archived = stack.api.post(f"/v2/agent/{stack.project_id}/job/{job['id']}/archive")
    assert archived.status_code == 200
    record = archived.json()
    assert record["status"] == "archived" and record["archivedAt"] is not None
    again = stack.api.post(f"/v2/agent/{stack.project_id}/job/{job['id']}/archive")
    assert again.status_code == 200 and again.json()["archivedAt"] == record["archivedAt"]

    refused = stack.message(job["id"], "one more thing")
    assert refused.status_code == 409
    assert refused.headers["Content-Type"] == "application/json"
    assert refused.json()["code"] == "job_archived"


def test_archiving_an_active_job_cancels_its_waiting_messages(stack):
    job = stack.create().json()
    stack.message(job["id"], "later")
    stack.api.post(f"/v2/agent/{stack.project_id}/job/{job['id']}/archive")
    stack.drain()
    assert stack.job(job["id"])["status"] == "archived"
    statuses = [m["status"] for m in stack.conversation(job["id"]) if m["role"] == "user"]
    assert statuses == ["cancelled", "cancelled"]


def test_a_run_without_changes_pushes_nothing_and_leaves_pr_link_null(stack):
    stack.script([finish("Nothing", "The docs already say that.")])
    job = stack.create("Do the docs mention pip?").json()
    stack.drain()
    done = stack.job(job["id"])
    assert done["status"] == "completed" and done["prLink"] is None and done["branch"] is None
    heads = Git().out("for-each-ref", "--format=%(refname)", "refs/heads", git_dir=stack.repo).splitlines()
    assert heads == ["refs/heads/main"]
    assert stack.conversation(job["id"])[-1]["content"] == "The docs already say that."


def test_follow_up_keeps_a_commit_a_person_pushed_to_the_branch(stack):
    stack.script([FAQ, finish()], [edit("docs/faq.md", "Ask away.", "Ask away!"), finish("Excited", "!")])
    job = stack.create().json()
    stack.drain()
    branch = stack.job(job["id"])["branch"]
    commit_files(
        Git(),
        stack.repo,
        {"docs/install.md": "# Install\n\nA person's fix.\n"},
        branch=branch,
        message="A person's fix",
    )

    stack.message(job["id"], "excite it")
    stack.drain()

    assert branch_log(stack.repo, branch)[-3:] == ["Add an FAQ", "A person's fix", "Excited"]
    assert show(stack.repo, branch, "docs/install.md") == "# Install\n\nA person's fix."
    assert show(stack.repo, branch, "docs/faq.md") == "# FAQ\n\nAsk away!"


def test_a_missing_base_branch_fails_the_job_with_a_clear_error(stack):
    job = stack.create(ref="does-not-exist").json()
    stack.drain()
    failed = stack.job(job["id"])
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "ref_not_found"
    assert "does-not-exist" in failed["error"]["message"]


def test_a_failed_job_becomes_active_again_with_a_follow_up(stack):
    job = stack.create(ref="nope").json()
    stack.drain()
    assert stack.job(job["id"])["status"] == "failed"
    assert stack.message(job["id"], "try again").json()["status"] == "active"


def test_concurrent_runners_on_one_job_take_turns_and_run_each_message_once(stack):
    import threading

    runs = [
        [
            {"tool": "write_file", "args": {"path": f"docs/p{i}.md", "content": f"# P{i}\n"}},
            finish(f"p{i}", f"added p{i}"),
        ]
        for i in range(5)
    ]
    stack.script(*runs)
    job_id = stack.create().json()["id"]
    for i in range(1, 5):
        stack.message(job_id, f"p{i}")
    jobs = stack.ctx.services.jobs
    start = threading.Barrier(4)
    errors = []

    def work():
        try:
            runner = stack.ctx.runner()  # one per thread, as each worker process has its own
            start.wait()
            while jobs.has_pending(job_id):
                runner.process(job_id)
        except Exception as exc:  # surfaced below; a thread's exception would otherwise vanish
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    users = [m for m in jobs.conversation(job_id) if m.role.value == "user"]
    assert [m.attempts for m in users] == [1] * 5
    done = stack.job(job_id)
    assert done["status"] == "completed"
    assert branch_log(stack.repo, done["branch"])[1:] == [f"p{i}" for i in range(5)]


def test_a_disabled_project_keeps_its_jobs_readable_but_takes_no_work(stack):
    stack.script([FAQ, finish()])
    done = stack.create().json()
    stack.drain()
    waiting = stack.create().json()  # queued, not yet run when the project is switched off
    projects = stack.ctx.services.projects
    projects.disable(stack.project_id, DisabledReason.ADMIN)

    for response in (stack.create(), stack.message(done["id"], "more")):
        assert response.status_code == 409 and response.json()["code"] == "project_disabled"
    assert stack.job(done["id"])["status"] == "completed"
    assert stack.api.get(f"/v2/agent/{stack.project_id}/jobs").status_code == 200
    assert stack.api.get(f"/v2/agent/{stack.project_id}/job/{done['id']}/messages").status_code == 200
    stack.drain()
    failed = stack.job(waiting["id"])
    assert failed["status"] == "failed" and failed["error"]["code"] == "project_disabled"

    projects.enable(stack.project_id)
    assert stack.message(done["id"], "more").status_code == 200


def test_finished_jobs_idle_past_retention_are_archived(stack):
    from datetime import timedelta

    from service.dispatch import archive_inactive

    stack.script([FAQ, finish()])
    finished = stack.create().json()
    stack.drain()
    active = stack.create().json()
    jobs = stack.ctx.services.jobs
    assert archive_inactive(jobs, older_than=timedelta(days=1)) == []
    assert archive_inactive(jobs, older_than=timedelta(0)) == [finished["id"]]
    assert stack.job(finished["id"])["status"] == "archived"
    assert stack.job(active["id"])["status"] == "active"
