"""Runs a job's next message under a lease: workspace, agent, commit, push, pull request, and the job's new state."""

import logging
import time
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, replace

import redis

from service import describe, logcontext
from service.agent.briefing import brief
from service.agent.compaction import compact_history
from service.agent.docs_report import REPORT_MAX_CHARS
from service.agent.loop import RunLimits, RunMeter, run_agent, time_limit_failure
from service.agent.model import ModelFactory, ToolCall
from service.agent.progress import step_event
from service.automations import docsfirst
from service.automations import rounds as automation_rounds
from service.codehost.base import AnnouncesSources, CodeHost, CodeHostError
from service.codes import RunFailure
from service.describe import RoundState
from service.errors import RunFailed, WriteNotReplicated
from service.faults import (
    AFTER_PULL,
    AFTER_PUSH,
    FREEZE_BEFORE_COMMENT,
    FREEZE_BEFORE_PULL,
    FREEZE_BEFORE_PUSH,
    PAUSE_BEFORE_PUSH,
    Faults,
)
from service.job_events import EventType
from service.lease import Lease, LeaseLost
from service.models import Job, JobStatus, Message, MessageStatus, Project, PullRequest, Role, RoundOutcome
from service.monthlycap import AccountSpending
from service.projectstate import reason_of
from service.runreport import PhaseClock, RunReport, report
from service.runstop import RunStop, RunStopped, StopReason, StopSource
from service.services import Services
from service.sources import SourceTree, open_source
from service.store.docschecks import DocsChecks
from service.store.jobs import JobStore, RunOutcome, remaining_budget
from service.tracking import RoundTracker, TrackingComments
from service.workspace.entries import BranchConflict
from service.workspace.git import GitError, Remote
from service.workspace.history import BranchHistory
from service.workspace.mirror import Mirror, MirrorStore
from service.workspace.publish import Identity, PushRequest, build_commit, push_commit

log = logging.getLogger(__name__)

# How long past its deadline a run may take to stop before its worker process kills it (a C loop does not
# notice a Python-level interrupt); the worker process then records `time_limit_exceeded` itself.
BACKSTOP_GRACE_SECONDS = 5.0
# How long publishing (push, pull request, outcome) may take before the worker process ends the run anyway.
PUBLISH_ALLOWANCE_SECONDS = 900.0


@dataclass
class _Edited:
    """What the agent left: its words, its changes (path -> content, None deletes) and the docs check."""

    title: str
    summary: str
    changes: dict
    docs_check: str | None
    no_change_needed: bool = False  # the agent found the request needs no change (it then changed nothing)


@dataclass
class _Published:
    title: str
    summary: str
    commit: str | None
    changed_files: list[str]
    docs_check: str | None
    no_change_needed: bool = False

    @property
    def outcome(self) -> RoundOutcome:
        """What the round did: a commit is a change whatever the agent said; else its words say which."""
        if self.commit is not None:
            return RoundOutcome.CHANGED
        return RoundOutcome.NO_CHANGE_NEEDED if self.no_change_needed else RoundOutcome.ANSWERED


class JobRunner:
    """Processes one waiting message of a job per call, never two runs of one job at once."""

    def __init__(
        self,
        services: Services,
        mirrors: MirrorStore,
        models: ModelFactory,
        *,
        faults: Faults = Faults(),
        worker: str = "",
    ) -> None:
        self.services = services
        self.mirrors = mirrors
        self.models = models
        self.faults = faults
        self.worker = worker  # the RQ worker process that renews this process's leases too ("" for none)
        settings = services.settings
        self.identity = Identity(settings.git_author_name, settings.git_author_email)

    def process(self, job_id: str) -> None:
        """Run the job's next waiting message, if no other run of the job is going."""
        with logcontext.job(job_id):
            try:
                self._process(job_id)
            except redis.RedisError:
                # Nothing was recorded; the lease lapses and the sweep resumes the message once Redis is back.
                log.warning(
                    "job %s: Redis became unreachable; the run is left for the recovery sweep", job_id, exc_info=True
                )

    def _process(self, job_id: str) -> None:
        settings = self.services.settings
        if self.services.jobs.find(job_id) is None:
            # Deleted after this run was queued: take no lease, so nothing of the job is written again.
            log.info("job %s no longer exists; nothing to run", job_id)
            return
        lease = Lease(self.services.redis, job_id, settings.lease_ttl_seconds)
        kill_at = time.time() + settings.run_timeout_seconds + BACKSTOP_GRACE_SECONDS
        if not lease.acquire(worker=self.worker, kill_at=kill_at):
            log.info("job %s already has a run going; it will take the next message", job_id)
            return
        handed_back = False
        try:
            started = self.services.jobs.start_next(job_id, lease.fence)
            if started is not None:
                job, message = started
                lease.note("message", message.id)
                handed_back = Run(self, job, message, lease).execute() is StopReason.HAND_BACK
        except LeaseLost:
            log.warning("job %s: the lease lapsed before the run started; its new holder runs it", job_id)
        finally:
            lease.release()
        # Checked after releasing, so a message that arrived while we held the lease is not stranded.
        if self.services.jobs.has_pending(job_id):
            self.services.dispatcher.kick(job_id, first=handed_back)


