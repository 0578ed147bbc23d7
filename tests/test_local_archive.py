"""Upkeep of local repositories: an archived job's branch moves under refs/copydesk/archive/<job id> (its pull
request page still shows the diff), other branches stay, and refs end up packed."""

from bot.worker import maintain_local_repositories
from service.workspace.git import Git
from tests.flow_scripts import FAQ, finish


def ref(repo, name):
    proc = Git().run("rev-parse", "--verify", "-q", name, git_dir=repo, check=False)
    return proc.stdout.decode().strip() or None


def test_an_archived_jobs_branch_is_kept_under_the_archive_ref_and_its_pull_page_shows_the_diff(stack):
    stack.script([FAQ, finish()], [FAQ, finish("Add another FAQ")])
    archived = stack.create("Add an FAQ page").json()
    kept = stack.create("Add an FAQ page too").json()
    stack.drain()
    done, alive = stack.job(archived["id"]), stack.job(kept["id"])
    head = ref(stack.repo, f"refs/heads/{done['branch']}")
    assert head and ref(stack.repo, f"refs/heads/{alive['branch']}")
    assert stack.api.post(f"/v2/agent/{stack.project_id}/job/{archived['id']}/archive").status_code == 200

    maintain_local_repositories(stack.ctx)

    assert ref(stack.repo, f"refs/heads/{done['branch']}") is None
    assert ref(stack.repo, f"refs/copydesk/archive/{archived['id']}") == head
    assert ref(stack.repo, f"refs/heads/{alive['branch']}") is not None  # not archived: untouched
    page = stack.operator().get(done["prLink"], timeout=10)
    assert page.status_code == 200 and "+# FAQ" in page.text
    packed = (stack.repo / "packed-refs").read_text()
    assert f"refs/copydesk/archive/{archived['id']}" in packed and "refs/heads/main" in packed
    maintain_local_repositories(stack.ctx)  # again: nothing left to move, nothing fails
    assert ref(stack.repo, f"refs/copydesk/archive/{archived['id']}") == head
