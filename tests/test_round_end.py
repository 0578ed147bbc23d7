"""The status transitions of a finished run, as a table (the pure rule JobStore.finish_message applies)."""

import pytest

from service.models import JobStatus, Message, MessageStatus, Role
from service.store.roundend import last_round_state, settle_round

ACTIVE, ARCHIVED, COMPLETED, FAILED = JobStatus.ACTIVE, JobStatus.ARCHIVED, JobStatus.COMPLETED, JobStatus.FAILED
PROCESSED, M_FAILED, CANCELLED = MessageStatus.PROCESSED, MessageStatus.FAILED, MessageStatus.CANCELLED
BOOM = {"code": "model_error", "message": "boom"}
BEFORE = {"code": "time_limit_exceeded", "message": "earlier"}
EARLIER_OK, EARLIER_FAILED = (COMPLETED, None), (FAILED, BEFORE)

# job status, run error, cancelled, others waiting, last round -> message status, message error, job status, error
TABLE = [
    (ACTIVE, None, False, False, EARLIER_FAILED, PROCESSED, None, COMPLETED, None),
    (ACTIVE, BOOM, False, False, EARLIER_OK, M_FAILED, BOOM, FAILED, BOOM),
    (ACTIVE, None, False, True, EARLIER_OK, PROCESSED, None, ACTIVE, None),
    (ACTIVE, BOOM, False, True, EARLIER_OK, M_FAILED, BOOM, ACTIVE, None),
    (ACTIVE, None, True, False, EARLIER_OK, CANCELLED, None, COMPLETED, None),
    (ACTIVE, None, True, False, EARLIER_FAILED, CANCELLED, None, FAILED, BEFORE),
    (ACTIVE, BOOM, True, False, EARLIER_FAILED, CANCELLED, None, FAILED, BEFORE),
    (ACTIVE, None, True, True, EARLIER_FAILED, CANCELLED, None, ACTIVE, None),
    (ARCHIVED, None, False, False, EARLIER_OK, PROCESSED, None, ARCHIVED, None),
    (ARCHIVED, BOOM, False, False, EARLIER_OK, M_FAILED, BOOM, ARCHIVED, None),
    (ARCHIVED, None, False, True, EARLIER_OK, PROCESSED, None, ARCHIVED, None),
    (ARCHIVED, None, True, False, EARLIER_FAILED, CANCELLED, None, ARCHIVED, None),
]


@pytest.mark.parametrize(
    "job_status, error, cancelled, waiting, last, message_status, message_error, after, job_error", TABLE
)
def test_a_finished_run_settles_its_message_and_job(
    job_status, error, cancelled, waiting, last, message_status, message_error, after, job_error
):
    end = settle_round(
        job_status=job_status, job_error=None, error=error, cancelled=cancelled, others_waiting=waiting, last_round=last
    )
    assert (end.message_status, end.message_error, end.job_status, end.job_error) == (
        message_status,
        message_error,
        after,
        job_error,
    )


def _user(seq: int, status: MessageStatus, error: dict | None = None) -> Message:
    return Message(
        id=f"msg_{seq}", job_id="job_1", seq=seq, role=Role.USER, content="p", created_at="", status=status, error=error
    )


@pytest.mark.parametrize(
    "conversation, exclude, expected",
    [
        ([], None, EARLIER_OK),
        ([_user(1, M_FAILED, BEFORE)], None, EARLIER_FAILED),
        ([_user(1, M_FAILED, BEFORE), _user(2, PROCESSED)], None, EARLIER_OK),
        ([_user(1, M_FAILED, BEFORE), _user(2, PROCESSED)], "msg_2", EARLIER_FAILED),
        ([_user(1, PROCESSED), _user(2, CANCELLED)], None, EARLIER_OK),
        ([_user(1, M_FAILED, BEFORE), _user(2, MessageStatus.QUEUED)], None, EARLIER_FAILED),
    ],
)
def test_the_last_finished_round_decides_what_a_cancel_leaves(conversation, exclude, expected):
    assert last_round_state(conversation, exclude=exclude) == expected
