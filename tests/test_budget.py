"""Cost caps: a job's token budget across rounds, each request's output cut to what remains, monthly totals per
account and key, and an account's monthly cap."""

import threading

from service.store.jobs import RunOutcome
from service.store.usage import month_of
from tests.event_reading import page
from tests.model_fixtures import PROVIDERS
from tests.model_standin import Reply, ToolUse


def reads(n: int) -> list[Reply]:
    return [
        Reply(tool_calls=[ToolUse("read_file", {"path": "docs/index.md"})], input_tokens=10, output_tokens=5)
        for _ in range(n)
    ]


def test_a_run_stops_at_its_budget_with_each_request_cut_to_what_remains(stack_factory, standin):
    stack = stack_factory(**PROVIDERS["openai"](standin))
    standin.script(*reads(10))
    job = stack.create("Read a lot", maxTokens=40).json()
    stack.drain()

    failed = stack.job(job["id"])
    assert failed["status"] == "failed" and failed["error"]["code"] == "budget_exceeded"
    # 15 tokens a call: limits of 40, 25 and 10 tokens; the third call passes the budget (its input was not cut).
    assert [r.body["max_completion_tokens"] for r in standin.requests] == [40, 25, 10]
    usage = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}/messages").json()["usage"]
    assert usage == {
        "inputTokens": 30,
        "outputTokens": 15,
        "cacheReadTokens": 0,
        "cacheWriteTokens": 0,
        "billableTokens": 45,
        "maxTokens": 40,
        "remainingTokens": 0,
    }
    types = [e["type"] for e in page(stack, job["id"])]
    assert types[-3:] == ["run.finished", "job.budget_reached", "job.failed"]
    budget = page(stack, job["id"])[-2]["data"]["budget"]
    assert budget == {"maxTokens": 40, "usedTokens": 45}

    # The budget spans rounds: a follow-up on a spent job fails before calling the model.
    stack.message(job["id"], "Go on")
    stack.drain()
    assert stack.job(job["id"])["error"]["code"] == "budget_exceeded" and len(standin.requests) == 3


def test_the_projects_default_budget_applies_and_an_explicit_one_wins(stack):
    stack.ctx.services.projects.set_max_tokens(stack.project_id, 1000)
    plain, chosen = stack.create().json(), stack.create(maxTokens=50).json()
    usage = [
        stack.api.get(f"/v2/agent/{stack.project_id}/job/{j['id']}/messages").json()["usage"]["maxTokens"]
        for j in (plain, chosen)
    ]
    assert usage == [1000, 50]
    bad = stack.create(maxTokens=0)
    assert bad.status_code == 400 and bad.json()["field"] == "maxTokens"


def test_usage_is_totalled_per_account_and_key_and_a_monthly_cap_refuses_new_work(stack):
    services = stack.ctx.services
    job = stack.create().json()
    _job, message = services.jobs.start_next(job["id"])
    services.usage.add("local", "local", message.key_id, {"inputTokens": 700, "outputTokens": 300})  # as a run does
    services.jobs.finish_message(
        job["id"], message.id, RunOutcome(reply="done", usage={"inputTokens": 700, "outputTokens": 300})
    )
    totals = stack.api.get("/v2/agent/usage").json()
    assert totals["month"] == month_of()
    assert totals["account"] == {
        "name": "local",
        "month": month_of(),
        "inputTokens": 700,
        "outputTokens": 300,
        "cacheReadTokens": 0,
        "cacheWriteTokens": 0,
        "billableTokens": 1000,
        "monthlyCap": None,
    }
    assert totals["key"]["inputTokens"] == 700 and totals["key"]["id"].startswith("key_")

    services.usage.set_cap("local", "local", 1000)
    for refused in (stack.create(), stack.message(job["id"], "more")):
        assert refused.status_code == 429 and refused.json()["code"] == "monthly_budget_exceeded"
        assert int(refused.headers["Retry-After"]) > 0
    assert len(stack.conversation(job["id"])) == 2  # nothing was stored
    services.usage.set_cap("local", "local", 5000)
    assert stack.create().status_code == 201
    assert stack.api.get("/v2/agent/usage", params={"month": "2026-13"}).status_code == 400


CALL = {"input": 60, "output": 40}  # tokens of each model call below


def endless_reads(_body) -> tuple[float, Reply]:
    """A model that never finishes: each call reads a file and costs 100 tokens (a little later, so runs overlap)."""
    return 0.05, Reply(
        tool_calls=[ToolUse("read_file", {"path": "docs/index.md"})],
        input_tokens=CALL["input"],
        output_tokens=CALL["output"],
    )


