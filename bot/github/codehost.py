"""The `github` code host: git over HTTPS with installation tokens; pull requests, comments and reactions."""

import base64
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal
from urllib.parse import quote

from gidgethub import BadRequest, GitHubException, InvalidField, ValidationError

from bot.github.apps import GitHubApp
from bot.github.auth import InstallationGone, RepositoryNotGranted
from bot.github.client import GitHubClient, GitHubUnavailable
from service.codehost.base import CodeHostError, SourceNotice, SourceUnreachable
from service.codes import RunFailure
from service.describe import merge_description
from service.errors import RunFailed
from service.lease import Fence
from service.models import Project, PullRequest
from service.projectstate import DisabledReason
from service.workspace.git import Remote

log = logging.getLogger(__name__)

HOST = "github"

# What tells people about an automation's round on GitHub (see GitHubCodeHost.announce_sources).
Announcer = Callable[["GitHubCodeHost", Project, int, SourceNotice], None]

ReactionTarget = Literal["issue_comment", "review_comment", "issue"]
_REACTION_URLS = {
    "issue_comment": "/repos/{owner}/{repo}/issues/comments/{id}/reactions",
    "review_comment": "/repos/{owner}/{repo}/pulls/comments/{id}/reactions",
    "issue": "/repos/{owner}/{repo}/issues/{id}/reactions",
}


