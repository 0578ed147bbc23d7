"""A job's Redis key names are data: they stay as earlier versions wrote them, and deleting a job lists them all."""

from service.store import jobkeys

JOB, MESSAGE = "job_01JD0000000000000000000000", "msg_01JD0000000000000000000000"


def test_every_name_is_the_one_earlier_versions_wrote():
    assert [
        jobkeys.job_key(JOB),
        jobkeys.pending_key(JOB),
        jobkeys.conversation_key(JOB),
        jobkeys.cancel_key(JOB),
        jobkeys.idem_key(JOB),
        jobkeys.stream_key(JOB),
        jobkeys.rq_key(JOB),
        jobkeys.lease_key(JOB),
        jobkeys.fence_key(JOB),
        jobkeys.run_lock_key(JOB),
        jobkeys.docs_check_key(JOB),
    ] == [
        f"cd:job:{JOB}",
        f"cd:job:{JOB}:pending",
        f"cd:job:{JOB}:conversation",
        f"cd:job:{JOB}:cancel",
        f"cd:job:{JOB}:idem",
        f"cd:job:{JOB}:events",
        f"cd:job:{JOB}:rq",
        f"cd:job:{JOB}:lease",
        f"cd:job:{JOB}:fence",
        f"cd:job:{JOB}:lock",
        f"cd:job:{JOB}:docs-check",
    ]
    assert [jobkeys.message_key(MESSAGE), jobkeys.tracking_key(MESSAGE)] == [
        f"cd:message:{MESSAGE}",
        f"cd:message:{MESSAGE}:tracking",
    ]
    assert [
        jobkeys.pull_state_key(JOB),
        jobkeys.ci_lock_key(JOB),
        jobkeys.ci_rounds_key(JOB),
        jobkeys.ci_seen_key(JOB, "abc", "vale"),
        jobkeys.diff_cache_key(JOB, 7, None),
        jobkeys.diff_cache_key(JOB, 7, "abc"),
    ] == [
        f"cd:gh:pull-state:{JOB}",
        f"cd:gh:ci-lock:{JOB}",
        f"cd:gh:ci-rounds:{JOB}",
        f"cd:gh:ci-seen:{JOB}:abc:vale",
        f"cd:dash:gh-diff:{JOB}:7:-",
        f"cd:dash:gh-diff:{JOB}:7:abc",
    ]


def test_owned_lists_the_jobs_messages_and_its_diff_cache_at_each_commit():
    owned = jobkeys.owned(JOB, [MESSAGE], pr_number=7, commits=["abc"])
    assert len(owned) == len(set(owned))
    assert {
        jobkeys.job_key(JOB),
        jobkeys.ci_seen_index_key(JOB),
        jobkeys.pull_state_key(JOB),
        jobkeys.message_key(MESSAGE),
        jobkeys.tracking_key(MESSAGE),
        jobkeys.diff_cache_key(JOB, 7, "abc"),
        jobkeys.diff_cache_key(JOB, 7, None),
    } <= set(owned)
    # Every one is named after the job or its message: deleting one job never touches another's keys.
    assert all(JOB in key or MESSAGE in key for key in owned)
    assert not any("gh-diff" in key for key in jobkeys.owned(JOB, [MESSAGE]))  # no pull request, no diff
