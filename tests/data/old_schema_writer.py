"""Run by tests/test_migrate.py with last week's Copydesk (schema version 1) first on PYTHONPATH: writes projects,
API keys and jobs in every state through that code's own stores and runner, then prints what it wrote as JSON."""

import json
import sys
from pathlib import Path

from service.runlock import JobLock

import service
from bot import context
from bot.demo import _sample_repository
from service.settings import Settings
from service.store.jobs import IdempotencyClaim, RunOutcome

old_root, data = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
assert Path(service.__file__).resolve().is_relative_to(old_root), f"not the old code: {service.__file__}"

ctx = context.build(Settings.from_env())
s = ctx.services
local = ctx.local.register(s.projects, path=_sample_repository(ctx.git, data / "docs.git"), ref="main")
acme = ctx.local.register(
    s.projects, path=_sample_repository(ctx.git, data / "acme.git"), ref="main", account="acme", docs_root="docs"
)
local_key, local_plain = s.keys.create(account="local", name="ci")
acme_key, acme_plain = s.keys.create(account="acme", name="acme bot", projects=[acme.id])
revoked_key, revoked_plain = s.keys.create(account="local", name="old laptop")
s.keys.revoke(revoked_key.id)


def create(project, prompt, **extra):
    job, _created = s.jobs.create(project, prompt=prompt, model="scripted:demo", ref="main", as_draft=False, **extra)
    return job


# A job run end to end by the old runner (the bundled demo script: a commit and a local pull request), then a
# follow-up that is still waiting when the upgrade comes.
ran = create(local, "Add a troubleshooting page")
ctx.runner().process(ran.id)
s.jobs.add_message(ran.id, prompt="Also mention pip's --user flag", author="writer")

# A finished run with model usage, then archived (its pull request was merged).
archived = create(acme, "Document the CLI")
s.jobs.start_next(archived.id)
s.jobs.finish_message(
    archived.id,
    s.jobs.conversation(archived.id)[0].id,
    RunOutcome(
        reply="Documented every command.",
        commit="0" * 40,
        changed_files=["docs/cli.md"],
        branch=f"copydesk/{archived.id}",
        pr_link="http://127.0.0.1/local/pr/1",
        pr_number=1,
        usage={"inputTokens": 1200, "outputTokens": 300},
    ),
)
s.jobs.archive(archived.id)

# A failed run that used tokens.
failed = create(local, "Translate everything")
s.jobs.start_next(failed.id)
s.jobs.finish_message(
    failed.id,
    s.jobs.conversation(failed.id)[0].id,
    RunOutcome(
        error={"code": "model_error", "message": "the model refused"}, usage={"inputTokens": 50, "outputTokens": 7}
    ),
)

# A job created with an Idempotency-Key whose run is still going (its run lock is held).
waiting = create(local, "Fix typos", idempotency=IdempotencyClaim(scope="retry-scope", body_hash="h1"))
lock = JobLock(s.redis, waiting.id, ttl_seconds=600)
assert lock.acquire()

print(
    json.dumps(
        {
            "projects": {"local": local.id, "acme": acme.id},
            "keys": {
                "local": [local_key.id, local_plain],
                "acme": [acme_key.id, acme_plain],
                "revoked": [revoked_key.id, revoked_plain],
            },
            "jobs": {
                name: s.jobs.get(job.id).to_dict()
                for name, job in (("ran", ran), ("archived", archived), ("failed", failed), ("waiting", waiting))
            },
            "conversations": {
                job.id: [m.to_dict() for m in s.jobs.conversation(job.id)] for job in (ran, archived, failed, waiting)
            },
        }
    )
)
