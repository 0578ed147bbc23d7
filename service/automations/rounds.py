"""The rounds of an automation's job: which source changes each covers (for the pull request's timeline), and
whom the code host tells once a round opened or updated the pull request (reviews, links on the source ones)."""

from dataclasses import dataclass

from service import describe
from service.automations.model import AutomationRun
from service.codehost.base import SourceNotice, SourcePull
from service.models import Job, Message
from service.services import Services


@dataclass(frozen=True)
class AutomationRound:
    """A round an automation run added, as the pull request's description shows it."""

    request: str  # the automation's own prompt, without the trigger's data (that was written by others)
    changes: list[dict]  # the refs of the source changes it covers


def automation_rounds(services: Services, job: Job, messages: list[Message]) -> dict[str, AutomationRound]:
    """The rounds of `job` among `messages` that automation runs added, by message id; empty for a job no
    automation started. A person's follow-up is not among them."""
    if job.automation is None:
        return {}
    automation = services.automations.find(job.automation["id"])
    runs = _runs_of(services, job, [m.id for m in messages])
    found = {}
    for message in messages:
        run = runs.get(message.id)
        if run is None:
            continue
        # The prompt was the automation's, then the trigger's data (service.automations.runs.build_prompt).
        own = automation.prompt if automation is not None else None
        request = (
            own if own and message.content.startswith(own) and len(message.content) > len(own) else message.content
        )
        found[message.id] = AutomationRound(request=request, changes=run.changes)
    return found


def covered(services: Services, job: Job, message_ids: list[str]) -> dict[str, list[dict]]:
    """The source changes (refs) each of these rounds of `job` covers, by message id; empty for a job no
    automation started, and for rounds no automation run added (a person's follow-up)."""
    if job.automation is None:
        return {}
    runs = _runs_of(services, job, message_ids)
    return {message_id: run.changes for message_id, run in runs.items() if run.changes}


def _runs_of(services: Services, job: Job, message_ids: list[str]) -> dict[str, AutomationRun]:
    assert job.automation is not None
    automation_id = job.automation["id"]
    runs = services.automations.message_runs(automation_id, message_ids)
    first = job.automation.get("runId")
    if first and not any(run.id == first for run in runs.values()):
        # The run that started the job is recorded right after the job: look it up by its id too.
        started = services.automations.run(automation_id, first)
        if started is not None and started.message_id in message_ids:
            runs[started.message_id] = started
    return runs


def notice(services: Services, job: Job, message: Message, pull_url: str) -> SourceNotice | None:
    """What to tell people now that the automation round `message` opened or updated `job`'s pull request at
    `pull_url`: review from the covered source pull requests' authors (options.requestSourceReviews) and from
    options.reviewers, and a link on each source pull request (options.commentOnSource). None for a round no
    automation run added, or nothing to tell."""
    if job.automation is None:
        return None
    automation = services.automations.find(job.automation["id"])
    if automation is None:
        return None
    run = _runs_of(services, job, [message.id]).get(message.id)
    if run is None:
        return None
    pulls = [ref for ref in run.changes if ref.get("kind") == "pull_request" and ref.get("repository")]
    options = automation.options
    authors = [ref.get("author") or "" for ref in pulls] if options.request_source_reviews else []
    reviewers = tuple(login for login in [*authors, *options.reviewers] if login)
    comment_on = (
        tuple(SourcePull(ref["repository"], int(ref["id"])) for ref in pulls) if options.comment_on_source else ()
    )
    if not reviewers and not comment_on:
        return None
    return SourceNotice(
        reviewers=reviewers,
        comment_on=comment_on,
        comment=describe.source_comment(pull_url, automation_name=automation.name),
        key=f"docs:{job.id}",
    )
