"""Log lines carry the request and job they belong to, and never an API key."""

import json
import logging

from bot import logs


def test_json_log_lines_carry_request_and_job_ids(stack, capsys):
    logs.configure(json_lines=True)
    try:
        stack.ctx.services.redis.set("cd:job:job_01JD0000000000000000000000", b"{corrupt")
        project = stack.project_id
        response = stack.api.get(f"/v2/agent/{project}/job/job_01JD0000000000000000000000")
        assert response.status_code == 500
        job_id = stack.create(ref="missing").json()["id"]
        stack.drain()
    finally:
        logging.getLogger().handlers.clear()
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    errors = [line for line in lines if line["message"].startswith("unhandled error")]
    assert errors and errors[0]["request_id"] == response.headers["X-Request-Id"]
    assert any(line.get("job_id") == job_id and "failed" in line["message"] for line in lines)
    assert not any(stack.key in json.dumps(line) for line in lines)
