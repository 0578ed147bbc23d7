"""Firing an automation: the one function every trigger calls, so each run is a job that entered the intake."""

import logging

from redis.exceptions import LockError

from service import intake
from service.automations.context import render_changes, render_context
from service.automations.events import SourceChange, TriggerEvent
from service.automations.model import Automation, AutomationRun
from service.automations.store import STARTING_SECONDS
from service.clock import now_iso
from service.models import Job, JobStatus, Project
from service.services import Services
from service.store.pullstates import pull_state, pull_states

log = logging.getLogger(__name__)

DATA_MARGIN_CHARS = 200  # kept free under the intake's prompt limit beside the trigger's data


def fire(services: Services, automation: Automation, event: TriggerEvent) -> AutomationRun:
    """Run `automation` for `event`: a new job, or a follow-up round on its open pull request's job (grouping),
    or a skipped run saying why. A repeated event (same key) returns the run it made the first time."""
    store = services.automations
    if not store.claim_event(automation.id, event.key):
        earlier = store.event_run(automation.id, event.key)
        return earlier or _run(services, automation, event, skipped=f"event {event.key} was handled already")
    try:
        with store.starting(automation.id):
            run = _start(services, automation, event)
            store.record_run(run)
    except LockError:  # held past its time by a start that hung: start anyway rather than lose the event
        log.warning(
            "automation %s: another start held it for %d s; starting without it", automation.id, STARTING_SECONDS
        )
        run = _start(services, automation, event)
        store.record_run(run)
    log.info(
        "automation %s run %s (%s): %s",
        automation.id,
        run.id,
        event.kind,
        f"skipped: {run.skipped_reason}" if run.skipped_reason else f"job {run.job_id}",
    )
    return run


def fail(services: Services, automation: Automation, event: TriggerEvent, *, code: str, message: str) -> AutomationRun:
    """Record that `event` could not start a run of `automation` (its trigger failed before any job, e.g. the
    source could not be read): a failed run with the reason in the history. A repeated event returns the run it
    made the first time, like `fire`."""
    store = services.automations
    if not store.claim_event(automation.id, event.key):
        earlier = store.event_run(automation.id, event.key)
        if earlier is not None:
            return earlier
    run = _run(services, automation, event)
    run.error = {"code": code, "message": message}
    store.record_run(run)
    log.warning("automation %s run %s (%s) failed: %s", automation.id, run.id, event.kind, message)
    return run


def _start(services: Services, automation: Automation, event: TriggerEvent) -> AutomationRun:
    project = services.projects.find(automation.project_id)
    if project is None:
        return _run(services, automation, event, skipped=f"project {automation.project_id} no longer exists")
    if not automation.enabled:
        return _run(services, automation, event, skipped="the automation is disabled")
    if not project.enabled:
        return _run(services, automation, event, skipped=f"project {project.id} is disabled")
    target = _grouping_target(services, automation)
    if target is None:
        refusal = _open_pull_cap(services, automation)
        if refusal:
            return _run(services, automation, event, skipped=refusal)
    store = services.automations
    if not store.take_run_slot(automation.id, automation.options.max_runs_per_day):
        return _run(
            services,
            automation,
            event,
            skipped=f"{automation.options.max_runs_per_day} runs today (UTC) already, as many as "
            "options.maxRunsPerDay allows",
        )
    run = _run(services, automation, event)
    prompt = build_prompt(automation, event, max_chars=services.settings.max_prompt_chars)
    try:
        if target is not None:
            accepted = intake.follow_up(
                services,
                project,
                target,
                prompt,
                source="automation",
                author=automation.name,
                source_repository=event.source_repository,
                source_commit=event.source_commit,
            )
        else:
            accepted = intake.create(services, project, _new_job(services, project, automation, run, prompt, event))
    except intake.REFUSALS as exc:
        store.give_back_run_slot(automation.id)
        run.skipped_reason = f"refused: {exc.detail}"
        return run
    run.job_id = accepted.job.id
    run.message_id = accepted.message.id if accepted.message is not None else _first_message(services, run.job_id)
    store.note_job(automation.id, accepted.job.id)
    return run


def _new_job(
    services: Services, project: Project, automation: Automation, run: AutomationRun, prompt: str, event: TriggerEvent
) -> intake.NewJob:
    return intake.NewJob(
        prompt=prompt,
        model=services.settings.model,
        ref=project.ref,
        max_tokens=automation.options.max_tokens or project.max_tokens,
        source="automation",
        author=automation.name,
        automation={"id": automation.id, "runId": run.id, "trigger": run.trigger},
        source_repository=event.source_repository,
        source_commit=event.source_commit,
    )


def _run(
    services: Services, automation: Automation, event: TriggerEvent, *, skipped: str | None = None
) -> AutomationRun:
    return AutomationRun(
        id=services.automations.new_run_id(),
        automation_id=automation.id,
        trigger=event.kind,
        event_key=event.key,
        created_at=now_iso(),
        skipped_reason=skipped,
        changes=[change_ref(c) for c in event.changes],
    )


def change_ref(change: SourceChange) -> dict:
    """What a run keeps of a source change: enough to name and link it."""
    return {**change.to_ref(), "repository": change.repository}


def _first_message(services: Services, job_id: str) -> str | None:
    first = services.jobs.conversation_page(job_id, limit=1, cursor=None)[0]
    return first[0].id if first else None


def _grouping_target(services: Services, automation: Automation) -> Job | None:
    """The automation's last job when a new run should become a round on it: grouping is on and the job is not
    archived, with its pull request open or its first round still to make one."""
    if not automation.options.grouping:
        return None
    last = services.automations.last_job(automation.id)
    job = services.jobs.find(last) if last else None
    if job is None or job.status is JobStatus.ARCHIVED:
        return None
    if job.pr_number is None:
        return job if job.status is JobStatus.ACTIVE else None
    return job if pull_state(services.redis, job) == "open" else None


def open_pull_jobs(services: Services, automation: Automation) -> list[Job]:
    """The jobs this automation started whose pull request is open (not archived); forgets the ones that ended."""
    store = services.automations
    ids = store.jobs(automation.id)
    found = {job_id: services.jobs.find(job_id) for job_id in ids}
    ended = [i for i, job in found.items() if job is None or job.status is JobStatus.ARCHIVED]
    store.forget_jobs(automation.id, ended)
    alive = [job for job in found.values() if job is not None and job.status is not JobStatus.ARCHIVED]
    states = pull_states(services.redis, alive)
    return [job for job in alive if states.get(job.id) == "open"]


def _open_pull_cap(services: Services, automation: Automation) -> str | None:
    limit = automation.options.max_open_pull_requests
    open_now = len(open_pull_jobs(services, automation))
    if open_now < limit:
        return None
    return (
        f"{open_now} pull requests of this automation are open, as many as options.maxOpenPullRequests "
        f"({limit}) allows; merge or close one first"
    )


def build_prompt(automation: Automation, event: TriggerEvent, *, max_chars: int) -> str:
    """The automation's prompt, then the trigger's data fenced as data (never instructions), within `max_chars`."""
    room = max(0, max_chars - len(automation.prompt) - DATA_MARGIN_CHARS)
    blocks = []
    if event.changes and event.context:  # both: the changes first, the free text gets a quarter
        blocks = [
            render_changes(event.changes, max_chars=room - room // 4),
            render_context(event.context, max_chars=room // 4),
        ]
    elif event.changes:
        blocks = [render_changes(event.changes, max_chars=room)]
    elif event.context:
        blocks = [render_context(event.context, max_chars=room)]
    return "\n\n".join([automation.prompt, *blocks])
