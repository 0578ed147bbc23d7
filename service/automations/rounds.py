"""The rounds of an automation's job: which source changes each covers (for the pull request's timeline), and
whom the code host tells once a round opened or updated the pull request (reviews, links on the source ones)."""

from service import describe
from service.codehost.base import SourceNotice, SourcePull
from service.models import Job, Message
from service.services import Services


def covered(services: Services, job: Job, message_ids: list[str]) -> dict[str, list[dict]]:
    """The source changes (refs) each of these rounds of `job` covers, by message id; empty for a job no
    automation started, and for rounds no automation run added (a person's follow-up)."""
    if job.automation is None:
        return {}
    automation_id = job.automation["id"]
    runs = services.automations.message_runs(automation_id, message_ids)
    first = job.automation.get("runId")
    if first and not any(run.id == first for run in runs.values()):
        # The run that started the job is recorded right after the job: look it up by its id too.
        started = services.automations.run(automation_id, first)
        if started is not None and started.message_id in message_ids:
            runs[started.message_id] = started
    return {message_id: run.changes for message_id, run in runs.items() if run.changes}


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
    runs = services.automations.message_runs(automation.id, [message.id])
    run = runs.get(message.id)
    if run is None and job.automation.get("runId"):
        started = services.automations.run(automation.id, job.automation["runId"])
        run = started if started is not None and started.message_id == message.id else None
    if run is None:
        return None
    pulls = [ref for ref in run.changes if ref.get("kind") == "pull_request" and ref.get("repository")]
    options = automation.options
    authors = [ref.get("author") or "" for ref in pulls] if options.request_source_reviews else []
    reviewers = tuple(login for login in [*authors, *options.reviewers] if login)
    comment_on = tuple(SourcePull(ref["repository"], int(ref["id"])) for ref in pulls) if options.comment_on_source \
        else ()
    if not reviewers and not comment_on:
        return None
    return SourceNotice(reviewers=reviewers, comment_on=comment_on,
                        comment=describe.source_comment(pull_url, automation_name=automation.name),
                        key=f"docs:{job.id}")
