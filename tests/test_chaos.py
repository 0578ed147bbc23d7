"""Chaos, bounded to about 80 s: real Redis with AOF, a real web process, real worker processes and a slow model;
workers and work horses SIGKILLed at random (and restarted, as a supervisor would), Redis and the web killed and
restarted once. From outside, over HTTP and git: nothing lost, every message committed at most once (exactly once
when it changed files), one pull request per job as the code host's pages list them, nothing stuck, no
internal_error, no worker that exited by itself, and every commit clean under `git fsck --strict`."""

import pytest

from tests.chaos import ChaosPlan, ChaosRig
from tests.fsck_check import assert_copydesk_commits_pass_fsck
from tests.harness import wait_until

# Tens of seconds in all: handed to a test process first (tests/scheduling.py).
pytestmark = pytest.mark.long_running


def test_nothing_is_lost_doubled_or_stuck_under_random_kills_and_outages(tmp_path):
    # 30 s of faults with a kill every 2 s on average: as many kills (about 13 outside the outages) and both
    # outages as the 40 s at 2.5 s this test ran before, in 10 s less; the work still left when the faults stop
    # ends in the settle, as before, and the checks are the same.
    plan = ChaosPlan(
        seconds=30,
        workers=4,
        jobs=5,
        follow_ups=1,
        kill_every=2.0,
        redis_outage_at=9,
        web_outage_at=18,
        settle_seconds=40,
        max_attempts=20,
    )
    with ChaosRig(tmp_path, plan) as rig:
        report = rig.run()
    print(report.figures())
    assert sum(report.kills.values()) >= 8
    assert report.messages == plan.jobs * (plan.follow_ups + 1)
    assert report.lost == [] and report.duplicates == [] and report.uncommitted == [] and report.stuck == []
    assert report.internal_errors == [] and report.other_failures == []
    assert report.extra_pulls == [] and report.missing_pulls == []
    assert report.fsck_findings == []
    assert report.exited_by_themselves == []
    assert report.server_errors_outside_downtime == []
    assert report.recoveries and max(report.recoveries) < 30


def test_a_redis_restart_mid_run_is_ridden_out_by_the_worker_and_retried_not_failed(tmp_path):
    # Only the first model call is slow: the one the outage catches; the run retried after it need not be.
    plan = ChaosPlan(workers=1, jobs=1, model_delay=2.0, slow_calls=1)
    with ChaosRig(tmp_path, plan) as rig:
        job_id = rig.create(0)
        wait_until(lambda: rig.model.requests, 30, "the run to call the model")  # the run waits on its model call...
        rig.redis_outage()  # ...when Redis dies, and comes back 2 s later
        wait_until(
            lambda: rig.job(job_id)["status"] != "active", 60, "the run to be finished after the outage", interval=0.25
        )
        done = rig.job(job_id)
        assert done["status"] == "completed" and done["prLink"], done
        [message] = [m for m in rig._call("GET", f"/job/{job_id}/messages").json()["messages"] if m["role"] == "user"]
        assert message["status"] == "processed"
        assert rig.workers[0].alive(), rig.workers[0].log()
        assert len(rig.workers) == 1  # the same worker process served the run before and after the outage
    assert assert_copydesk_commits_pass_fsck(rig.repo) == 1
