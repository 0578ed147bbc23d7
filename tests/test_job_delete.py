"""Deleting a job: everything kept about it goes (record, prompts, conversation, events, per-job usage, idempotency
entries, list entries); the account's monthly totals, the branch and the pull request stay."""

from service.store.usage import UsageLedger
from tests.flow_scripts import FAQ, branch_exists, finish, job_keys_left


def delete(stack, job_id: str, key: str | None = None):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return stack.api.delete(f"/v2/agent/{stack.project_id}/job/{job_id}", headers=headers)


def test_deleting_a_finished_job_removes_all_it_kept_but_its_branch_pull_request_and_monthly_totals(stack):
    stack.script([FAQ, finish()])
    created = stack.api.post(
        f"/v2/agent/{stack.project_id}/job", json={"prompt": "Add an FAQ"}, headers={"Idempotency-Key": "faq-1"}
    )
    job_id = created.json()["id"]
    stack.drain()
    done = stack.job(job_id)
    assert done["status"] == "completed" and done["prLink"]
    messages = [m["id"] for m in stack.conversation(job_id)]
    client = stack.ctx.services.redis
    ledger = UsageLedger(client)
    # The scripted model reports no tokens: count some for the account's month.
    ledger.add("local", "local", None, {"inputTokens": 10, "outputTokens": 5})
    month_before = ledger.account("local", "local")

    answer = delete(stack, job_id)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "deleted": True,
        "id": job_id,
        "kept": {"branch": f"copydesk/{job_id}", "prLink": done["prLink"], "note": answer.json()["kept"]["note"]},
    }
    assert job_keys_left(client, job_id, messages) == []
    for path in ("", "/messages", "/events?after=0"):
        gone = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job_id}{path}")
        assert gone.status_code == 404 and gone.json()["code"] == "job_not_found"
    assert stack.api.get(f"/v2/agent/{stack.project_id}/jobs").json()["jobs"] == []
    assert UsageLedger(client).account("local", "local") == month_before
    assert branch_exists(stack, f"copydesk/{job_id}")
    number = int(done["prLink"].rsplit("/", 1)[1])
    assert stack.ctx.local.pull(stack.project_id, number) is not None

    # Deleting again: 404, nothing else touched. The same Idempotency-Key makes a new job, not the deleted one.
    assert delete(stack, job_id).json()["code"] == "job_not_found"
    again = stack.api.post(
        f"/v2/agent/{stack.project_id}/job", json={"prompt": "Add an FAQ"}, headers={"Idempotency-Key": "faq-1"}
    )
    assert again.status_code == 201 and again.json()["id"] != job_id


def test_an_active_job_is_refused_until_cancelled(stack):
    stack.script([FAQ, finish()])
    job_id = stack.create().json()["id"]
    refused = delete(stack, job_id)
    assert refused.status_code == 409 and refused.json()["code"] == "job_active"
    assert stack.job(job_id)["status"] == "active"
    assert stack.api.post(f"/v2/agent/{stack.project_id}/job/{job_id}/cancel").status_code == 200
    assert delete(stack, job_id).status_code == 200
    stack.drain()  # the run queued for it finds nothing, and writes nothing back
    assert job_keys_left(stack.ctx.services.redis, job_id, []) == []


def test_a_read_only_key_may_not_delete(stack):
    stack.script([FAQ, finish()])
    job_id = stack.create().json()["id"]
    stack.api.post(f"/v2/agent/{stack.project_id}/job/{job_id}/cancel")
    from service.models import KeyAccess

    _key, reader = stack.ctx.services.keys.create(
        account="local", name="reader", access=KeyAccess.READ_ONLY, created_by="operator", host="local"
    )
    refused = delete(stack, job_id, reader)
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    assert stack.job(job_id)["id"] == job_id