class Run:
    """One run of one message: job, message, project, host, workspace, lease and meter, with the lifecycle of
    a run as its methods (start, edit, push, publish the pull request, record) and one way to end per stop."""

    def __init__(self, runner: JobRunner, job: Job, message: Message, lease: Lease) -> None:
        self.services = runner.services
        self.settings = runner.services.settings
        self.runner = runner
        self.job = job
        self.message = message
        self.lease = lease
        self.meter = RunMeter()
        self.stop = RunStop(deadline=time.monotonic() + self.settings.run_timeout_seconds)
        self.branch = job.branch or f"copydesk/{job.id}"
        self.trailer = f"{describe.TRAILER_MESSAGE}: {message.id}"
        self.earlier = [m for m in self.services.jobs.conversation(job.id) if m.seq < message.seq]
        self.project: Project | None = None
        self.host: CodeHost | None = None
        self.remote: Remote | None = None
        self.mirror: Mirror | None = None
        self.history: BranchHistory | None = None
        self.spending: AccountSpending | None = None
        self.instructions_from: str | None = None  # the head of the project's base branch: see _edit
        self.clock = PhaseClock()
        self.recorded: RunOutcome | None = None  # the outcome once it is in the store
        self.tracker: RoundTracker | None = None  # the round's comment on the pull request: see _track

    # -- the lifecycle ---------------------------------------------------------------------------

    def execute(self) -> StopReason | None:
        """Run the message and record how it ended; returns why it was stopped, if it was. Either way the run's
        one log line and its metrics say how it ended."""
        started = time.monotonic()
        reason: StopReason | None = None
        try:
            reason = self._execute()
        finally:
            self._report(reason, time.monotonic() - started)
        return reason

    def _execute(self) -> StopReason | None:
        try:
            with self.stop.watch(self._stop_sources()):
                self._record(self._attempt())
            return None
        except RunStopped as stopped:
            reason = self.stop.reason or stopped.reason
            assert reason is not None  # a stop raised without a reason was recorded in self.stop first
        except LeaseLost:
            reason = StopReason.LEASE_LOST
        except redis.RedisError:
            log.warning(
                "job %s message %s: Redis became unreachable mid-run; handing the message back",
                self.job.id,
                self.message.id,
                exc_info=True,
            )
            self._hand_back(retry_for=self.lease.ttl_seconds)
            return StopReason.HAND_BACK
        self._on_stop[reason](self)
        return reason

    def _attempt(self) -> RunOutcome:
        if self.message.attempts > self.settings.max_attempts:
            return _failed(
                RunFailure.RUN_INTERRUPTED,
                f"the run was interrupted {self.message.attempts - 1} times "
                "(worker crash or time-out); send the message again to retry",
            )
        try:
            outcome = self._run()
        except (RunStopped, LeaseLost, redis.RedisError):
            raise
        except RunFailed as failure:
            log.info("job %s message %s failed: %s", self.job.id, self.message.id, failure)
            outcome = _failed(failure.code, failure.message)
        except CodeHostError as exc:
            log.warning("job %s message %s: the code host failed: %s", self.job.id, self.message.id, exc)
            outcome = _failed(RunFailure.CODE_HOST_ERROR, f"the code host refused or failed a request: {exc}")
        except Exception:
            log.exception("job %s message %s: unexpected error", self.job.id, self.message.id)
            outcome = _failed(
                RunFailure.INTERNAL_ERROR, "an unexpected error stopped the run; the operator's logs have details"
            )
        return outcome

    def _run(self) -> RunOutcome:
        self.project = self._ensure_enabled()
        self.spending = spending = AccountSpending(
            self.services.usage, host=self.project.host, account=self.project.account, key_id=self.message.key_id
        )
        spending.allow_call()  # checked again as the run starts: work since it was accepted may have used the cap
        self.host = self.services.code_hosts[self.project.host]
        self._track().start(self.job.pr_number)
        self.remote = self.host.remote(self.project)
        self.mirror = self.runner.mirrors.mirror(self.remote)
        try:
            with ExitStack() as refs:
                with self.stop.interruptible():
                    with self.clock.phase("fetch"):
                        heads = refs.enter_context(
                            self.mirror.run_refs(
                                self.remote,
                                {
                                    "base": f"refs/heads/{self.job.ref}",
                                    "branch": f"refs/heads/{self.branch}",
                                    "project": f"refs/heads/{self.project.ref}",
                                },
                            )
                        )
                    start = heads["branch"] or heads["base"]
                    if start is None:
                        raise RunFailed(RunFailure.REF_NOT_FOUND, f"the repository has no branch {self.job.ref!r}")
                    self.history = BranchHistory(self.mirror, heads["base"])
                    self.instructions_from = heads["project"]
                    published = self._earlier_push(heads["branch"])
                    if published is None:
                        with self.clock.phase("agent"):
                            edited = self._edit(start)
                if published is None:
                    with self.clock.phase("push"):
                        published = self._push(start, edited)
                files = self.history.files(published.commit or start)
                if published.commit is None and self.job.pr_number is not None:
                    published.title = self._kept_title(published.title)
        except GitError as exc:
            raise RunFailed(
                RunFailure.REPOSITORY_UNREACHABLE, f"git could not reach the repository: {exc.stderr.strip()[:300]}"
            ) from exc
        except BranchConflict as exc:
            raise RunFailed(RunFailure.BRANCH_CONFLICT, str(exc)) from exc
        with self.clock.phase("pull_request"):
            return self._publish_pull(published, files)

    def _edit(self, start: str) -> _Edited:
        """The agent's part: brief the model, let it edit the workspace, collect its changes."""
        settings = self.settings
        request = self.earlier[0].content if self.earlier else self.message.content  # the job's first prompt
        assert self.mirror is not None and self.history is not None and self.project is not None  # set by _run
        with self.mirror.open(start) as workspace, self._open_source() as source:
            # The instructions come from the project's base branch, not the job's `ref`: an API caller may
            # start a job from any branch, and whoever can push there must not be able to instruct the agent.
            task = brief(
                workspace,
                _prompt_text(self.message),
                base_commit=self.instructions_from,
                history=compact_history(_history(self.earlier), max_chars=settings.agent_history_chars),
                docs_root=self.project.docs_root,
                base_ref=self.job.ref,
                branch_diff=self.history.diff(start) if self.earlier else None,
                source_repository=source.repository if source else None,
                source_commit=source.commit if source else None,
            )
            if docsfirst.wanted(self.services, self.job, self.message):
                first = docsfirst.check_first(workspace, task.site)
                if first.clean:  # no model call at all: the round ends here, with its reason
                    return _Edited(describe.fallback_title(request), first.reason(), {}, None, no_change_needed=True)
                task = replace(task, prompt=first.prompt(task.prompt))
            model = self.runner.models.client(self.job.model, run_index=self.message.seq, cache_key=self.job.id)
            budget = remaining_budget(self.job)
            limits = RunLimits(
                settings.max_steps,
                settings.max_bytes_written,
                deadline=self.stop.deadline,
                max_tokens=settings.max_tokens,
                context_chars=settings.agent_context_chars,
                tool_seconds=settings.tool_timeout_seconds,
                budget=budget,
            )
            result = run_agent(
                workspace,
                model,
                task,
                limits,
                self.meter,
                stop=self.stop,
                faults=self.runner.faults,
                on_step=self._step,
                spending=self.spending,
                source=source.workspace if source else None,
            )
            changes = workspace.changes()
        title = result.title or describe.fallback_title(request)
        docs_check = result.docs_report.to_text(REPORT_MAX_CHARS) if result.docs_report else None
        return _Edited(title, result.summary, changes, docs_check, no_change_needed=result.no_change_needed)

    def _open_source(self) -> AbstractContextManager[SourceTree | None]:
        """The round's read-only source repository at its commit, when the message names one (service.sources)."""
        if self.message.source_repository is None:
            return nullcontext(None)
        assert self.host is not None and self.project is not None  # set by _run
        return open_source(
            self.host, self.project, self.runner.mirrors, self.message.source_repository, self.message.source_commit
        )

    def _push(self, start: str, edited: _Edited) -> _Published:
        """Commit the agent's changes and push them: fenced by the lease, never twice for one message."""
        # The last moment a stop (deadline, hand-back) keeps the run from writing anything outside.
        self.stop.check()
        if not edited.changes:
            return _Published(edited.title, edited.summary, None, [], edited.docs_check, edited.no_change_needed)
        text = describe.commit_message(edited.title, edited.summary, job_id=self.job.id, message_id=self.message.id)
        assert self.mirror is not None and self.remote is not None and self.history is not None  # set by _run
        commit = build_commit(
            self.mirror, start, edited.changes, text, author=self.runner.identity, committer=self.runner.identity
        )
        if commit is None:
            return _Published(edited.title, edited.summary, None, [], edited.docs_check, edited.no_change_needed)
        self._ensure_still_wanted()
        # From here on the run publishes: git and the code host bound each call themselves, and the worker
        # process must not kill a horse that is past the deadline but pushing (it would record a failure).
        self.lease.note("kill_at", repr(time.time() + PUBLISH_ALLOWANCE_SECONDS))
        self.runner.faults.reach(PAUSE_BEFORE_PUSH)
        push = PushRequest(
            commit=commit,
            branch=self.branch,
            start_commit=start,
            changes=edited.changes,
            message=text,
            author=self.runner.identity,
            committer=self.runner.identity,
            trailer=self.trailer,
            base_head=self.history.base,
        )
        pushed = push_commit(self.mirror, self.remote, push, guard=self._guard_push)
        self.runner.faults.reach(AFTER_PUSH)
        if pushed.already:
            return self._published_from(pushed.commit)
        self.services.events.emit(
            self.job, EventType.RUN_PUSHED, run={"messageId": self.message.id, "commit": pushed.commit}
        )
        return _Published(edited.title, edited.summary, pushed.commit, sorted(edited.changes), edited.docs_check)

    def _publish_pull(self, published: _Published, files: list[tuple[str, str]]) -> RunOutcome:
        """Open or update the job's pull request (and comment on a follow-up round), each after a lease check."""
        no_change = published.outcome is RoundOutcome.NO_CHANGE_NEEDED
        outcome = RunOutcome(
            reply=published.summary,
            commit=published.commit,
            changed_files=published.changed_files,
            outcome=published.outcome,
            reason=published.summary if no_change else None,
        )
        if published.commit is None and self.job.pr_number is None:
            return outcome  # nothing changed and no pull request yet: nothing to show on the host
        outcome.branch = self.branch
        assert self.host is not None and self.project is not None  # set by _run
        # Every round rewrites Copydesk's section of the description, a round that changed nothing too (its
        # answer is one more round); the host keeps a person's text outside the section.
        if published.commit is not None or self.job.pr_number is not None:
            self._ensure_still_wanted()
            docs_check = DocsChecks(self.services.redis).latest(self.job.id, published.docs_check)
            summary = describe.round_summary(published.summary, no_change_needed=no_change)
            asked = [m for m in [*self.earlier, self.message] if m.role is Role.USER]
            shown = automation_rounds.automation_rounds(self.services, self.job, asked)
            body = describe.pull_body(
                rounds=_rounds(self.earlier, self.message, summary, shown),
                files=files,
                docs_check=docs_check,
                job_id=self.job.id,
                sources=self._sources(shown),
            )
            # An early look at the lease spares a doomed write; the host fences the write itself with the lease
            # (a worker may freeze between this look and the write). One pull request per branch, so a retry
            # updates, not opens.
            self.lease.ensure_held()
            self.runner.faults.reach(FREEZE_BEFORE_PULL)
            pull = self.host.open_or_update_pull(
                self.project,
                job_id=self.job.id,
                branch=self.branch,
                base=self.job.ref,
                title=published.title,
                body=body,
                draft=self.job.as_draft,
                fence=self.lease.fence,
                may_open=published.commit is not None,
            )
            if pull is not None:
                outcome.pr_link, outcome.pr_number = pull.url, pull.number
                if published.commit is not None:
                    self._announce(pull)
            self.runner.faults.reach(AFTER_PULL)
        self.lease.ensure_held()
        self.runner.faults.reach(FREEZE_BEFORE_COMMENT)
        number = outcome.pr_number or self.job.pr_number
        assert number is not None  # the job had a pull request or this run opened one (see the return above)
        tracker = self._track()
        tracker.finish(
            number,
            tracker.report(
                RoundState.DONE,
                summary=published.summary,
                commit=published.commit,
                changed_files=published.changed_files,
                docs_check=published.docs_check,
                no_change_needed=no_change,
            ),
        )
        mention = _mention(self.message)
        for thread in self.message.threads:
            # Each line comment is answered in its own thread; those replies notify whoever asked.
            self._comment(
                number,
                describe.thread_reply(
                    mention=mention, commit=published.commit, summary=published.summary, no_change_needed=no_change
                ),
                key=f"{self.message.id}:thread:{thread}",
                thread=thread,
            )
        if mention and not self.message.threads:
            self._comment(
                number,
                describe.round_reply(
                    mention=mention,
                    round_number=tracker.round_number,
                    state=RoundState.DONE,
                    summary=published.summary,
                    no_change_needed=no_change,
                ),
                key=f"{self.message.id}:done",
            )
        return outcome

    def _sources(self, shown: dict[str, automation_rounds.AutomationRound]) -> list[list[dict]] | None:
        """The source changes each round covers, in `_rounds`' order: an automation's job only."""
        if self.job.automation is None:
            return None
        return [shown[i].changes if i in shown else [] for i in _round_ids(self.earlier, self.message)]

    def _announce(self, pull: PullRequest) -> None:
        """An automation's round that pushed to its pull request: the code host asks the source pull requests'
        authors and the automation's reviewers for review and links the pull request from the source ones. Its
        failure is logged: the round's work is pushed by now."""
        if self.job.automation is None or not isinstance(self.host, AnnouncesSources):
            return
        assert self.project is not None  # set by _run
        try:
            notice = automation_rounds.notice(self.services, self.job, self.message, pull.url)
            if notice is not None:
                self.host.announce_sources(self.project, pull.number, notice)
        except Exception:  # noqa: BLE001 - telling people must never change how the round ended
            log.warning(
                "job %s: could not request reviews or link pull request #%s from its sources",
                self.job.id,
                pull.number,
                exc_info=True,
            )

    def _record(self, outcome: RunOutcome) -> None:
        """Record the outcome, fenced: a run whose lease lapsed writes nothing (LeaseLost)."""
        if self.meter.steps:
            outcome.usage = self.meter.usage.to_api()
        self.services.jobs.finish_message(self.job.id, self.message.id, outcome, fence=self.lease.fence)
        self.recorded = outcome
        self._confirm_recorded()
        if outcome.error and self.job.pr_number is not None and outcome.error["code"] != "job_archived":
            self._reply_failure(outcome.error)

    def _confirm_recorded(self) -> None:
        """Wait for the replicas to hold the outcome (COPYDESK_REDIS_MIN_REPLICAS). Unconfirmed, it stands on the
        primary and is only logged: should a failover lose it, the message runs again and finds its commit by its
        trailer, so nothing is pushed or recorded twice."""
        try:
            self.services.durability.confirm()
        except (WriteNotReplicated, redis.RedisError) as exc:
            log.warning(
                "job %s message %s: the outcome is recorded but its replication is not confirmed (%s)",
                self.job.id,
                self.message.id,
                getattr(exc, "detail", exc),
            )

    def _guard_push(self) -> None:
        """Right before each push, a rebuild's too: the lease is still this run's (a push is the one write Redis
        cannot fence), and the message was not cancelled since the run's last stop check.

        The cancel is read from Redis here, not left to the watchdog: a cancel that lands while the run
        publishes is not delivered (a stop never cuts a publish), and the watchdog looks only twice a second."""
        self.lease.ensure_held()
        if self.services.jobs.cancel_requested(self.job.id, self.message.id):
            self.stop.request(StopReason.CANCELLED)
            raise RunStopped(StopReason.CANCELLED)
        self.runner.faults.reach(FREEZE_BEFORE_PUSH)

    # -- the ways a stopped run ends: one per StopReason -----------------------------------------

    def _time_limit_exceeded(self) -> None:
        failure = time_limit_failure()
        try:
            self._record(_failed(failure.code, failure.message))
        except LeaseLost:
            log.warning(
                "job %s: the lease lapsed as the run hit its time limit; its new holder records it", self.job.id
            )

    def _walk_away(self) -> None:
        # Another run may hold the job now: it finds any commit of ours by its trailer and records the outcome.
        log.warning(
            "job %s message %s: the lease was lost mid-run; stopping without writing anything",
            self.job.id,
            self.message.id,
        )

    def _hand_back(self, retry_for: float = 0.0) -> None:
        """Requeue the message without counting the attempt; retried for `retry_for` seconds (Redis blips)."""
        give_up = time.monotonic() + retry_for
        delay = 0.2
        while True:
            try:
                if self.services.jobs.hand_back(self.job.id, self.message.id, self.lease.fence):
                    log.info("job %s message %s: handed back to the queue", self.job.id, self.message.id)
                return
            except LeaseLost:
                return  # someone else runs it now
            except redis.RedisError:
                if time.monotonic() + delay > give_up:
                    log.warning(
                        "job %s: could not hand the message back; the recovery sweep will resume it", self.job.id
                    )
                    return
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _cancelled(self) -> None:
        """The job was cancelled: nothing was pushed (a stop never cuts a publish); the store settles the job."""
        log.info("job %s message %s: cancelled; the run stopped", self.job.id, self.message.id)
        try:
            self._record(RunOutcome(cancelled=True))
            if self.tracker is not None and self.tracker.comment_id is not None and self.job.pr_number is not None:
                self.tracker.finish(self.job.pr_number, self.tracker.report(RoundState.CANCELLED))
        except LeaseLost:
            log.warning("job %s: the lease lapsed as the run was cancelled; its new holder records it", self.job.id)

    _on_stop = {
        StopReason.DEADLINE: _time_limit_exceeded,
        StopReason.LEASE_LOST: _walk_away,
        StopReason.HAND_BACK: _hand_back,
        StopReason.CANCELLED: _cancelled,
    }

    def _stop_sources(self) -> list[StopSource]:
        """What the watchdog asks every tick besides the clock (a hand-back comes from a signal handler).

        A new way to stop a run is a StopReason member, a source here that returns it, and its ending in
        `_on_stop`; the delivery (interrupting a model call or a tool, never a publish) is the same for all."""
        return [LeaseKeeper(self.lease), CancelWatch(self.services.jobs, self.job.id, self.message.id)]

    # -- helpers ---------------------------------------------------------------------------------

    def _report(self, reason: StopReason | None, seconds: float) -> None:
        """The run's line and metrics: the outcome recorded, else why nothing was (handed back, lease lost)."""
        recorded = self.recorded
        code = ""
        if recorded is not None:
            code = (recorded.error or {}).get("code", "") if not recorded.cancelled else ""
            outcome = "cancelled" if recorded.cancelled else "failed" if recorded.error else "completed"
        else:
            outcome = _UNRECORDED.get(reason, "interrupted") if reason is not None else "interrupted"
        try:
            report(
                RunReport(
                    job_id=self.job.id,
                    message_id=self.message.id,
                    model=self.job.model,
                    attempt=self.message.attempts,
                    outcome=outcome,
                    seconds=seconds,
                    code=code,
                    commit=recorded.commit if recorded else None,
                    pr_link=(recorded.pr_link if recorded else None) or self.job.pr_link,
                    steps=self.meter.steps,
                    usage=self.meter.usage,
                    phases=self.clock.seconds,
                )
            )
        except Exception:  # noqa: BLE001 - reporting must never change how a run ended
            log.warning("job %s: could not report the run", self.job.id, exc_info=True)

    def _step(self, number: int, call: ToolCall) -> None:
        self.services.events.emit(self.job, EventType.RUN_STEP, run=step_event(self.message.id, number, call))
        if self.tracker is not None:
            self.tracker.step(call)

    def _track(self) -> RoundTracker:
        """The round's tracker, made once the project and its code host are known."""
        if self.tracker is None:
            assert self.host is not None and self.project is not None  # set by _run or _reply_failure
            self.tracker = RoundTracker(
                TrackingComments(self.services.redis),
                self.host,
                self.project,
                self.message,
                fence=self.lease.fence,
                edit_every=self.settings.comment_edit_seconds,
            )
        return self.tracker

    def _kept_title(self, title: str) -> str:
        """The pull request's title for a round that commits nothing (an answer, no change needed): the title of
        the job's last commit, so the round does not rename the pull request after the job's first prompt."""
        assert self.history is not None  # set by _run
        commits = [m.commit for m in self.earlier if m.role is Role.AGENT and m.commit]
        if not commits:
            return title
        try:
            kept, _ = describe.parse_commit_message(self.history.message(commits[-1]))
        except GitError:
            return title  # the commit is gone from the mirror (a force-push): the round's own title will do
        return kept or title

    def _earlier_push(self, branch_head: str | None) -> _Published | None:
        """The commit an interrupted attempt of this message already pushed, found by its trailer."""
        assert self.history is not None  # set by _run
        found = self.history.find_trailer(branch_head, self.trailer)
        return self._published_from(found) if found else None

    def _published_from(self, commit: str) -> _Published:
        assert self.history is not None  # set by _run
        title, summary = describe.parse_commit_message(self.history.message(commit))
        return _Published(title, summary, commit, self.history.commit_paths(commit), None)

    def _ensure_enabled(self) -> Project:
        """The project, or RunFailed with the reason it was disabled (checked at start and again before a push)."""
        project = self.services.projects.get(self.job.project_id)
        if not project.enabled:
            reason = reason_of(project.disabled_reason)
            raise RunFailed(RunFailure(reason.value), reason.detail)
        return project

    def _ensure_still_wanted(self) -> None:
        """Checked before anything reaches the code host: the agent may have worked for minutes."""
        self.project = self._ensure_enabled()  # access may have been removed meanwhile
        if self.services.jobs.get(self.job.id).status is JobStatus.ARCHIVED:
            # Its pull request was merged or closed (or the job archived): a push now would revive the branch
            # and open a second pull request nobody follows.
            raise RunFailed(
                RunFailure.JOB_ARCHIVED,
                "the job was archived during the run (its pull request was merged "
                "or closed, or it was archived); nothing was pushed",
            )

    def _reply_failure(self, error: dict) -> None:
        """Tell the pull request's readers that a run failed and why (its PR exists from an earlier run)."""
        if self.host is None:
            try:
                self.project = self.project or self.services.projects.get(self.job.project_id)
                self.host = self.services.code_hosts[self.project.host]
            except Exception:
                log.warning("job %s: could not reach the code host to report the failure", self.job.id, exc_info=True)
                return
        assert self.job.pr_number is not None  # _record replies only on a job with a pull request
        try:
            tracker = self._track()
            tracker.finish(self.job.pr_number, tracker.report(RoundState.FAILED, error=error))
            mention = _mention(self.message)
            if mention:
                self._comment(
                    self.job.pr_number,
                    describe.round_reply(
                        mention=mention, round_number=tracker.round_number, state=RoundState.FAILED, error=error
                    ),
                    key=f"{self.message.id}:failure",
                )
        except LeaseLost:
            log.warning(
                "job %s: the lease lapsed right after the failure was recorded; it is not commented", self.job.id
            )

    def _comment(self, number: int, body: str, *, key: str, thread: str | None = None) -> None:
        """Comment on the job's pull request (in review thread `thread` when given): fenced by the lease
        (LeaseLost: write nothing more) and posted once per `key`, however many attempts of the run get here."""
        assert self.host is not None and self.project is not None  # set by _run or _reply_failure
        try:
            if thread is not None:
                self.host.reply_in_thread(self.project, number, thread, body, fence=self.lease.fence, key=key)
            else:
                self.host.comment(self.project, number, body, fence=self.lease.fence, key=key)
        except LeaseLost:
            raise
        except Exception:
            # The run's work is pushed by now; a comment the host refuses must not undo that.
            log.warning("could not comment on pull request #%s of %s", number, self.project.id, exc_info=True)


