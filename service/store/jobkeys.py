"""Every Redis key that belongs to one job, named here and nowhere else, so that deleting a job finds them all.

The modules that read and write these keys import their names from here; `owned` lists them for deletion. Keys
shared by many jobs (the pending set, the project's indexes, the events outbox) are not a job's own and are named
where they are kept.
"""

from collections.abc import Iterable


def job_key(job_id: str) -> str:
    """The job's record (service.store.jobs)."""
    return f"cd:job:{job_id}"


def pending_key(job_id: str) -> str:
    """The ids of the job's waiting messages, oldest first (service.store.jobs)."""
    return f"cd:job:{job_id}:pending"


def conversation_key(job_id: str) -> str:
    """The ids of all the job's messages, in order (service.store.jobs)."""
    return f"cd:job:{job_id}:conversation"


def cancel_key(job_id: str) -> str:
    """Set to the running message's id while a cancel of it is under way; the run watches it."""
    return f"cd:job:{job_id}:cancel"


def idem_key(job_id: str) -> str:
    """The name of the idempotency entry the job was created under (service.store.jobs)."""
    return f"cd:job:{job_id}:idem"


def stream_key(job_id: str) -> str:
    """The job's event stream (service.store.job_events)."""
    return f"cd:job:{job_id}:events"


def rq_key(job_id: str) -> str:
    """The RQ id of the job's last queued run (service.dispatch)."""
    return f"cd:job:{job_id}:rq"


def lease_key(job_id: str) -> str:
    """The running message's lease on the job (service.lease)."""
    return f"cd:job:{job_id}:lease"


def fence_key(job_id: str) -> str:
    """The counter the lease's fencing tokens come from (service.lease)."""
    return f"cd:job:{job_id}:fence"


def run_lock_key(job_id: str) -> str:
    """Schema version 1's run lock, replaced by the lease (dropped by migration 2; deleted with the job if left)."""
    return f"cd:job:{job_id}:lock"


def docs_check_key(job_id: str) -> str:
    """The job's latest docs check (service.store.docschecks)."""
    return f"cd:job:{job_id}:docs-check"


def ci_seen_index_key(job_id: str) -> str:
    """The names of the job's `ci_seen_key`s, so deleting the job finds them (their checks' names are not kept)."""
    return f"cd:job:{job_id}:ci-seen"


def message_key(message_id: str) -> str:
    """A message's record (service.store.jobs)."""
    return f"cd:message:{message_id}"


def tracking_key(message_id: str) -> str:
    """The pull-request comment that tracks a message's round (service.tracking)."""
    return f"cd:message:{message_id}:tracking"


def pull_state_key(job_id: str) -> str:
    """How the job's GitHub pull request ended, merged or closed (bot.github.pulls)."""
    return f"cd:gh:pull-state:{job_id}"


def ci_lock_key(job_id: str) -> str:
    """Held while one delivery decides whether failing checks start a round (bot.github.checks)."""
    return f"cd:gh:ci-lock:{job_id}"


def ci_rounds_key(job_id: str) -> str:
    """How many rounds failing checks started on the job (bot.github.checks)."""
    return f"cd:gh:ci-rounds:{job_id}"


def ci_seen_key(job_id: str, sha: str, check: str) -> str:
    """Set once a check failing on `sha` was acted on, so it is never acted on twice (bot.github.checks)."""
    return f"cd:gh:ci-seen:{job_id}:{sha}:{check}"


def diff_cache_key(job_id: str, pr_number: int | None, head: str | None) -> str:
    """The dashboard's short-lived copy of the job's pull-request diff at `head` (bot.dashboard.github_diff)."""
    return f"cd:dash:gh-diff:{job_id}:{pr_number}:{head or '-'}"


_PER_JOB = (
    job_key,
    pending_key,
    conversation_key,
    cancel_key,
    idem_key,
    stream_key,
    rq_key,
    lease_key,
    fence_key,
    run_lock_key,
    docs_check_key,
    ci_seen_index_key,
    pull_state_key,
    ci_lock_key,
    ci_rounds_key,
)
_PER_MESSAGE = (message_key, tracking_key)


def owned(
    job_id: str, message_ids: Iterable[str], *, pr_number: int | None = None, commits: Iterable[str] = ()
) -> list[str]:
    """Every key named after the job alone, given its messages, its pull request and the commits its rounds made.

    The `ci_seen_key`s are not here: they are listed in `ci_seen_index_key`, which the caller reads.
    """
    ids = list(message_ids)
    diffs = [diff_cache_key(job_id, pr_number, head) for head in (None, *commits)] if pr_number is not None else []
    return [*(name(job_id) for name in _PER_JOB), *(name(m) for m in ids for name in _PER_MESSAGE), *diffs]