def test_the_dashboard_deletes_a_job_after_a_confirmation(stack):
    import re

    stack.script([FAQ, finish()])
    job_id = stack.create().json()["id"]
    stack.drain()
    operator = stack.operator()
    path = f"{stack.url}/dashboard/projects/{stack.project_id}/jobs/{job_id}"
    shown = operator.get(path, timeout=10).text
    assert "Delete this job" in shown and f"copydesk/{job_id}" in shown
    token = re.search(r'name="csrf_token" value="([^"]+)"', shown).group(1)
    unconfirmed = operator.post(f"{path}/delete", data={"csrf_token": token}, timeout=10)
    assert unconfirmed.status_code == 400 and stack.job(job_id)["id"] == job_id
    forged = operator.post(f"{path}/delete", data={"csrf_token": "nope", "confirm": job_id}, timeout=10)
    assert forged.status_code in (400, 403) and stack.job(job_id)["id"] == job_id
    pr_link = stack.job(job_id)["prLink"]
    done = operator.post(f"{path}/delete", data={"csrf_token": token, "confirm": job_id}, timeout=10)
    assert done.status_code == 200 and done.url.endswith(f"/projects/{stack.project_id}/jobs")
    assert stack.ctx.services.jobs.find(job_id) is None
    # The pull request stays; its page says the job is gone and offers no follow-up.
    pull = operator.get(pr_link, timeout=10)
    assert pull.status_code == 200 and "The job was deleted" in pull.text and 'name="body"' not in pull.text


def test_the_cli_deletes_a_job(stack):
    import json
    import os
    import subprocess
    import sys

    stack.script([FAQ, finish()])
    job_id = stack.create().json()["id"]
    cli = [sys.executable, "-m", "bot.cli", "job", "delete", job_id, "--json"]
    env = {**os.environ, **stack.env()}
    refused = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "cancel it first" in refused.stderr
    stack.drain()
    done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["deleted"], answer["id"], answer["kept"]["branch"]) == (True, job_id, f"copydesk/{job_id}")
    assert answer["kept"]["prLink"].startswith(stack.url)
    assert stack.ctx.services.jobs.find(job_id) is None


def test_deleting_a_github_job_leaves_no_key_of_it_after_a_ci_round_a_diff_view_and_a_closed_pull(gh_stack):
    from bot.dashboard.github_diff import build as diff_reader
    from bot.github.settings import GitHubSettings
    from tests.github_fixtures import REPO, write
    from tests.github_fixtures import finish as gh_finish

    stack = gh_stack()
    github = stack.github
    stack.script(
        [write("docs/faq.md", "# FAQ\n\nAsk away, eg by mail.\n"), gh_finish("Add an FAQ", "Added it.")],
        [write("docs/faq.md", "# FAQ\n\nAsk away, e.g. by mail.\n"), gh_finish("Fix Vale", "Fixed.")],
    )
    github.install("acme", [REPO])
    stack.drain()
    project, api = stack.project(), stack.api()
    job_id = api.post(f"/v2/agent/{project.id}/job", json={"prompt": "Add an FAQ"}).json()["id"]
    stack.drain()
    [pull] = github.pulls(REPO)
    first = github.branch_sha(REPO, f"copydesk/{job_id}")
    github.check_run(REPO, first, "vale", "failure", summary="Vale found 1 error")  # a CI round: its seen marks
    stack.drain()
    services = stack.ctx.services
    job, conversation = services.jobs.get(job_id), services.jobs.conversation(job_id)
    head = next(m.commit for m in reversed(conversation) if m.commit)
    shown = diff_reader(GitHubSettings.from_env(), services.redis).for_job(project, job, head)
    assert shown.problem is None  # the dashboard's diff cache holds it now
    github.close(REPO, pull["number"], "alice")  # the pull request's end is recorded and the job archived
    stack.drain()
    messages = [m["id"] for m in api.get(f"/v2/agent/{project.id}/job/{job_id}/messages").json()["messages"]]
    named = [key for key in services.redis.scan_iter() if job_id.encode() in key]
    assert {b"cd:gh:ci-rounds:" + job_id.encode(), b"cd:gh:pull-state:" + job_id.encode()} <= set(named)
    assert any(key.startswith(b"cd:gh:ci-seen:") for key in named)
    assert any(key.startswith(b"cd:dash:gh-diff:") for key in named)

    deleted = api.delete(f"/v2/agent/{project.id}/job/{job_id}")
    assert deleted.status_code == 200, deleted.text
    assert job_keys_left(services.redis, job_id, messages) == []
