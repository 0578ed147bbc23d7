"""Cost caps: a job's token budget across rounds, each request's output cut to what remains, monthly totals per
account and key, and an account's monthly cap."""

from service.store.jobs import RunOutcome
from service.store.usage import month_of
from tests.model_standin import Reply, ToolUse
from tests.test_events import page
from tests.test_flow_models import PROVIDERS, standin  # noqa: F401 (fixture)


def reads(n: int) -> list[Reply]:
    return [Reply(tool_calls=[ToolUse("read_file", {"path": "docs/index.md"})], input_tokens=10, output_tokens=5)
            for _ in range(n)]


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
    assert usage == {"inputTokens": 30, "outputTokens": 15, "cacheReadTokens": 0, "cacheWriteTokens": 0,
                     "billableTokens": 45, "maxTokens": 40, "remainingTokens": 0}
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
    usage = [stack.api.get(f"/v2/agent/{stack.project_id}/job/{j['id']}/messages").json()["usage"]["maxTokens"]
             for j in (plain, chosen)]
    assert usage == [1000, 50]
    bad = stack.create(maxTokens=0)
    assert bad.status_code == 400 and bad.json()["field"] == "maxTokens"


def test_usage_is_totalled_per_account_and_key_and_a_monthly_cap_refuses_new_work(stack):
    services = stack.ctx.services
    job = stack.create().json()
    _job, message = services.jobs.start_next(job["id"])
    services.jobs.finish_message(job["id"], message.id,
                                 RunOutcome(reply="done", usage={"inputTokens": 700, "outputTokens": 300}))
    totals = stack.api.get("/v2/agent/usage").json()
    assert totals["month"] == month_of()
    assert totals["account"] == {"name": "local", "month": month_of(), "inputTokens": 700, "outputTokens": 300,
                                 "cacheReadTokens": 0, "cacheWriteTokens": 0, "billableTokens": 1000,
                                 "monthlyCap": None}
    assert totals["key"]["inputTokens"] == 700 and totals["key"]["id"].startswith("key_")

    services.usage.set_cap("local", 1000)
    for refused in (stack.create(), stack.message(job["id"], "more")):
        assert refused.status_code == 429 and refused.json()["code"] == "monthly_budget_exceeded"
        assert int(refused.headers["Retry-After"]) > 0
    assert len(stack.conversation(job["id"])) == 2  # nothing was stored
    services.usage.set_cap("local", 5000)
    assert stack.create().status_code == 201
    assert stack.api.get("/v2/agent/usage", params={"month": "2026-13"}).status_code == 400