class GitHubCodeHost:
    """Repositories of the App's installations; a project's `host_data` holds its installation id."""

    name = HOST

    def __init__(self, app: GitHubApp, *, web_url: str | None = None, announcer: Announcer | None = None) -> None:
        self._app = app
        self._web_url = (web_url or app.settings.web_url).rstrip("/")
        self._announcer = announcer

    # -- the CodeHost interface --------------------------------------------------------------

    def remote(self, project: Project) -> Remote:
        """The repository's HTTPS clone URL; the token header is built afresh for every git command."""
        owner, name = _owner_and_name(project)
        installation_id = _installation_id(project)

        def credentials() -> dict[str, str]:
            with _as_host_error("authenticate git"):
                token = self._app.tokens.token(installation_id, project.repository, _repository_id(project))
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            # Keyed by URL, so git sends the header only to this host, never to a redirect elsewhere.
            return {f"http.{self._web_url}/.extraHeader": f"Authorization: Basic {basic}"}

        return Remote(f"{self._web_url}/{owner}/{name}.git", config_source=credentials)

    def source_remote(self, project: Project, repository: str) -> Remote:
        """Another repository of the project's installation, read with a token limited to it that may only read
        its contents. SourceUnreachable when it is not "owner/name" of the installation's account, or the
        installation does not give the App access to it."""
        owner, _, name = repository.partition("/")
        project_owner, _ = _owner_and_name(project)
        if not (owner and name) or "/" in name or owner.lower() != project_owner.lower():
            raise SourceUnreachable(
                f"the source {repository!r} is not a repository of {project_owner}, the account "
                "whose installation this project belongs to (give it as owner/name)"
            )
        installation_id = _installation_id(project)

        def credentials() -> dict[str, str]:
            # A removed or suspended installation fails as the project's own requests do (_as_host_error).
            with _as_host_error(f"authenticate git for the source {repository}"):
                try:
                    token = self._app.tokens.token(installation_id, repository, read_only=True)
                except RepositoryNotGranted as exc:
                    raise SourceUnreachable(
                        f"the App's installation on {project_owner} does not give it access to "
                        f"the source {repository} (add the repository to the installation)"
                    ) from exc
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            return {f"http.{self._web_url}/.extraHeader": f"Authorization: Basic {basic}"}

        credentials()  # the access is checked now, so a source the installation cannot read fails here
        return Remote(f"{self._web_url}/{owner}/{name}.git", config_source=credentials)

    def open_or_update_pull(
        self,
        project: Project,
        *,
        job_id: str,
        branch: str,
        base: str,
        title: str,
        body: str,
        draft: bool,
        fence: Fence | None = None,
        may_open: bool = True,
    ) -> PullRequest | None:
        """Update the branch's open pull request, or open one; never two open pull requests for one branch.

        Only an open pull request is reused: one that a person closed or merged stays as they left it,
        and new commits on the branch get a new pull request. With a `fence`, the run's lease is checked right
        before the create or the update is sent (see `_lease_check`).
        """
        owner, name = _owner_and_name(project)
        guard = self._lease_check(fence)
        with _as_host_error(f"open the pull request for {branch}"):
            client = self.client(project)
            found = self._open_pull(client, owner, name, branch)
            if found is None and not may_open:
                return None  # closed or merged meanwhile: a round that pushed nothing opens nothing
            if found is None:
                try:
                    return _pull(
                        self._create_pull(
                            client,
                            owner,
                            name,
                            branch=branch,
                            base=base,
                            title=title,
                            body=body,
                            draft=draft,
                            guard=guard,
                        )
                    )
                except (InvalidField, ValidationError) as exc:
                    # Another attempt of this run opened it between our look-up and our create.
                    if "already exists" not in str(exc):
                        raise
                    found = self._open_pull(client, owner, name, branch)
                    if found is None:
                        raise
            log.info("job %s: updating pull request #%s of %s", job_id, found["number"], project.repository)
            # The list answer holds the body as it is now: a person's text around Copydesk's section stays.
            updated = client.patch(
                "/repos/{owner}/{repo}/pulls/{number}",
                {"owner": owner, "repo": name, "number": found["number"]},
                data={"title": title, "body": merge_description(found.get("body"), body)},
                guard=guard,
            )
            return _pull(updated)

    def comment(
        self, project: Project, number: int, body: str, *, fence: Fence | None = None, key: str | None = None
    ) -> str:
        """Add a comment to pull request (or issue) `number`; returns its id.

        With a `key` it is posted once: its body ends with an invisible marker naming the key, and when one of
        the App's comments on `number` already carries that marker (an interrupted attempt of the same run
        posted it) nothing is posted and that comment's id is returned. With a `fence`, the run's lease is
        checked right before the post."""
        owner, name = _owner_and_name(project)
        with _as_host_error(f"comment on #{number}"):
            client = self.client(project)
            if key is not None:
                marker = comment_marker(key)
                found = self._own_comment(
                    client,
                    "/repos/{owner}/{repo}/issues/{number}/comments{?per_page}",
                    {"owner": owner, "repo": name, "number": number},
                    marker,
                )
                if found is not None:
                    log.info(
                        "#%s of %s already has the comment %s; not posting it again", number, project.repository, key
                    )
                    return str(found["id"])
                body = f"{body}\n\n{marker}"
            posted = client.post(
                "/repos/{owner}/{repo}/issues/{number}/comments",
                {"owner": owner, "repo": name, "number": number},
                data={"body": body},
                guard=self._lease_check(fence),
            )
        return str(posted["id"])

    def edit_comment(
        self,
        project: Project,
        number: int,
        comment_id: str,
        body: str,
        *,
        fence: Fence | None = None,
        key: str | None = None,
    ) -> None:
        """Replace the body of one of the App's conversation comments (its marker kept), fenced like `comment`.

        An edit is idempotent: sent twice, the comment reads the same."""
        owner, name = _owner_and_name(project)
        if key is not None:
            body = f"{body}\n\n{comment_marker(key)}"
        with _as_host_error(f"edit comment {comment_id}"):
            self.client(project).patch(
                "/repos/{owner}/{repo}/issues/comments/{comment_id}",
                {"owner": owner, "repo": name, "comment_id": int(comment_id)},
                data={"body": body},
                guard=self._lease_check(fence),
            )

    def reply_in_thread(
        self,
        project: Project,
        number: int,
        thread_id: str,
        body: str,
        *,
        fence: Fence | None = None,
        key: str | None = None,
    ) -> None:
        """Reply in the thread of review (line) comment `thread_id`, once per `key` like `comment`."""
        owner, name = _owner_and_name(project)
        with _as_host_error(f"reply to review comment {thread_id}"):
            client = self.client(project)
            if key is not None:
                marker = comment_marker(key)
                if (
                    self._own_comment(
                        client,
                        "/repos/{owner}/{repo}/pulls/{number}/comments{?per_page}",
                        {"owner": owner, "repo": name, "number": number},
                        marker,
                    )
                    is not None
                ):
                    return
                body = f"{body}\n\n{marker}"
            client.post(
                "/repos/{owner}/{repo}/pulls/{number}/comments/{comment_id}/replies",
                {"owner": owner, "repo": name, "number": number, "comment_id": int(thread_id)},
                data={"body": body},
                guard=self._lease_check(fence),
            )

    def announce_sources(self, project: Project, number: int, notice: SourceNotice) -> None:
        """After an automation's round opened or updated pull request `number`: ask the reviewers who can review,
        and link it from each source pull request once; done by the `announcer` this host was made with
        (bot.github.sources.announce_sources, given by bot.context: that module builds on this one)."""
        if self._announcer is None:
            log.info(
                "%s#%s: no announcer is wired in; no review requested, no source linked", project.repository, number
            )
            return
        self._announcer(self, project, number, notice)

    @property
    def app(self) -> GitHubApp:
        return self._app

    # -- what the webhook handlers use -------------------------------------------------------

    def pull_request(self, project: Project, number: int) -> dict | None:
        """Pull request `number` as GitHub has it now; None when GitHub will not show it (gone, or not one)."""
        owner, name = _owner_and_name(project)
        with _as_host_error(f"read pull request #{number}"):
            try:
                return self.client(project).getitem(
                    "/repos/{owner}/{repo}/pulls/{number}", {"owner": owner, "repo": name, "number": number}
                )
            except BadRequest as exc:
                log.info("pull request #%s of %s is not readable (%s)", number, project.repository, exc.status_code)
                return None

    def review(self, project: Project, number: int, review_id: int) -> tuple[dict, list[dict]] | None:
        """A review of pull request `number` and its line comments, as GitHub has them now; None when GitHub will
        not show them."""
        owner, name = _owner_and_name(project)
        url_vars = {"owner": owner, "repo": name, "number": number, "review_id": review_id}
        with _as_host_error(f"read review {review_id} of #{number}"):
            client = self.client(project)
            try:
                review = client.getitem("/repos/{owner}/{repo}/pulls/{number}/reviews/{review_id}", url_vars)
                lines = list(
                    client.getiter(
                        "/repos/{owner}/{repo}/pulls/{number}/reviews/{review_id}/comments{?per_page}",
                        {**url_vars, "per_page": 100},
                    )
                )
            except BadRequest as exc:
                log.info(
                    "review %s on #%s of %s is not readable (%s)",
                    review_id,
                    number,
                    project.repository,
                    exc.status_code,
                )
                return None
        return review, lines

    def react(self, project: Project, *, kind: ReactionTarget, id: int, content: str = "eyes") -> None:
        """Add a reaction (👀 by default): `id` is a comment id, or for kind "issue" the pull request's number.

        Adding a reaction the App already left is a no-op on GitHub's side."""
        owner, name = _owner_and_name(project)
        with _as_host_error(f"react to {kind} {id}"):
            # Idempotent: GitHub answers 200 with the existing reaction when it is already there.
            self.client(project).post(
                _REACTION_URLS[kind],
                {"owner": owner, "repo": name, "id": id},
                data={"content": content},
                idempotent=True,
            )

    def delete_branch(self, project: Project, branch: str) -> None:
        """Delete a branch; one that is already gone is fine."""
        owner, name = _owner_and_name(project)
        with _as_host_error(f"delete branch {branch}"):
            try:
                self.client(project).delete(
                    "/repos/{owner}/{repo}/git/refs/{+ref}",
                    {"owner": owner, "repo": name, "ref": quote(f"heads/{branch}", safe="/")},
                )
            except BadRequest as exc:
                # 422 "Reference does not exist" or 404: someone (or GitHub's auto-delete) was first.
                if exc.status_code not in (404, 422):
                    raise

    def collaborator_permission(self, project: Project, username: str) -> str:
        """`username`'s permission on the repository: "admin", "write", "read" or "none"."""
        owner, name = _owner_and_name(project)
        with _as_host_error(f"check {username}'s permission"):
            try:
                answer = self.client(project).getitem(
                    "/repos/{owner}/{repo}/collaborators/{username}/permission",
                    {"owner": owner, "repo": name, "username": username},
                )
            except BadRequest as exc:
                if exc.status_code == 404:  # no such user: no access
                    return "none"
                raise
        return answer.get("permission") or "none"

    # -- helpers -----------------------------------------------------------------------------

    def client(self, project: Project) -> GitHubClient:
        """A client acting as the project's installation, its token limited to the project's repository."""
        return self._app.installation_client(_installation_id(project), project.repository, _repository_id(project))

    def _lease_check(self, fence: Fence | None) -> Callable[[], None] | None:
        """What a run's write to GitHub calls right before each attempt: LeaseLost once the lease is not the run's.

        An HTTP write to GitHub cannot be fenced atomically: GitHub knows nothing of our lease, offers no
        conditional write a fencing token could ride on (no compare-and-set of a pull request's body, no
        If-Match on these endpoints), and no transaction spans Redis and GitHub. So the lease is read live right
        before every attempt of the request (a retry's too), with no other I/O in between. What is left is a
        worker that pauses in that gap for longer than the lease lives while another run writes: its one request
        then lands stale, at most one request's time-out after the check (the client re-checks before any retry).
        That write can never be a second comment (comments are idempotent by their marker) nor a second pull
        request (one open pull request per branch); at worst a title and body, which the next round rewrites.
        """
        if fence is None:
            return None
        redis_client = self._app.redis
        return lambda: fence.ensure(redis_client)

    @staticmethod
    def _open_pull(client: GitHubClient, owner: str, name: str, branch: str) -> dict | None:
        pulls = client.getiter(
            "/repos/{owner}/{repo}/pulls{?state,head,per_page}",
            {"owner": owner, "repo": name, "state": "open", "head": f"{owner}:{branch}", "per_page": 10},
        )
        return next(iter(pulls), None)

    @staticmethod
    def _own_comment(client: GitHubClient, url: str, url_vars: dict, marker: str) -> dict | None:
        """The first of the App's comments listed at `url` that carries `marker` (a person's copy does not count)."""
        comments = client.getiter(url, {**url_vars, "per_page": 100})
        return next(
            (c for c in comments if marker in (c.get("body") or "") and (c.get("user") or {}).get("type") == "Bot"),
            None,
        )

    @staticmethod
    def _create_pull(
        client: GitHubClient,
        owner: str,
        name: str,
        *,
        branch: str,
        base: str,
        title: str,
        body: str,
        draft: bool,
        guard: Callable[[], None] | None = None,
    ) -> dict:
        url_vars = {"owner": owner, "repo": name}
        data = {"title": title, "head": branch, "base": base, "body": body, "draft": draft}
        # Idempotent: a repeat after a lost answer gets 422 "already exists", which the caller resolves.
        try:
            return client.post("/repos/{owner}/{repo}/pulls", url_vars, data=data, idempotent=True, guard=guard)
        except (InvalidField, ValidationError) as exc:
            # Draft pull requests need a plan that has them; rather a ready one than none.
            if not draft or "draft" not in str(exc).lower():
                raise
            log.warning("%s/%s does not support draft pull requests; opening a ready one", owner, name)
            return client.post(
                "/repos/{owner}/{repo}/pulls", url_vars, data={**data, "draft": False}, idempotent=True, guard=guard
            )


