"""The `copydesk` command, run as a real process against real Redis and real repositories."""

import json
import os
import re
import signal
import subprocess

import pytest
import requests

from service.workspace.git import Git
from tests.cli_process import run_in_process
from tests.flow_scripts import FAQ, finish
from tests.harness import lines_until
from tests.web_process import COPYDESK


@pytest.fixture
def env(redis_url, tmp_path):
    return {"COPYDESK_REDIS_URL": redis_url, "COPYDESK_DATA_DIR": str(tmp_path / "data")}


def test_projects_and_keys(env, make_repo, tmp_path):
    repo = make_repo({"a.md": "# A\n"})
    project = json.loads(
        run_in_process(env, "project", "add", "--repository", str(repo), "--ref", "main", "--json").stdout
    )
    assert project["id"].startswith("prj_") and project["ref"] == "main" and project["account"] == "local"
    listed = json.loads(run_in_process(env, "project", "list", "--json").stdout)["projects"]
    assert [p["id"] for p in listed] == [project["id"]]
    assert project["id"] in run_in_process(env, "project", "list").stdout

    created = json.loads(
        run_in_process(
            env, "key", "create", "--account", "local", "--project", project["id"], "--name", "ci", "--json"
        ).stdout
    )
    assert created["key"].startswith("cdk_") and created["prefix"] == created["key"][:16]
    assert created["access"] == "read_write" and created["createdBy"] == "operator" and created["expiresAt"]
    assert created["host"] == "local"  # the key works on local projects only, whatever GitHub account shares the name
    keys = run_in_process(env, "key", "list", "--json").stdout
    assert created["key"] not in keys and json.loads(keys)["keys"][0]["projects"] == [project["id"]]
    run_in_process(env, "key", "revoke", created["id"])
    assert json.loads(run_in_process(env, "key", "list", "--json").stdout)["keys"][0]["revokedAt"]


def test_bad_input_gets_a_clear_error_and_changes_nothing(env, make_repo, tmp_path):
    repo = make_repo({"a.md": "# A\n"})
    work = tmp_path / "work"
    Git().run("clone", "-q", str(repo), str(work))
    cases = [
        (["project", "add", "--repository", str(tmp_path / "nope.git"), "--ref", "main"], "does not exist"),
        (["project", "add", "--repository", str(work), "--ref", "main"], "not a bare repository"),
        (["project", "add", "--repository", str(tmp_path), "--ref", "main"], "not a git repository"),
        (["project", "add", "--repository", str(repo), "--ref", "nope"], "has no branch 'nope'"),
        (["key", "create", "--account", "local", "--project", "prj_01JD0000000000000000000000"], "has no project"),
        (["key", "revoke", "key_nope"], "no API key key_nope"),
    ]
    for args, message in cases:
        proc = run_in_process(env, *args, check=False)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
    assert json.loads(run_in_process(env, "project", "list", "--json").stdout)["projects"] == []
    assert json.loads(run_in_process(env, "key", "list", "--json").stdout)["keys"] == []


def test_unreachable_redis_is_a_clear_error(tmp_path):
    proc = run_in_process({"COPYDESK_REDIS_URL": "redis://127.0.0.1:1/0"}, "project", "list", check=False)
    assert proc.returncode == 2 and "cannot reach Redis" in proc.stderr


def test_merging_a_local_pull_request_merges_it_and_archives_the_job(stack):
    stack.script([FAQ, finish()])
    job = stack.create().json()
    stack.drain()
    env = stack.env()
    out = json.loads(run_in_process(env, "pull", "merge", stack.project_id, "1", "--json").stdout)
    assert out["state"] == "merged" and out["job"]["status"] == "archived"
    git = Git()
    assert git.out("show", "main:docs/faq.md", git_dir=stack.repo) == "# FAQ\n\nAsk away."
    assert (
        git.run(
            "rev-parse", "--verify", "-q", f"refs/heads/copydesk/{job['id']}", git_dir=stack.repo, check=False
        ).returncode
        != 0
    )
    assert stack.job(job["id"])["status"] == "archived"
    page = stack.operator().get(stack.job(job["id"])["prLink"], timeout=10).text
    assert "+# FAQ" in page and ">merged<" in page and "job archived" in page  # the page still shows the diff
    again = run_in_process(env, "pull", "merge", stack.project_id, "1", check=False)
    assert again.returncode == 2 and "already merged" in again.stderr


def test_closing_a_local_pull_request_archives_the_job(stack):
    stack.script([FAQ, finish()])
    job = stack.create().json()
    stack.drain()
    run_in_process(stack.env(), "pull", "close", stack.project_id, "1")
    assert stack.job(job["id"])["status"] == "archived"
    assert Git().out("ls-tree", "--name-only", "-r", "main", git_dir=stack.repo).count("faq") == 0


def test_recover_queues_stranded_messages(stack):
    # A door that stores a job and queues its run apart dies in between (the API's create queues the run in its
    # create script, with the job's writes or not at all): the message is stored, its run never queued.
    services = stack.ctx.services
    project = services.projects.get(stack.project_id)
    job, _ = services.jobs.create(project, prompt="Add an FAQ", model=stack.settings.model, ref="main", as_draft=False)
    out = json.loads(run_in_process(stack.env(), "recover", "--json").stdout)
    assert out == {"queued": [job.id]}


