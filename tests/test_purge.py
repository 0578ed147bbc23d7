"""An uninstalled GitHub App's account: its data is purged COPYDESK_PURGE_DAYS later by the workers' upkeep, unless
the account installs the App again before; other accounts, same-named local ones included, are untouched."""

import time

from bot import context
from bot.worker import sweep_once
from service.models import KeyAccess
from service.purge import PURGES, AccountPurges
from service.store.usage import UsageLedger
from tests.conftest import DOCS
from tests.flow_scripts import job_keys_left
from tests.github_event_fixtures import REPO, deliver

DAY = 86400


def _github_key(bot, account="acme"):
    key, _plain = bot.services.keys.create(
        account=account, name="ci", access=KeyAccess.READ_WRITE, created_by="alice", host="github"
    )
    return key


def test_the_purge_comes_after_the_set_days_and_removes_the_accounts_data(
    github, bot, installed, pull, make_repo, redis_url
):
    project, installation_id = installed
    job, _number = pull
    services = bot.services
    key = _github_key(bot)
    # A local account of the same name, and the account's monthly totals: neither is the purge's business.
    local_project = context.build(services.settings.with_overrides(redis_url=redis_url)).local.register(
        services.projects, path=make_repo(DOCS), ref="main", account="acme"
    )
    local_key, _ = services.keys.create(account="acme", name="local", host="local")
    UsageLedger(services.redis).add("local", "acme", None, {"inputTokens": 3, "outputTokens": 4})
    messages = [m.id for m in services.jobs.conversation(job.id)]

    before = time.time()
    deliver(bot, "installation", github.uninstall(installation_id), "gone")
    purges = AccountPurges(services)
    due = purges.due_at("github", "acme")
    assert before + 30 * DAY <= due <= time.time() + 30 * DAY

    assert purges.run_due(now=due - 60) == []  # a day early: nothing happens
    assert services.jobs.find(job.id) is not None and services.keys.find(key.id) is not None

    [result] = purges.run_due(now=due + 1)
    assert (result.projects, result.jobs, result.keys, result.left) == (1, 1, 1, 0)
    assert services.projects.find(project.id) is None and services.jobs.find(job.id) is None
    assert services.keys.find(key.id) is None
    assert job_keys_left(services.redis, job.id, messages) == []
    assert services.redis.zcard(PURGES) == 0
    # Kept: the local account of the same name, and the monthly totals.
    assert services.projects.find(local_project.id) is not None and services.keys.find(local_key.id) is not None
    assert UsageLedger(services.redis).account("local", "acme").total == 7

    # Installing again afterwards starts afresh.
    deliver(bot, "installation", github.install("acme", [REPO]), "back")
    again = services.projects.find_by_repository("github", REPO)
    assert again is not None and again.id != project.id and again.enabled


def test_installing_again_before_the_purge_keeps_everything(github, bot, installed, pull):
    project, installation_id = installed
    job, _number = pull
    key = _github_key(bot)
    deliver(bot, "installation", github.uninstall(installation_id), "gone")
    purges = AccountPurges(bot.services)
    due = purges.due_at("github", "acme")
    deliver(bot, "installation", github.install("acme", [REPO]), "back")
    assert purges.due_at("github", "acme") is None
    assert purges.run_due(now=due + 1) == []
    assert bot.services.projects.get(project.id).enabled
    assert bot.services.jobs.get(job.id).id == job.id and bot.services.keys.find(key.id) is not None


def test_the_workers_upkeep_runs_due_purges(github, bot, installed, pull, redis_url):
    project, installation_id = installed
    job, _number = pull
    deliver(bot, "installation", github.uninstall(installation_id), "gone")
    # Make it due now, as if the days had passed.
    bot.services.redis.zadd(PURGES, {"github:acme": time.time() - 1})
    ctx = context.build(bot.services.settings.with_overrides(redis_url=redis_url))
    sweep_once(ctx)
    assert bot.services.jobs.find(job.id) is None and bot.services.projects.find(project.id) is None


def test_a_purge_that_finds_a_run_going_keeps_that_job_and_comes_back(github, bot, installed, pull):
    project, installation_id = installed
    job, _number = pull
    running, _ = bot.services.jobs.create(
        project, prompt="More", model="scripted:demo", ref=project.ref, as_draft=False
    )
    bot.services.jobs.start_next(running.id)
    deliver(bot, "installation", github.uninstall(installation_id), "gone")
    purges = AccountPurges(bot.services)
    moment = purges.due_at("github", "acme") + 1
    [result] = purges.run_due(now=moment)
    assert (result.jobs, result.left, result.projects) == (1, 1, 0)
    assert bot.services.jobs.find(job.id) is None and bot.services.jobs.get(running.id).status.value == "archived"
    assert purges.due_at("github", "acme") > moment  # tried again later
