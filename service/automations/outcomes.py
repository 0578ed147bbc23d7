"""What became of an automation's runs: each run's state from its record, its job, its round and its pull request,
and the automation's merge rate."""

from dataclasses import dataclass

from service.automations.model import AutomationRun, RunState
from service.models import Job, Message, MessageStatus, Role, RoundOutcome
from service.services import Services
from service.store.pullstates import pull_state

_PULL_STATES = {"open": RunState.REVIEW_NEEDED, "merged": RunState.ACCEPTED, "closed": RunState.CLOSED}


@dataclass(frozen=True)
class Outcome:
    """A run's state with what it was read from."""

    state: RunState
    job: Job | None
    pull_state: str | None  # open, merged or closed; None without a pull request
    reason: str | None  # why it was skipped, or the agent's reason for no change


def outcome(services: Services, run: AutomationRun) -> Outcome:
    """The run's state: failed when its trigger failed before any job; skipped; queued or running while its round
    waits or runs; failed; no action needed when the round ended without a change; else its pull request's state
    (review needed, accepted, closed)."""
    if run.error is not None:
        return Outcome(RunState.FAILED, None, None, f"{run.error.get('message', '')} ({run.error.get('code')})")
    if run.skipped_reason is not None or run.job_id is None:
        return Outcome(RunState.SKIPPED, None, None, run.skipped_reason)
    job = services.jobs.find(run.job_id)
    if job is None:
        return Outcome(RunState.CLOSED, None, None, f"job {run.job_id} was deleted")
    pulled = pull_state(services.redis, job)
    message = services.jobs.message(run.message_id) if run.message_id else None
    if message is not None:
        early = _round_state(message)
        if early is RunState.FAILED:
            return Outcome(early, job, pulled, _failure(job))
        if early is not None:
            return Outcome(early, job, pulled, None)
        ended = _reply_of(services, job, message)
        reason = _no_change_reason(message)
        if reason is not None or (ended is not None and ended.commit is None):
            return Outcome(RunState.NO_ACTION_NEEDED, job, pulled, reason)
    if pulled is None:
        return Outcome(RunState.NO_ACTION_NEEDED, job, None, None)
    return Outcome(_PULL_STATES.get(pulled, RunState.REVIEW_NEEDED), job, pulled, None)


def run_state(services: Services, run: AutomationRun) -> RunState:
    """The run's state (see `outcome`)."""
    return outcome(services, run).state


def merge_rate(services: Services, runs: list[AutomationRun]) -> dict:
    """Of the jobs these runs started that opened a pull request, how many were merged, and the share."""
    job_ids = {run.job_id for run in runs if run.job_id is not None}
    jobs = [job for job in (services.jobs.find(i) for i in sorted(job_ids)) if job is not None and job.pr_number]
    merged = sum(1 for job in jobs if pull_state(services.redis, job) == "merged")
    return {"accepted": merged, "withPullRequest": len(jobs), "rate": round(merged / len(jobs), 3) if jobs else None}


def _round_state(message: Message) -> RunState | None:
    if message.status is MessageStatus.QUEUED:
        return RunState.QUEUED
    if message.status is MessageStatus.RUNNING:
        return RunState.RUNNING
    if message.status is MessageStatus.FAILED:
        return RunState.FAILED
    if message.status is MessageStatus.CANCELLED:
        return RunState.CLOSED  # stopped by a person: nothing of it stands
    return None


def _reply_of(services: Services, job: Job, message: Message) -> Message | None:
    """The agent's answer to the round `message`, if the job still has it."""
    for other in services.jobs.conversation(job.id):
        if other.role is Role.AGENT and other.reply_to == message.id:
            return other
    return None


def _no_change_reason(message: Message) -> str | None:
    """The agent's reason when the round finished with "no change needed" (service.models.RoundOutcome)."""
    if message.outcome is RoundOutcome.NO_CHANGE_NEEDED:
        return message.reason or "the agent found no change needed"
    return None


def _failure(job: Job) -> str | None:
    """Why the round failed, from the job's error (its code and message), when the job still says."""
    error = job.error or {}
    return f"{error.get('code')}: {error.get('message')}" if error.get("code") else None