@contextmanager
def _as_host_error(action: str) -> Iterator[None]:
    """Turn GitHub failures into the CodeHostError the worker understands (the cause stays attached)."""
    try:
        yield
    except InstallationGone as exc:
        # Not a passing failure: the run ends with the code a disabled project's runs get.
        code = (
            DisabledReason.INSTALLATION_SUSPENDED if exc.reason == "suspended" else DisabledReason.INSTALLATION_REMOVED
        )
        raise RunFailed(
            RunFailure(code.value), f"could not {action}: {exc}; reinstall the App or re-enable the installation"
        ) from exc
    except GitHubUnavailable as exc:
        raise CodeHostError(f"could not {action}: {exc}") from exc
    except GitHubException as exc:
        status = getattr(exc, "status_code", None)
        raise CodeHostError(
            f"GitHub refused to {action}" + (f" (HTTP {int(status)})" if status else "") + f": {exc}"
        ) from exc


def comment_marker(key: str) -> str:
    """The invisible line that names a run's comment, so that posting it again is found out and skipped."""
    return f"<!-- copydesk:comment {key} -->"


def _owner_and_name(project: Project) -> tuple[str, str]:
    owner, sep, name = project.repository.partition("/")
    if not (sep and owner and name) or "/" in name:
        raise CodeHostError(f"project {project.id}: {project.repository!r} is not an owner/name repository")
    return owner, name


def _installation_id(project: Project) -> int:
    try:
        return int(project.host_data["installation_id"])
    except (KeyError, TypeError, ValueError):
        raise CodeHostError(f"project {project.id} has no GitHub installation id") from None


def _repository_id(project: Project) -> int | None:
    """The repository's GitHub id (recorded since the project was made); None for an older record without it."""
    found = project.host_data.get("repository_id")
    return int(found) if found is not None else None


def _pull(data: dict) -> PullRequest:
    return PullRequest(number=data["number"], url=data["html_url"], state=data["state"])
