"""How each job's pull request ended ("merged" or "closed"), whichever code host it is on.

The GitHub bot records it when a pull request closes, the local code host when one is merged or closed; the
dashboard and the automations' run history read it.
"""

from service.models import Job
from service.store.jobkeys import pull_state_key as _state_key  # schema 1's GitHub-only name, kept: nothing lost


def record_pull_state(redis_client, job_id: str, state: str) -> None:
    """Remember how a job's pull request ended ("merged" or "closed")."""
    redis_client.set(_state_key(job_id), state)


def pull_state(redis_client, job: Job) -> str | None:
    """open, merged or closed for a job's pull request; None when it has none."""
    if job.pr_number is None:
        return None
    ended = redis_client.get(_state_key(job.id))
    return ended.decode() if ended else "open"


def pull_states(redis_client, jobs: list[Job]) -> dict[str, str]:
    """`pull_state` of every job that has a pull request, in one round trip."""
    with_pulls = [job for job in jobs if job.pr_number is not None]
    ended = redis_client.mget([_state_key(job.id) for job in with_pulls]) if with_pulls else []
    return {job.id: state.decode() if state else "open" for job, state in zip(with_pulls, ended, strict=True)}
