"""`copydesk events`, `cancel`, `webhook`, `budget` and `usage`, run as real processes against a real stack."""

import json
import os
import subprocess

from tests.cli_process import run_in_process
from tests.event_reading import STATE_TYPES, page
from tests.flow_scripts import FAQ, finish
from tests.web_process import COPYDESK


def test_events_prints_a_jobs_events_and_follow_waits_until_it_leaves_active(stack):
    stack.script([FAQ, finish()])
    job = stack.create().json()
    env = stack.env()
    follower = subprocess.Popen(
        [COPYDESK, "events", job["id"], "--follow", "--json"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stack.drain()
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, err
    followed = [json.loads(line) for line in out.splitlines()]
    assert [e["type"] for e in followed] == STATE_TYPES
    assert [e["id"] for e in followed] == [e["id"] for e in page(stack, job["id"])]
    text = run_in_process(env, "events", job["id"]).stdout.splitlines()
    assert len(text) == len(STATE_TYPES) and "job.completed" in text[-1] and "completed" in text[-1]
    assert "tool=write_file" in text[2] and "path=docs/faq.md" in text[2]
    bad = run_in_process(env, "events", job["id"], "--after", "soon", check=False)
    assert bad.returncode == 2 and "--after" in bad.stderr


def test_webhook_commands(stack_factory):
    stack = stack_factory(webhook_allow_private=True)
    env = stack.env()
    added = json.loads(
        run_in_process(
            env,
            "webhook",
            "add",
            stack.project_id,
            "http://127.0.0.1:9/hook",
            "--event",
            "job.completed",
            "--description",
            "ops",
            "--json",
        ).stdout
    )
    assert added["secret"].startswith("whsec_") and added["events"] == ["job.completed"]
    listed = run_in_process(env, "webhook", "list", stack.project_id, "--json").stdout
    assert added["secret"] not in listed and json.loads(listed)["webhooks"][0]["id"] == added["id"]
    rotated = json.loads(run_in_process(env, "webhook", "rotate", stack.project_id, added["id"], "--json").stdout)
    assert rotated["secret"] != added["secret"]
    assert json.loads(run_in_process(env, "webhook", "deliveries", stack.project_id, added["id"], "--json").stdout) == {
        "deliveries": []
    }
    run_in_process(env, "webhook", "delete", stack.project_id, added["id"])
    assert run_in_process(env, "webhook", "list", stack.project_id).stdout.strip() == "No webhook endpoints."
    refused = run_in_process(
        {**env, "COPYDESK_WEBHOOK_ALLOW_PRIVATE": "false"},
        "webhook",
        "add",
        stack.project_id,
        "http://127.0.0.1:9/hook",
        check=False,
    )
    assert refused.returncode == 2 and "loopback, private or link-local" in refused.stderr


def test_budget_usage_and_cancel_commands(stack):
    env = stack.env()
    assert json.loads(run_in_process(env, "budget", stack.project_id, "5000", "--json").stdout)["maxTokens"] == 5000
    job = stack.create().json()
    usage = stack.api.get(f"/v2/agent/{stack.project_id}/job/{job['id']}/messages").json()["usage"]
    assert usage == {
        "inputTokens": 0,
        "outputTokens": 0,
        "cacheReadTokens": 0,
        "cacheWriteTokens": 0,
        "billableTokens": 0,
        "maxTokens": 5000,
        "remainingTokens": 5000,
    }
    assert run_in_process(env, "budget", stack.project_id, "lots", check=False).returncode == 2

    cancelled = json.loads(run_in_process(env, "cancel", job["id"], "--json").stdout)
    assert cancelled["status"] == "completed" and cancelled["prLink"] is None
    shown = json.loads(run_in_process(env, "usage", "local", "--cap", "1000", "--json").stdout)
    assert shown["monthlyCap"] == 1000 and shown["inputTokens"] == 0 and shown["keys"][0]["outputTokens"] == 0
    assert stack.ctx.services.usage.cap("local", "local") == 1000
    plain = run_in_process(env, "usage", "local").stdout
    assert "0 input (0 from cache) + 0 output tokens, 0 billable (monthly cap: 1,000)" in plain