class LeaseKeeper:
    """A stop source that renews the lease every third of its time to live and says LEASE_LOST when it is gone
    (or when Redis stayed unreachable for longer than the lease lives, so it may have lapsed)."""

    def __init__(self, lease: Lease, *, clock=time.monotonic) -> None:
        self._lease = lease
        self._clock = clock
        self._every = lease.ttl_seconds / 3
        self._renewed = clock()

    def __call__(self) -> StopReason | None:
        now = self._clock()
        if now - self._renewed < self._every:
            return None
        try:
            if not self._lease.renew():
                return StopReason.LEASE_LOST
            self._renewed = now
        except redis.RedisError:
            if now - self._renewed > self._lease.ttl_seconds:
                return StopReason.LEASE_LOST
        return None


class CancelWatch:
    """A stop source that says CANCELLED once a cancel of the running message is asked for (looked up twice a
    second; a Redis blip only delays it)."""

    EVERY_SECONDS = 0.5

    def __init__(self, jobs: JobStore, job_id: str, message_id: str, *, clock=time.monotonic) -> None:
        self._jobs = jobs
        self._job_id = job_id
        self._message_id = message_id
        self._clock = clock
        self._looked = float("-inf")

    def __call__(self) -> StopReason | None:
        now = self._clock()
        if now - self._looked < self.EVERY_SECONDS:
            return None
        self._looked = now
        try:
            return StopReason.CANCELLED if self._jobs.cancel_requested(self._job_id, self._message_id) else None
        except redis.RedisError:
            return None


