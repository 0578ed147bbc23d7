"""Runs a job's next message: workspace, agent, commit, push, pull request, and the job's new state."""

import logging
from dataclasses import dataclass

from service import describe, logcontext
from service.agent.compaction import compact_history
from service.agent.briefing import brief
from service.agent.loop import RunLimits, RunMeter, run_agent
from service.agent.model import ModelFactory
from service.codehost.base import CodeHostError
from service.errors import RunFailed
from service.models import Job, JobStatus, Message, MessageStatus, Project, Role
from service.runlock import LOCK_TTL_SECONDS, JobLock, LockLost
from service.services import Services
from service.store.jobs import RunOutcome
from service.workspace.entries import BranchConflict
from service.workspace.git import GitError
from service.workspace.mirror import Mirror, MirrorStore
from service.workspace.publish import Identity, build_commit, push_commit

log = logging.getLogger(__name__)

# Why a project can be disabled, in words for the job's error (the code is the project's `disabled_reason`).
_DISABLED = {
    "installation_removed": "the code host no longer gives Copydesk access to this repository (the app was "
                            "uninstalled or the repository was removed from its installation)",
    "installation_suspended": "the app's installation on this repository is suspended; an owner can unsuspend it",
    "project_disabled": "the project was disabled by the operator; its repository is no longer reachable",
}


@dataclass
class _Published:
    title: str
    summary: str
    commit: str | None
    changed_files: list[str]
    docs_check: str | None