def test_parallel_runs_stop_at_the_monthly_cap_passing_it_by_at_most_one_call_each(stack_factory, standin):
    stack = stack_factory(**PROVIDERS["openai"](standin), max_steps=50)
    services = stack.ctx.services
    services.usage.set_cap("local", "local", 1000)
    standin.respond(endless_reads)
    jobs = [stack.create(f"Read the docs, round {n}").json()["id"] for n in range(8)]  # all accepted: nothing used yet
    runs = [
        threading.Thread(target=stack.ctx.runner(worker=f"worker-{n}").process, args=(job_id,))
        for n, job_id in enumerate(jobs)
    ]
    for run in runs:
        run.start()
    for run in runs:
        run.join(timeout=120)
    assert not any(run.is_alive() for run in runs)

    used = services.usage.account("local", "local").total
    one_call = CALL["input"] + CALL["output"]
    print(f"8 parallel runs under a 1,000-token cap used {used:,} tokens in {len(standin.requests)} model calls")
    assert 1000 <= used <= 1000 + 8 * one_call, used
    assert used == one_call * len(standin.requests)  # every call counted, once
    for job_id in jobs:
        failed = stack.job(job_id)
        assert failed["status"] == "failed" and failed["error"]["code"] == "monthly_budget_exceeded", failed
    # The runs' own records add up to the same total.
    runs_usage = sum(
        u["inputTokens"] + u["outputTokens"]
        for u in (stack.api.get(f"/v2/agent/{stack.project_id}/job/{j}/messages").json()["usage"] for j in jobs)
    )
    assert runs_usage == used


def test_same_named_accounts_on_two_code_hosts_have_their_own_totals_and_caps(stack, make_repo):
    services = stack.ctx.services
    local = stack.ctx.local.register(
        services.projects, path=make_repo({"docs/a.md": "a"}, name="team-local"), ref="main", account="team"
    )
    github = services.projects.add(
        account="team", host="github", repository="team/docs", web_url="https://github.com/team/docs", ref="main"
    )
    keys = {}
    for project in (local, github):
        _key, plaintext = services.keys.create(account="team", name=project.host, host=project.host)
        keys[project.host] = {"Authorization": f"Bearer {plaintext}"}
    services.usage.add("local", "team", None, {"inputTokens": 900, "outputTokens": 100})
    services.usage.set_cap("local", "team", 1000)

    def usage_of(host: str) -> dict:
        return stack.api.get("/v2/agent/usage", headers=keys[host]).json()["account"]

    assert (usage_of("local")["inputTokens"], usage_of("local")["monthlyCap"]) == (900, 1000)
    assert (usage_of("github")["inputTokens"], usage_of("github")["monthlyCap"]) == (0, None)
    refused = stack.api.post(f"/v2/agent/{local.id}/job", json={"prompt": "x"}, headers=keys["local"])
    assert refused.status_code == 429 and refused.json()["code"] == "monthly_budget_exceeded"
    services.usage.check("github", "team")  # the GitHub org's work is not refused by the local account's cap

    # Totals and a cap from before they were kept per host stood for both accounts: both still see them.
    month = month_of()
    services.redis.hset(f"cd:usage:account:team:{month}", mapping={"inputTokens": 5, "outputTokens": 5})
    services.redis.set("cd:account:team:monthly-token-cap", 2000)
    assert services.usage.account("github", "team").total == 10
    assert services.usage.account("local", "team").total == 1010
    assert services.usage.cap("github", "team") == 2000 and services.usage.cap("local", "team") == 1000
    services.usage.set_cap("github", "team", None)  # lifted for the GitHub org only
    assert services.usage.cap("github", "team") is None


def test_a_run_accepted_before_the_cap_was_used_up_fails_at_its_start_without_calling_the_model(stack_factory, standin):
    stack = stack_factory(**PROVIDERS["openai"](standin))
    services = stack.ctx.services
    services.usage.set_cap("local", "local", 1000)
    job = stack.create().json()  # accepted: nothing used yet
    services.usage.add("local", "local", None, {"inputTokens": 600, "outputTokens": 400})  # other work, meanwhile
    stack.drain()
    failed = stack.job(job["id"])
    assert failed["status"] == "failed" and failed["error"]["code"] == "monthly_budget_exceeded"
    assert "monthly cap is 1,000" in failed["error"]["message"] and standin.requests == []
