"""Metrics and logs an operator can use: `/metrics` after a real run, and every line JSON in JSON mode."""

import json
import re
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from tests.conftest import free_port
from tests.harness import wait_until
from tests.metrics_text import parse, recorded, value
from tests.model_standin import Reply, ToolUse
from tests.web_process import WebServer
from tests.worker_processes import WorkerProcess

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running

TOKEN = "metrics-token-for-tests"


@contextmanager
def processes(stack, tmp_path, **env):
    """The real `copydesk web` and `copydesk worker` on the stack's Redis and project, sharing a metrics folder."""
    env = {**stack.env(), "COPYDESK_METRICS_TOKEN": TOKEN, "COPYDESK_METRICS_DIR": str(tmp_path / "metrics"), **env}
    # The worker starts first and starts up while the web server does (a second each, mostly imports); at the end
    # both are told to stop at once and each winds down while the other does.
    with WorkerProcess(env, tmp_path / "worker.log") as worker:
        with WebServer(env, free_port(), tmp_path / "web.log") as web:
            try:
                yield web, worker
            finally:
                worker.terminate()


def run_one_job(stack, web, standin, **fields) -> dict:
    """Create a job through the real web server and wait until the worker finished it."""
    standin.script(
        Reply(
            tool_calls=[ToolUse("write_file", {"path": "docs/faq.md", "content": "# FAQ\n"})],
            input_tokens=120,
            output_tokens=30,
            cached_tokens=100,
        ),
        Reply(
            tool_calls=[ToolUse("finish", {"title": "Add an FAQ", "summary": "Added the FAQ."})],
            input_tokens=200,
            output_tokens=9,
            cached_tokens=0,
        ),
    )
    auth = {"Authorization": f"Bearer {stack.key}"}
    created = requests.post(
        f"{web.url}/v2/agent/{stack.project_id}/job",
        json={"prompt": "Add an FAQ", **fields},
        headers={**auth, "X-Request-Id": f"req-test-create-{len(fields)}"},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    url = f"{web.url}/v2/agent/{stack.project_id}/job/{created.json()['id']}"
    return wait_until(
        lambda: (job := requests.get(url, headers=auth, timeout=10).json())["status"] != "active" and job,
        60,
        "the job to finish",
    )


def scrape(web) -> dict[str, dict]:
    """Every sample of `/metrics`, by name, as {labels tuple: value}."""
    response = requests.get(f"{web.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("text/plain")
    return parse(response.text)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_metrics_after_a_real_run(stack_factory, standin, tmp_path, provider):
    overrides = {
        "openai": dict(model="openai:gpt-test", openai_api_key="sk-test", openai_base_url=standin.openai_base_url),
        "anthropic": dict(
            model="anthropic:claude-test",
            anthropic_api_key="sk-ant-test",
            anthropic_base_url=standin.anthropic_base_url,
        ),
    }[provider]
    stack = stack_factory(**overrides)
    model = stack.settings.model
    with processes(stack, tmp_path) as (web, worker):
        assert requests.get(f"{web.url}/metrics", timeout=10).status_code == 401
        wrong = requests.get(f"{web.url}/metrics", headers={"Authorization": "Bearer nope"}, timeout=10)
        assert wrong.status_code == 401 and wrong.headers["WWW-Authenticate"].startswith("Bearer")
        before = scrape(web)
        assert value(before, "copydesk_runs_total") == 0
        job = run_one_job(stack, web, standin)
        assert job["status"] == "completed", job
        assert run_one_job(stack, web, standin, ref="missing")["status"] == "failed"
        after = scrape(web)
        assert worker.alive(), worker.log()
        # Text mode stays a line for people: gunicorn's usual access line, then the duration and the request id.
        wait_until(lambda: "req-test-create-0" in web.log(), 10, "the access line of the create call")
    assert re.search(r'"POST /v2/agent/\S+/job HTTP/1.1" 201 \d+ .* \d+ms req-test-create-0$', web.log(), re.M)
    assert re.search(
        r"INFO copydesk.run: run of job \S+ message \S+ completed in [\d.]+ s: 2 steps, 320 input "
        r"and 39 output tokens, commit [0-9a-f]{12} \[job_",
        worker.log_path.read_text(),
        re.M,
    )

    assert value(after, "copydesk_runs_total", outcome="completed", code="") == 1
    assert value(after, "copydesk_run_duration_seconds_count", outcome="completed") == 1
    assert value(after, "copydesk_run_duration_seconds_sum", outcome="completed") > 0
    assert value(after, "copydesk_runs_total", outcome="failed", code="ref_not_found") == 1
    assert value(after, "copydesk_runs_total") == 2
    # The failed run (no such branch) stopped after its fetch.
    for phase, runs in (("fetch", 2), ("agent", 1), ("push", 1), ("pull_request", 1)):
        assert value(after, "copydesk_run_phase_seconds_count", phase=phase) == runs, phase
    assert value(after, "copydesk_model_tokens_total", model=model, kind="input") == 320
    assert value(after, "copydesk_model_tokens_total", model=model, kind="output") == 39
    assert value(after, "copydesk_model_tokens_total", model=model, kind="cache_read") == 100
    # Read from Redis at scrape time: the job, and the queues it went through (empty again).
    assert value(before, "copydesk_jobs", status="completed") == 0
    assert value(after, "copydesk_jobs", status="completed") == 1
    assert value(after, "copydesk_jobs", status="failed") == 1
    assert value(after, "copydesk_jobs", status="active") == 0
    assert value(after, "copydesk_queue_depth", queue=stack.settings.queue_name) == 0
    assert (("queue", stack.settings.queue_name),) in after["copydesk_queue_oldest_age_seconds"]


def test_metrics_are_off_without_a_token(stack):
    response = stack.api.get(f"{stack.url}/metrics")
    assert response.status_code == 404


def test_queue_depth_and_oldest_wait_are_read_at_scrape(stack, tmp_path):
    from service import metrics
    from service.store_metrics import StoreCollector

    stack.create("one")
    stack.create("two")
    services = stack.ctx.services
    collector = StoreCollector(services.redis, services.projects, services.jobs, [stack.settings.queue_name])
    found = {
        s.name: s.value
        for f in metrics.registry(tmp_path / "m", [collector]).collect()
        for s in f.samples
        if s.labels.get("queue") == stack.settings.queue_name or s.labels.get("status") == "active"
    }
    assert found["copydesk_queue_depth"] == 2 and found["copydesk_jobs"] == 2
    assert 0 <= found["copydesk_queue_oldest_age_seconds"] < 60


def test_json_mode_every_line_of_web_and_worker_is_json(stack_factory, standin, tmp_path):
    stack = stack_factory(model="openai:gpt-test", openai_api_key="sk-test", openai_base_url=standin.openai_base_url)
    with processes(stack, tmp_path, COPYDESK_LOG_FORMAT="json") as (web, worker):
        job = run_one_job(stack, web, standin)
        assert job["status"] == "completed", job
        failed = run_one_job(stack, web, standin, ref="missing")
        assert failed["status"] == "failed", failed
        requests.get(f"{web.url}/github/register?token=one-time-s3cret", timeout=10)
        requests.get(f"{web.url}/healthz", timeout=10)
        wait_until(lambda: "/healthz" in web.log(), 10, "the access line of /healthz")
        wait_until(lambda: worker.log().count('"outcome"') == 2, 10, "the run lines")
    lines = [
        line
        for path in ("web.log", "worker.log")
        for line in (tmp_path / path).read_text().splitlines()
        if line.strip()
    ]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"not a JSON line: {line!r}")
    access = [p for p in parsed if p.get("logger") == "gunicorn.access"]
    create = [p for p in access if p.get("request_id") == "req-test-create-0"]
    assert len(create) == 1, access
    assert create[0]["status"] == 201 and create[0]["method"] == "POST" and create[0]["duration_ms"] >= 0
    assert all(re.fullmatch(r"req[-_]\S+", p["request_id"]) and isinstance(p["status"], int) for p in access)
    assert any(p.get("logger") == "gunicorn.error" and "Booting worker" in p["message"] for p in parsed)
    runs = [p for p in parsed if p.get("logger") == "copydesk.run"]
    assert len(runs) == 2, runs
    run, fail = runs
    assert run["job_id"] == job["id"] and run["outcome"] == "completed" and run["code"] is None
    assert run["message_id"].startswith("msg_") and run["duration_s"] > 0
    assert run["tokens"] == {"input": 320, "output": 39, "cache_read": 100, "cache_write": 0}
    assert run["commit"] and re.fullmatch(r"[0-9a-f]{40}", run["commit"])
    assert fail["job_id"] == failed["id"] and fail["outcome"] == "failed" and fail["code"] == "ref_not_found"
    assert fail["level"] == "WARNING" and fail["commit"] is None
    # RQ's own lines would call every run a success, a failed one too; the run line replaces them.
    queue = stack.settings.queue_name
    assert not any(re.search(f": {queue}: Job OK|Successfully completed copydesk run", p["message"]) for p in parsed)
    assert any(re.search(f": {queue}: copydesk run {failed['id']}", p["message"]) for p in parsed)
    assert not any(stack.key in line or "one-time-s3cret" in line for line in lines)
    assert any(p["path"] == "/github/register?token=[redacted]" for p in access)


def test_the_grafana_dashboard_charts_every_metric_and_only_those(stack):
    from prometheus_client import Counter

    from service import metrics
    from service.store_metrics import StoreCollector

    dashboard = json.loads((Path(__file__).parents[1] / "docs" / "grafana-dashboard.json").read_text())
    services = stack.ctx.services
    scraped = StoreCollector(services.redis, services.projects, services.jobs, ["q"]).collect()
    exported = {family.name for family in scraped}
    for instrument in vars(metrics).values():
        if hasattr(instrument, "_name") and hasattr(instrument, "_labelnames"):
            exported.add(instrument._name + ("_total" if isinstance(instrument, Counter) else ""))
    charted = set()
    for panel in dashboard["panels"]:
        assert panel["title"] and panel["targets"], panel
        for target in panel["targets"]:
            for name in re.findall(r"copydesk_[a-z_]+", target["expr"]):
                charted.add(re.sub(r"_(bucket|count|sum)$", "", name))
    assert charted == exported


def test_githubs_remaining_rate_limit_is_kept_per_resource(scripted_github_server):
    from bot.github.client import GitHubClient
    from service import metrics
    from tests.scripted_github import Answer

    github = scripted_github_server.reset()
    github.then(Answer(body={"ok": True}, headers={"X-RateLimit-Remaining": "4321", "X-RateLimit-Resource": "search"}))
    github.then(Answer(body={"ok": True}, headers={"X-RateLimit-Remaining": "4320", "X-RateLimit-Resource": "search"}))
    client = GitHubClient(requests.Session(), api_url=github.url, timeout=2)
    client.getitem("/search/code?q=x")
    client.getitem("/search/code?q=y")
    assert recorded(metrics.GITHUB_RATE_REMAINING, "copydesk_github_rate_limit_remaining", resource="search") == 4320


def test_the_sweep_counts_the_runs_it_recovers(stack):
    import rq

    from bot.worker import sweep_once
    from service import metrics

    job_id = stack.create().json()["id"]
    services = stack.ctx.services
    # A worker took the run off the queue, marked the message running, and died.
    rq.Queue(stack.settings.queue_name, connection=services.redis).empty()
    services.redis.delete(f"cd:job:{job_id}:rq")
    services.jobs.start_next(job_id)
    before = recorded(metrics.RECOVERIES, "copydesk_lease_recoveries_total", by="sweep")
    assert sweep_once(stack.ctx) == [job_id]
    assert sweep_once(stack.ctx) == []
    assert recorded(metrics.RECOVERIES, "copydesk_lease_recoveries_total", by="sweep") == before + 1


def test_json_mode_turns_warnings_and_uncaught_exceptions_into_json_lines():
    import subprocess
    import sys

    script = (
        "import threading, warnings\nfrom bot import logs\nlogs.configure(json_lines=True)\n"
        "warnings.warn('an old API')\n"
        "t = threading.Thread(target=lambda: 1 / 0, name='helper'); t.start(); t.join()\n"
        "raise ValueError('boom')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    lines = [json.loads(line) for line in proc.stderr.splitlines()]
    assert [line["level"] for line in lines] == ["WARNING", "CRITICAL", "CRITICAL"]
    assert "an old API" in lines[0]["message"]
    assert lines[1]["message"] == "uncaught exception in thread helper" and "ZeroDivisionError" in lines[1]["exception"]
    assert "ValueError: boom" in lines[2]["exception"]