class JobRunner:
    """Processes one waiting message of a job per call, never two runs of one job at once."""

    def __init__(self, services: Services, mirrors: MirrorStore, models: ModelFactory, *,
                 lock_ttl: float = LOCK_TTL_SECONDS) -> None:
        self._s = services
        self._mirrors = mirrors
        self._models = models
        self._lock_ttl = lock_ttl
        settings = services.settings
        self._identity = Identity(settings.git_author_name, settings.git_author_email)

    def process(self, job_id: str) -> None:
        """Run the job's next waiting message, if no other run of the job is going."""
        with logcontext.job(job_id):
            self._process(job_id)

    def _process(self, job_id: str) -> None:
        lock = JobLock(self._s.redis, job_id, self._lock_ttl)
        if not lock.acquire():
            log.info("job %s already has a run going; it will take the next message", job_id)
            return
        try:
            with lock.heartbeat():
                started = self._s.jobs.start_next(job_id)
                if started is not None:
                    job, message = started
                    outcome = self._attempt(job, message, lock)
                    lock.ensure_held()
                    self._s.jobs.finish_message(job_id, message.id, outcome)
                    if outcome.error and job.pr_number is not None and outcome.error["code"] != "job_archived":
                        self._reply_failure(job, message, outcome.error)
        except LockLost:
            # Another worker may be running this message now; it records the outcome (and finds our push).
            log.warning("job %s: the run lock expired during the run; leaving the outcome to its new holder", job_id)
            return
        finally:
            lock.release()
        # Checked after releasing, so a message that arrived while we held the lock is not stranded.
        if self._s.jobs.has_pending(job_id):
            self._s.dispatcher.kick(job_id)

    def _attempt(self, job: Job, message: Message, lock: JobLock) -> RunOutcome:
        if message.attempts > self._s.settings.max_attempts:
            return _failed("run_interrupted", f"the run was interrupted {message.attempts - 1} times "
                           "(worker crash or time-out); send the message again to retry")
        meter = RunMeter()
        try:
            outcome = self._run(job, message, lock, meter)
        except LockLost:
            raise
        except RunFailed as failure:
            log.info("job %s message %s failed: %s", job.id, message.id, failure)
            outcome = _failed(failure.code, failure.message)
        except CodeHostError as exc:
            log.warning("job %s message %s: the code host failed: %s", job.id, message.id, exc)
            outcome = _failed("code_host_error", f"the code host refused or failed a request: {exc}")
        except Exception:
            log.exception("job %s message %s: unexpected error", job.id, message.id)
            outcome = _failed("internal_error",
                              "an unexpected error stopped the run; the operator's logs have details")
        if meter.steps:
            outcome.usage = {"inputTokens": meter.usage.input_tokens, "outputTokens": meter.usage.output_tokens}
        return outcome

    def _ensure_enabled(self, project_id: str) -> Project:
        """The project, or RunFailed with the reason it was disabled (checked at start and again before a push)."""
        project = self._s.projects.get(project_id)
        if not project.enabled:
            reason = project.disabled_reason or "project_disabled"
            raise RunFailed(reason, _DISABLED.get(reason, _DISABLED["project_disabled"]))
        return project

    def _ensure_still_wanted(self, job_id: str, project_id: str) -> None:
        """Checked before anything reaches the code host: the agent may have worked for minutes."""
        self._ensure_enabled(project_id)  # access may have been removed meanwhile
        if self._s.jobs.get(job_id).status is JobStatus.ARCHIVED:
            # Its pull request was merged or closed (or the job archived): a push now would revive the branch
            # and open a second pull request nobody follows.
            raise RunFailed("job_archived", "the job was archived during the run (its pull request was merged "
                            "or closed, or it was archived); nothing was pushed")

    def _run(self, job: Job, message: Message, lock: JobLock, meter: RunMeter) -> RunOutcome:
        project = self._ensure_enabled(job.project_id)
        host = self._s.code_hosts[project.host]
        remote = host.remote(project)
        mirror = self._mirrors.mirror(remote)
        branch = job.branch or f"copydesk/{job.id}"
        earlier = [m for m in self._s.jobs.conversation(job.id) if m.seq < message.seq]
        try:
            with mirror.run_refs(remote, {"base": f"refs/heads/{job.ref}",
                                          "branch": f"refs/heads/{branch}"}) as heads:
                start = heads["branch"] or heads["base"]
                if start is None:
                    raise RunFailed("ref_not_found", f"the repository has no branch {job.ref!r}")
                published = (self._earlier_push(mirror, heads["branch"], heads["base"], message)
                             or self._edit_and_push(mirror, remote, project, job, message, start, branch,
                                                    earlier, lock, meter, heads["base"]))
                files = self._branch_files(mirror, heads["base"], published.commit or start)
        except GitError as exc:
            raise RunFailed("repository_unreachable", f"git could not reach the repository: {exc.stderr.strip()[:300]}")
        except BranchConflict as exc:
            raise RunFailed("branch_conflict", str(exc))
        return self._publish_pull(host, project, job, message, branch, published, files, earlier)

    def _edit_and_push(self, mirror: Mirror, remote, project: Project, job: Job, message: Message,
                       start: str, branch: str, earlier: list[Message], lock: JobLock, meter: RunMeter,
                       base: str | None) -> _Published:
        settings = self._s.settings
        request = earlier[0].content if earlier else message.content  # the prompt the job was created with
        model = self._models.client(job.model, run_index=message.seq)
        with mirror.open(start) as workspace:
            task = brief(workspace, _prompt_text(message),
                         history=compact_history(_history(earlier), max_chars=settings.agent_history_chars),
                         docs_root=project.docs_root, base_ref=job.ref,
                         branch_diff=self._branch_diff(mirror, base, start) if earlier else None)
            limits = RunLimits.with_timeout(settings.max_steps, settings.max_bytes_written,
                                            settings.run_timeout_seconds, max_tokens=settings.max_tokens,
                                            context_chars=settings.agent_context_chars)
            result = run_agent(workspace, model, task, limits, meter)
            changes = workspace.changes()
        title = result.title or describe.fallback_title(request)
        docs_check = result.docs_report.to_text() if result.docs_report else None
        if not changes:
            return _Published(title, result.summary, None, [], docs_check)
        text = describe.commit_message(title, result.summary, job_id=job.id, message_id=message.id)
        commit = build_commit(mirror, start, changes, text, author=self._identity, committer=self._identity)
        if commit is None:
            return _Published(title, result.summary, None, [], docs_check)
        lock.ensure_held()  # never push on behalf of a run that another worker may have taken over
        self._ensure_still_wanted(job.id, project.id)
        pushed = push_commit(mirror, remote, commit=commit, branch=branch, start_commit=start, changes=changes,
                             message=text, author=self._identity, committer=self._identity)
        return _Published(title, result.summary, pushed.commit, sorted(changes), docs_check)

    def _earlier_push(self, mirror: Mirror, branch_head: str | None, base_head: str | None,
                      message: Message) -> _Published | None:
        """The commit an interrupted attempt of this message already pushed, found by its trailer."""
        if branch_head is None:
            return None
        git = self._mirrors.git
        # Only the branch's own commits are searched, so the cost does not grow with the base's history.
        only_branch = [f"^{base_head}"] if base_head else []
        found = git.out("rev-list", "-n", "1", "--fixed-strings",
                        f"--grep={describe.TRAILER_MESSAGE}: {message.id}", branch_head, *only_branch,
                        git_dir=mirror.path)
        if not found:
            return None
        title, summary = describe.parse_commit_message(git.out("log", "-1", "--format=%B", found,
                                                               git_dir=mirror.path))
        files = git.out("diff-tree", "--no-commit-id", "--name-only", "-r", found, git_dir=mirror.path).splitlines()
        return _Published(title, summary, found, files, None)

    def _branch_diff(self, mirror: Mirror, base: str | None, head: str) -> str | None:
        """What the job's branch changes against its base so far: the diff a follow-up run starts from."""
        if base is None or base == head:
            return None
        git = self._mirrors.git
        merge_base = git.out("merge-base", base, head, git_dir=mirror.path)
        return git.out("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames",
                       merge_base, head, git_dir=mirror.path) or None

    def _branch_files(self, mirror: Mirror, base: str | None, head: str) -> list[tuple[str, str]]:
        if base is None or base == head:
            return []
        git = self._mirrors.git
        merge_base = git.out("merge-base", base, head, git_dir=mirror.path)
        out = git.out("diff", "--name-status", "--no-renames", merge_base, head, git_dir=mirror.path)
        names = {"A": "added", "M": "modified", "D": "deleted", "T": "type changed"}
        return [(names.get(line[0], line[0]), line.split("\t", 1)[1]) for line in out.splitlines() if "\t" in line]

    def _publish_pull(self, host, project: Project, job: Job, message: Message, branch: str,
                      published: _Published, files: list[tuple[str, str]], earlier: list[Message]) -> RunOutcome:
        outcome = RunOutcome(reply=published.summary, commit=published.commit,
                             changed_files=published.changed_files)
        if published.commit is None and job.pr_number is None:
            return outcome  # nothing changed and no pull request yet: nothing to show on the host
        outcome.branch = branch
        if published.commit is not None:
            self._ensure_still_wanted(job.id, project.id)
            body = describe.pull_body(rounds=_rounds(earlier, message, published.summary), files=files,
                                      docs_check=published.docs_check, job_id=job.id)
            pull = host.open_or_update_pull(project, job_id=job.id, branch=branch, base=job.ref,
                                            title=published.title, body=body, draft=job.as_draft)
            outcome.pr_link, outcome.pr_number = pull.url, pull.number
        if message.seq > 0:
            self._comment(host, project, outcome.pr_number or job.pr_number,
                          describe.round_comment(round_number=message.seq, summary=published.summary,
                                                 changed_files=published.changed_files, commit=published.commit,
                                                 mention=_mention(message)))
        return outcome

    def _reply_failure(self, job: Job, message: Message, error: dict) -> None:
        """Tell the pull request's readers that a run failed and why (its PR exists from an earlier run)."""
        try:
            project = self._s.projects.get(job.project_id)
            host = self._s.code_hosts[project.host]
        except Exception:
            log.warning("job %s: could not reach the code host to report the failure", job.id, exc_info=True)
            return
        self._comment(host, project, job.pr_number,
                      describe.failure_comment(round_number=message.seq, error=error, mention=_mention(message)))

    @staticmethod
    def _comment(host, project: Project, number: int, body: str) -> None:
        # The run's work is pushed and recorded by now; a comment the host refuses must not undo that.
        try:
            host.comment(project, number, body)
        except Exception:
            log.warning("could not comment on pull request #%s of %s", number, project.id, exc_info=True)


def _failed(code: str, text: str) -> RunOutcome:
    return RunOutcome(reply="", error={"code": code, "message": text})


def _mention(message: Message) -> str | None:
    """The author to mention in the reply: someone who wrote on the code host, not an API caller."""
    return message.author if message.source != "api" and message.author else None


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


def _rounds(earlier: list[Message], message: Message, summary: str) -> list[tuple[str, str]]:
    """(request, summary) per answered round of the job, the current one last, for the pull request's body."""
    answers = {m.reply_to: m.content for m in earlier if m.role is Role.AGENT}
    rounds = [(m.content, answers[m.id]) for m in earlier if m.role is Role.USER and m.id in answers]
    return rounds + [(message.content, summary)]
