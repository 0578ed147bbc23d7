"""Source repositories on GitHub: a pull request merged in a repository of an installation becomes the
SourceChange an automation's run covers; the docs pull request asks the source pull requests' authors for review,
and may link itself in a comment on each source pull request."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from gidgethub import BadRequest
from gidgethub.sansio import Event

from bot.github.apps import GitHubApp
from bot.github.auth import InstallationGone
from bot.github.bot import GitHubBot
from bot.github.client import GitHubClient
from bot.github.codehost import (
    HOST,
    GitHubCodeHost,
    _as_host_error,
    _installation_id,
    _owner_and_name,
    comment_marker,
)
from bot.github.diffs import DIFF_MEDIA_TYPE, diff_text
from bot.github.pulls import BRANCH_PREFIX
from bot.github.routing import Router
from service.automations import codechange, runs
from service.automations.events import SourceChange, TriggerEvent
from service.codehost.base import CodeHostError, SourceNotice, SourceUnreachable
from service.codes import RunFailure
from service.errors import RunFailed
from service.models import Project

log = logging.getLogger(__name__)
router = Router()

# What a run's prompt gets of one source pull request's diff at most; the agent reads the rest in the source.
MAX_DIFF_BYTES = 64 * 1024
CODE_CHANGE = "code_change"


def source_change_of(
    app: GitHubApp, installation_id: int, payload: dict, *, max_diff_bytes: int = MAX_DIFF_BYTES
) -> SourceChange:
    """The SourceChange of a merged pull request from its `pull_request.closed` payload, with its diff as GitHub
    shows it, at most `max_diff_bytes` (whole lines). SourceUnreachable when the installation cannot read it."""
    pull, repository = payload["pull_request"], payload["repository"]
    if not pull.get("merged"):
        raise ValueError(f"pull request #{pull['number']} of {repository['full_name']} was not merged")
    full_name = repository["full_name"]
    owner, _, name = full_name.partition("/")
    with _source_errors(full_name, f"read the diff of #{pull['number']}"):
        client = app.installation_client(installation_id, full_name, repository.get("id"))
        try:
            raw, truncated = client.getbytes(
                "/repos/{owner}/{repo}/pulls/{number}",
                {"owner": owner, "repo": name, "number": pull["number"]},
                accept=DIFF_MEDIA_TYPE,
                limit=max_diff_bytes,
            )
        except BadRequest as exc:
            if exc.status_code != 406:
                raise
            # Longer than GitHub shows as one diff: the run reads the change in the source repository instead.
            log.info(
                "#%s of %s: GitHub shows no diff this long (%s); the change goes without one",
                pull["number"],
                full_name,
                exc,
            )
            raw, truncated = b"", True
    return _change_of(payload, diff=diff_text(raw, truncated), truncated=truncated)


def _change_of(payload: dict, *, diff: str, truncated: bool) -> SourceChange:
    """The SourceChange a `pull_request.closed` payload describes, with the diff given."""
    pull = payload["pull_request"]
    return SourceChange(
        kind="pull_request",
        id=str(pull["number"]),
        title=pull.get("title") or "",
        body=pull.get("body") or "",
        author=(pull.get("user") or {}).get("login") or "",
        url=pull.get("html_url"),
        merge_commit=pull.get("merge_commit_sha") or "",
        diff=diff,
        diff_truncated=truncated,
        repository=payload["repository"]["full_name"],
    )


def request_reviews(host: GitHubCodeHost, project: Project, pull_number: int, logins: Iterable[str]) -> list[str]:
    """Ask `logins` to review the project's pull request `pull_number`; returns who was asked. Its author (the App)
    and people who are not collaborators of the repository are skipped, and a refusal (422) is logged, not raised."""
    owner, name = _owner_and_name(project)
    where = {"owner": owner, "repo": name, "number": pull_number}
    with _as_host_error(f"request reviews on #{pull_number}"):
        client = host.client(project)
        author = (
            (client.getitem("/repos/{owner}/{repo}/pulls/{number}", where).get("user") or {}).get("login") or ""
        ).lower()
        candidates = [login for login in _distinct(logins) if login.lower() != author]
        reviewers = [login for login in candidates if _is_collaborator(client, owner, name, login)]
        skipped = [login for login in candidates if login not in reviewers]
        if skipped:
            log.info(
                "%s#%s: no review requested from %s (not collaborators)",
                project.repository,
                pull_number,
                ", ".join(skipped),
            )
        if not reviewers:
            return []
        if _request(client, where, reviewers):
            return reviewers
        # GitHub refuses the whole request for one login it will not take: ask each one alone.
        return [login for login in reviewers if _request(client, where, [login])]


def comment_on_source(
    app: GitHubApp, installation_id: int, repository: str, pull_number: int, body: str, *, key: str | None = None
) -> str:
    """Comment on pull request `pull_number` of `repository` (another repository of the installation); returns the
    comment's id. With a `key` it is posted once, like GitHubCodeHost.comment. SourceUnreachable when the
    installation cannot read the repository."""
    owner, _, name = repository.partition("/")
    where = {"owner": owner, "repo": name, "number": pull_number}
    with _source_errors(repository, f"comment on #{pull_number}"):
        client = app.installation_client(installation_id, repository)
        if key is not None:
            marker = comment_marker(key)
            comments = client.getiter(
                "/repos/{owner}/{repo}/issues/{number}/comments{?per_page}", {**where, "per_page": 100}
            )
            found = next(
                (c for c in comments if marker in (c.get("body") or "") and (c.get("user") or {}).get("type") == "Bot"),
                None,
            )
            if found is not None:
                return str(found["id"])
            body = f"{body}\n\n{marker}"
        posted = client.post("/repos/{owner}/{repo}/issues/{number}/comments", where, data={"body": body})
    return str(posted["id"])


def announce_sources(host: GitHubCodeHost, project: Project, number: int, notice: SourceNotice) -> None:
    """After an automation's round opened or updated the project's pull request `number`: ask the reviewers who
    can review, and link it from each source pull request once. Each failure is logged, never raised: the round's
    work is pushed, and one refused request must not keep the others from being made."""
    if notice.reviewers:
        try:
            asked = request_reviews(host, project, number, notice.reviewers)
            log.info("%s#%s: review requested from %s", project.repository, number, ", ".join(asked) or "nobody")
        except (CodeHostError, RunFailed) as exc:
            log.warning("%s#%s: could not request reviews: %s", project.repository, number, exc)
    installation_id = _installation_id(project)
    for source in notice.comment_on:
        try:
            comment_on_source(
                host.app, installation_id, source.repository, source.number, notice.comment, key=notice.key
            )
        except (CodeHostError, RunFailed) as exc:
            log.warning(
                "%s#%s: could not link %s#%s from it: %s",
                source.repository,
                source.number,
                project.repository,
                number,
                exc,
            )


@router.register("pull_request", action="closed")
def source_pull_merged(bot: GitHubBot, event: Event) -> None:
    """A pull request was merged in a repository of an installation: unless it is one of Copydesk's own, it is a
    code change that the automations watching that repository run on. Its diff is read only when some automation
    watches the repository; one the installation cannot read is a failed run of each of them."""
    pull, repository = event.data["pull_request"], event.data["repository"]
    if not pull.get("merged") or _is_copydesk_pull(repository, pull):
        return
    installation_id = int(event.data["installation"]["id"])
    full_name = repository["full_name"]
    watchers = codechange.watchers(bot.services, HOST, full_name)
    if not watchers:
        log.info(
            "delivery %s: %s#%s merged; no automation watches %s",
            event.delivery_id,
            full_name,
            pull["number"],
            full_name,
        )
        return
    try:
        change = source_change_of(bot.app, installation_id, event.data)
    except SourceUnreachable as exc:
        # Taken out of the installation since GitHub sent the delivery: nothing can be read of it now.
        log.warning("merged pull request #%s of %s is not readable: %s", pull["number"], full_name, exc)
        unread = code_change_event(full_name, _change_of(event.data, diff="", truncated=True))
        for automation in watchers:
            runs.fail(bot.services, automation, unread, code=RunFailure.SOURCE_UNREACHABLE.value, message=str(exc))
        return
    (bot.on_source_change or fire_automations)(
        bot, installation_id, code_change_event(full_name, change), event.delivery_id
    )


def code_change_event(repository_full_name: str, change: SourceChange) -> TriggerEvent:
    """A merged source pull request as one code-change event keyed by the pull request (a redelivery under a new
    delivery id is the same event)."""
    return TriggerEvent(
        kind=CODE_CHANGE,
        key=f"gh:{repository_full_name.lower()}#pr{change.id}",
        changes=(change,),
        source_repository=repository_full_name,
        source_commit=change.merge_commit or None,
    )


def fire_automations(bot: GitHubBot, installation_id: int, event: TriggerEvent, delivery_id: str) -> None:
    """What a merged source pull request starts unless GitHubBot.on_source_change says otherwise: the automations
    watching the repository run on it (service.automations.codechange)."""
    assert event.source_repository is not None  # a code-change event names its repository
    started = codechange.on_source_change(bot.services, HOST, event.source_repository, event)
    for run in started:
        log.info(
            "delivery %s: %s -> automation %s run %s (%s)",
            delivery_id,
            event.key,
            run.automation_id,
            run.id,
            f"skipped: {run.skipped_reason}" if run.skipped_reason else f"job {run.job_id}",
        )


# -- helpers ---------------------------------------------------------------------------------------


def _is_copydesk_pull(repository: dict, pull: dict) -> bool:
    """Copydesk's own pull request (a job's branch of the repository itself): its merge is not a code change."""
    head = pull.get("head") or {}
    return (head.get("ref") or "").startswith(BRANCH_PREFIX) and (head.get("repo") or {}).get("id") == repository["id"]


def _is_collaborator(client: GitHubClient, owner: str, name: str, login: str) -> bool:
    try:
        client.getitem(
            "/repos/{owner}/{repo}/collaborators/{username}", {"owner": owner, "repo": name, "username": login}
        )
    except BadRequest as exc:
        if exc.status_code == 404:
            return False
        raise
    return True


def _request(client: GitHubClient, where: dict, logins: list[str]) -> bool:
    """Request reviews from `logins`; False (logged) when GitHub refuses them (422)."""
    try:
        # Idempotent: asking someone again who is already asked changes nothing.
        client.post(
            "/repos/{owner}/{repo}/pulls/{number}/requested_reviewers",
            where,
            data={"reviewers": logins},
            idempotent=True,
        )
    except BadRequest as exc:
        if exc.status_code != 422:
            raise
        log.warning(
            "%s/%s#%s: GitHub refused a review request from %s: %s",
            where["owner"],
            where["repo"],
            where["number"],
            ", ".join(logins),
            exc,
        )
        return False
    return True


def _distinct(logins: Iterable[str]) -> list[str]:
    """The logins in order, each once (GitHub logins are case-insensitive), empty ones left out."""
    seen: set[str] = set()
    found = []
    for login in logins:
        if login and login.lower() not in seen:
            seen.add(login.lower())
            found.append(login)
    return found


@contextmanager
def _source_errors(repository: str, action: str) -> Iterator[None]:
    """SourceUnreachable when the installation cannot read `repository` (not given to it, deleted, or the
    installation itself gone); other failures as GitHubCodeHost's (CodeHostError)."""
    with _as_host_error(action):
        try:
            yield
        except InstallationGone as exc:
            raise SourceUnreachable(f"could not {action} of {repository}: {exc}") from exc
        except BadRequest as exc:
            if exc.status_code != 404:
                raise
            raise SourceUnreachable(
                f"could not {action} of {repository}: the App's installation cannot read it "
                "(add the repository to the installation)"
            ) from exc
