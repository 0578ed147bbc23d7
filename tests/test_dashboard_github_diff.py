"""A GitHub job's page shows its pull request's diff, read from GitHub (the emulator) with the installation's
token: capped in size, cached briefly, and replaced by a clear note when GitHub cannot give it."""

import time

import pytest
import requests

from bot.app import create_app
from bot.dashboard.web import EXTENSION
from bot.github.apps import GitHubApp
from bot.github.diffs import pull_diff
from bot.github.settings import GitHubSettings
from tests.conftest import DOCS
from tests.flow_scripts import FAQ, finish

COMPARE = "repos/compare-commits-with-basehead"
DIFF_CACHE = "cd:dash:gh-diff:*"
# The page waits on GitHub with short time-outs and one retry; it must never hang on it.
PAGE_SECONDS = 10


def github_job(dash) -> tuple[str, str]:
    """A completed job on acme/docs whose pull request the worker opened on the emulator: (its page, its commit)."""
    project = dash.projects["acme/docs"]
    dash.script([FAQ, finish()])
    _key, key = dash.ctx.services.keys.create(account="acme", host="github")
    job = requests.post(
        f"{dash.url}/v2/agent/{project.id}/job",
        json={"prompt": "Add an FAQ"},
        timeout=10,
        headers={"Authorization": f"Bearer {key}"},
    ).json()
    dash.drain()
    assert dash.ctx.services.jobs.get(job["id"]).pr_number is not None
    commit = next(m.commit for m in dash.ctx.services.jobs.conversation(job["id"]) if m.commit)
    return f"/dashboard/projects/{project.id}/jobs/{job['id']}", commit


def compares(dash) -> list:
    return [r for r in dash.github.requests if r.operation == COMPARE]


def timed_get(session, path: str):
    started = time.monotonic()
    page = session.get(path)
    assert time.monotonic() - started < PAGE_SECONDS, "the job page waited too long on GitHub"
    return page


def test_a_github_jobs_page_shows_the_diff_of_its_commit_and_caches_it(dash):
    path, commit = github_job(dash)
    alice = dash.signed_in("alice")
    page = timed_get(alice, path)
    assert page.status_code == 200
    assert "diff --git a/docs/faq.md b/docs/faq.md" in page.text and "+# FAQ" in page.text and "+Ask away." in page.text
    assert 'id="diff-problem"' not in page.text and 'id="diff-truncated"' not in page.text
    [asked] = compares(dash)  # the comparison up to the job's own commit, in the diff media type
    assert asked.path.endswith(f"...{commit}") and asked.auth == "token" and asked.status == 200
    assert asked.headers["Accept"] == "application/vnd.github.diff"
    # A reload (or a live update) within the cache's life does not ask GitHub again; the live part shows it too.
    assert "+# FAQ" in alice.get(path).text and "+# FAQ" in alice.get(f"{path}/live").text
    assert len(compares(dash)) == 1
    # A member of the account sees the page (and the diff) too.
    assert "+# FAQ" in dash.signed_in("bob").get(path).text


def test_github_failing_or_the_installation_gone_gives_a_clear_note_not_an_error_page(dash):
    path, _commit = github_job(dash)
    alice = dash.signed_in("alice")
    dash.github.inject("server", 2, match="/compare/")  # the first try and its one retry
    page = timed_get(alice, path)
    assert page.status_code == 200 and 'id="pr-link"' in page.text and "+# FAQ" not in page.text
    assert "The diff could not be loaded from GitHub:" in page.text and "HTTP 500" in page.text
    assert "See the changes on the pull request" in page.text
    # A failure is not cached: once GitHub answers again, so does the page.
    assert "+# FAQ" in timed_get(alice, path).text

    store = dash.ctx.services.redis
    store.delete(*store.keys(DIFF_CACHE))  # as when the brief cache has run out
    dash.github.uninstall(dash.projects["acme/docs"].host_data["installation_id"])
    gone = timed_get(alice, path)
    assert gone.status_code == 200 and "The diff could not be loaded from GitHub:" in gone.text
    assert "is gone (the App was uninstalled)" in gone.text and "+# FAQ" not in gone.text


def test_a_diff_past_the_cap_is_cut_at_a_line_and_says_so(dash):
    path, _commit = github_job(dash)
    alice = dash.signed_in("alice")
    alice.get(path)
    store = dash.ctx.services.redis
    store.delete(*store.keys(DIFF_CACHE))
    # The same app and Redis as the live server, with a cap the job's small diff passes; alice's session cookie.
    app = create_app(dash.ctx.settings, dash.ctx)
    app.extensions[EXTENSION].github_diffs.max_bytes = 60
    client = app.test_client()
    cookie = next(c for c in alice.cookies if c.name == "copydesk-session")
    client.set_cookie(cookie.name, cookie.value)
    page = client.get(path).get_data(as_text=True)
    assert 'id="diff-truncated"' in page and "diff truncated" in page and "+Ask away." not in page
    assert "diff --git a/docs/faq.md b/docs/faq.md" in page


@pytest.fixture
def pulls(github, redis_client):
    """acme/docs on the emulator with a pull request from `topic`, and a client with the installation's token."""
    github.add_repo("acme/docs", files=DOCS)
    installation = github.add_installation("acme", ["acme/docs"])
    github.push("acme/docs", {"docs/long.md": "".join(f"line {n} é\n" for n in range(200))}, branch="topic")
    number = github.open_pull("acme/docs", "topic")
    settings = GitHubSettings(app_id=str(github.app.id), private_key=github.app.private_key_pem, api_url=github.url)
    app = GitHubApp(settings, redis_client, requests.Session(), retries=0, timeout=(3, 5))
    return github, number, app.installation_client(installation, "acme/docs")


def test_pull_diff_reads_githubs_diff_capped_at_a_whole_line(pulls):
    github, number, client = pulls
    whole = pull_diff(client, "acme", "docs", number, max_bytes=1 << 20)
    assert not whole.truncated and "+line 199 é\n" in whole.text
    assert whole.text.startswith("diff --git a/docs/long.md b/docs/long.md\n")
    cut = pull_diff(client, "acme", "docs", number, max_bytes=300)
    assert cut.truncated and cut.text.endswith("\n") and len(cut.text.encode()) <= 300
    assert whole.text.startswith(cut.text)
    # The base moving on does not change the pull request's diff (three dots: from where the head left it).
    github.push("acme/docs", {"NEWS.md": "news\n"})
    assert pull_diff(client, "acme", "docs", number, max_bytes=1 << 20) == whole


def test_pull_diff_of_a_merged_pull_request_whose_branch_is_gone(pulls):
    github, number, client = pulls
    before = pull_diff(client, "acme", "docs", number, max_bytes=1 << 20)
    github.merge("acme/docs", number)
    github.push("acme/docs", {"NEWS.md": "news\n"})
    repo = github.state.repo("acme/docs")
    github.state.git.run("update-ref", "-d", "refs/heads/topic", git_dir=repo.path)
    assert pull_diff(client, "acme", "docs", number, max_bytes=1 << 20) == before
