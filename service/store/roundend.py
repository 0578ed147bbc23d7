"""How a finished run settles its message and its job: pure rules, applied inside JobStore's transactions."""

from dataclasses import dataclass

from service.models import JobStatus, Message, MessageStatus, Role


@dataclass(frozen=True)
class RoundEnd:
    """The statuses and errors one finished run leaves on its message and on its job."""

    message_status: MessageStatus
    message_error: dict | None
    job_status: JobStatus
    job_error: dict | None


def settle_round(
    *,
    job_status: JobStatus,
    job_error: dict | None,
    error: dict | None,
    cancelled: bool,
    others_waiting: bool,
    last_round: tuple[JobStatus, dict | None],
) -> RoundEnd:
    """The outcome of a run that ended with `error` (None: it succeeded) or was `cancelled`.

    An archived job stays archived; a job with more messages waiting stays active; a cancelled run leaves the
    job as `last_round` (its last finished round, see `last_round_state`) left it.
    """
    message_status = (
        MessageStatus.CANCELLED if cancelled else MessageStatus.FAILED if error else MessageStatus.PROCESSED
    )
    message_error = None if cancelled else error
    if job_status is JobStatus.ARCHIVED:
        return RoundEnd(message_status, message_error, job_status, job_error)
    if others_waiting:
        return RoundEnd(message_status, message_error, JobStatus.ACTIVE, None)
    if cancelled:
        return RoundEnd(message_status, message_error, *last_round)
    if error:
        return RoundEnd(message_status, message_error, JobStatus.FAILED, error)
    return RoundEnd(message_status, message_error, JobStatus.COMPLETED, None)


def last_round_state(conversation: list[Message], *, exclude: str | None) -> tuple[JobStatus, dict | None]:
    """The status and error the job's last finished round left: `completed` when no round finished."""
    finished = [
        m
        for m in conversation
        if m.role is Role.USER and m.id != exclude and m.status in (MessageStatus.PROCESSED, MessageStatus.FAILED)
    ]
    if not finished:
        return JobStatus.COMPLETED, None
    last = max(finished, key=lambda m: m.seq)
    return (JobStatus.FAILED, last.error) if last.status is MessageStatus.FAILED else (JobStatus.COMPLETED, None)