# How a run that recorded no outcome ended, by why it stopped (its message is run again, or by another run).
_UNRECORDED = {
    StopReason.HAND_BACK: "handed_back",
    StopReason.LEASE_LOST: "lease_lost",
    StopReason.DEADLINE: "lease_lost",
    StopReason.CANCELLED: "lease_lost",
}


def _failed(code: RunFailure, text: str) -> RunOutcome:
    return RunOutcome(reply="", error={"code": code.value, "message": text})


def _mention(message: Message) -> str | None:
    """The author to mention in the reply: someone who wrote on the code host, not an API caller nor an
    automation (its messages carry the automation's name as their author, which is nobody to mention)."""
    return message.author if message.source not in ("api", "automation") and message.author else None


def _prompt_text(message: Message) -> str:
    author = _mention(message)
    if author is None:
        return message.content
    return f"(A follow-up from @{author}, written on the pull request.)\n\n{message.content}"


def _history(earlier: list[Message]) -> list[tuple[str, str]]:
    """The earlier turns the model sees: prompts that ran (cancelled ones never did) and the agent's answers."""
    turns = []
    for m in earlier:
        if m.role is Role.AGENT:
            turns.append(("agent", m.content))
        elif m.status is not MessageStatus.CANCELLED:
            turns.append(("user", _prompt_text(m)))
    return turns


def _round_ids(earlier: list[Message], message: Message) -> list[str]:
    """The user messages of the rounds `_rounds` lists, in its order."""
    answered = {m.reply_to for m in earlier if m.role is Role.AGENT}
    return [m.id for m in earlier if m.role is Role.USER and m.id in answered] + [message.id]


def _rounds(
    earlier: list[Message],
    message: Message,
    summary: str,
    shown: dict[str, automation_rounds.AutomationRound] | None = None,
) -> list[tuple[str, str]]:
    """(request, summary) per answered round of the job, the current one last, for the pull request's body (a
    round that needed no change says so); an automation's round shows its own prompt (`shown`), the trigger's
    data being in the source changes."""
    shown = shown or {}
    answers = {m.reply_to: m.content for m in earlier if m.role is Role.AGENT}

    def request(m: Message) -> str:
        return shown[m.id].request if m.id in shown else m.content

    rounds = [
        (request(m), describe.round_summary(answers[m.id], no_change_needed=m.outcome is RoundOutcome.NO_CHANGE_NEEDED))
        for m in earlier
        if m.role is Role.USER and m.id in answers
    ]
    return rounds + [(request(message), summary)]