def test_demo_runs_a_job_end_to_end_shows_the_diff_and_a_dashboard_link(redis_url, tmp_path):
    env = {"COPYDESK_REDIS_URL": redis_url, "COPYDESK_DATA_DIR": str(tmp_path / "data")}
    env_clean = {
        k: v for k, v in os.environ.items() if k not in ("COPYDESK_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    }
    # `make demo` runs `copydesk demo --serve`: after the job it serves the dashboard until Ctrl-C.
    proc = subprocess.Popen(
        [COPYDESK, "demo", "--serve"],
        env={**env_clean, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = lines_until(proc.stdout, "Ctrl-C", 180)
        out = "".join(lines)
        link = next(line.strip() for line in lines if "/dashboard/login/link?token=" in line)
        browser = requests.Session()
        home = browser.get(link, timeout=10)
        assert home.url.endswith("/dashboard/") and "demo" in home.text
        project = re.search(r"Project\s+(prj_\w+)", out).group(1)
        jobs = browser.get(link.split("/dashboard/")[0] + f"/dashboard/projects/{project}/jobs", timeout=10)
        assert "completed" in jobs.text and "Troubleshooting" in jobs.text
    finally:
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out + rest
    assert "bundled demo script" in out
    assert '"status": "completed"' in out
    assert "/pulls/1" in out
    assert "+# Troubleshooting" in out and "+  - Troubleshooting: troubleshooting.md" in out


def test_key_access_expiry_audit_and_the_dashboard_login_link(env, make_repo):
    created = json.loads(
        run_in_process(
            env,
            "key",
            "create",
            "--account",
            "acme",
            "--name",
            "reader",
            "--access",
            "read-only",
            "--expires",
            "never",
            "--json",
        ).stdout
    )
    assert created["access"] == "read_only" and created["expiresAt"] is None
    assert created["host"] == "github"  # no local project and not `local`: an account of the GitHub App
    week = json.loads(run_in_process(env, "key", "create", "--account", "acme", "--expires", "7", "--json").stdout)
    assert week["expiresAt"] > week["createdAt"]
    bad = run_in_process(env, "key", "create", "--account", "acme", "--expires", "365", check=False)
    assert bad.returncode == 2 and "7, 30, 60, 90" in bad.stderr
    run_in_process(env, "key", "revoke", created["id"])
    listing = run_in_process(env, "key", "list", "--account", "acme").stdout
    assert created["prefix"] in listing and "read_only" in listing and "revoked" in listing and "uses 0" in listing
    audit = json.loads(run_in_process(env, "key", "audit", "--account", "acme", "--json").stdout)["events"]
    assert [(e["action"], e["keyId"]) for e in audit] == [
        ("revoked", created["id"]),
        ("created", week["id"]),
        ("created", created["id"]),
    ]
    chosen = json.loads(run_in_process(env, "key", "create", "--account", "acme", "--host", "local", "--json").stdout)
    assert chosen["host"] == "local"
    link = json.loads(run_in_process(env, "dashboard", "login-link", "--json").stdout)
    assert "/dashboard/login/link?token=" in link["url"] and link["expiresIn"] == 900


def test_disable_and_enable_a_project(env, make_repo):
    repo = make_repo({"a.md": "# A\n"})
    project = json.loads(
        run_in_process(env, "project", "add", "--repository", str(repo), "--ref", "main", "--json").stdout
    )
    assert json.loads(run_in_process(env, "project", "disable", project["id"], "--json").stdout)["enabled"] is False
    assert "[disabled]" in run_in_process(env, "project", "list").stdout
    assert json.loads(run_in_process(env, "project", "enable", project["id"], "--json").stdout)["enabled"] is True
    missing = run_in_process(env, "project", "disable", "prj_01JD0000000000000000000000", check=False)
    assert missing.returncode == 2 and "no project" in missing.stderr


def test_an_admin_cannot_enable_a_project_its_code_host_disabled(env, redis_client, make_repo, monkeypatch, capsys):
    from bot.cli import main
    from service.ids import UlidGenerator
    from service.projectstate import DisabledReason
    from service.store.projects import ProjectStore

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # In-process: the command must not replace the test process's log handlers with its own.
    monkeypatch.setattr("bot.logs.configure", lambda *args, **kwargs: None)
    repo = make_repo({"a.md": "# A\n"})
    assert main(["project", "add", "--repository", str(repo), "--ref", "main", "--json"]) == 0
    project = json.loads(capsys.readouterr().out)
    projects = ProjectStore(redis_client, UlidGenerator())
    projects.disable(project["id"], DisabledReason.INSTALLATION_SUSPENDED)
    assert main(["project", "enable", project["id"]]) == 2
    assert "disabled by its code host" in capsys.readouterr().err
    assert main(["project", "disable", project["id"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["disabledReason"] == "installation_suspended"
    assert main(["project", "disable", project["id"]]) == 0
    assert "stays disabled by its code host" in capsys.readouterr().out
    projects.enable(project["id"], by_host=True)  # unsuspended: the admin's "disable" above did not stick
    assert projects.get(project["id"]).enabled


def test_a_github_register_link_opens_the_registration_page_until_used(stack):
    import requests

    env = stack.env()
    out = json.loads(run_in_process(env, "github", "register-link", "--json").stdout)
    assert out["url"].startswith(f"{env['COPYDESK_BASE_URL']}/github/register?token=")
    page = requests.get(out["url"], timeout=30)
    assert page.status_code == 200 and 'name="manifest"' in page.text
    forged = requests.get(out["url"].replace("token=", "token=x"), timeout=30)
    assert forged.status_code == 403 and "copydesk github register-link" in forged.text
    human = run_in_process(env, "github", "register-link").stdout
    assert "/github/register?token=" in human and "works once, within an hour" in human
