"""The GitHub emulator a test drives: set up repositories and installations, act as people on GitHub, and
watch what Copydesk asked of GitHub and which webhooks went out.

    with GitHubEmulator(tmp_path, TestApp.generate()) as github:
        github.add_repo("acme/docs", files={"README.md": "# Docs\\n"})
        installation_id = github.add_installation("acme", ["acme/docs"])
        github.deliver_to(webhook_url)
        github.comment("acme/docs", 1, "alice", "@copydesk-test please fix the typo")
"""

from pathlib import Path

from tests.conftest import commit_files
from tests.github_emulator import payloads, routes_checks
from tests.github_emulator.app import TestApp
from tests.github_emulator.faults import Fault, Faults
from tests.github_emulator.hooks import Delivery, WebhookSender
from tests.github_emulator.render import Renderer
from tests.github_emulator.state import (
    ROLE_PERMISSION,
    CheckRun,
    CheckSuite,
    Comment,
    CommitStatus,
    Installation,
    Pull,
    Repo,
    Review,
    State,
    now,
)
from tests.github_emulator.web import LoggedRequest, create_app
from tests.harness import LiveServer

DEFAULT_STATUS = {"secondary": 403, "primary": 403, "server": 500}


class MergeConflict(Exception):
    """The pull request's head does not merge cleanly into its base."""


class GitHubEmulator:
    """A real HTTP server that speaks GitHub's REST API and git's smart HTTP for one test App."""

    def __init__(self, root: Path, app: TestApp, *, token_ttl: float = 3600) -> None:
        self.app = app
        self.token_ttl = token_ttl  # seconds an installation token lives; tests shorten it to see expiry
        self.git_root = root / "repositories"
        self.git_root.mkdir(parents=True, exist_ok=True)
        self.state = State()
        self.faults = Faults()
        self.requests: list[LoggedRequest] = []
        self.hooks = WebhookSender(app.id, hook_id=self.state.new_id())
        self._server = LiveServer()  # bound first: the rendered payloads carry its URL
        self.url = self._server.url
        self.render = Renderer(self.state, app, self.url)
        self.state.user(app.owner)
        self.state.user(app.bot_login, "Bot")
        self.oauth_callback: str | None = None  # the App's registered callback URL; None accepts any
        # The longest pull request diff GitHub shows (larger ones answer 406); tests lower them.
        self.max_diff_lines = 20000
        self.max_diff_files = 300
        self._server.mount(create_app(self))

    def __enter__(self) -> "GitHubEmulator":
        self._server.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.hooks.stop()
        self._server.__exit__(*exc)

    @property
    def deliveries(self) -> list[Delivery]:
        return self.hooks.deliveries

    # -- setting the scene -------------------------------------------------------------------

    def add_user(self, login: str, type: str = "User") -> dict:
        return self.render.user(self.state.user(login, type).login)

    def add_repo(
        self,
        full_name: str,
        files: dict[str, str | bytes] | None = None,
        *,
        default_branch: str = "main",
        delete_branch_on_merge: bool = False,
        private: bool = True,
        owner_type: str = "Organization",
    ) -> Repo:
        """A repository backed by a real bare git repository whose default branch holds `files`."""
        owner, name = full_name.split("/")
        self.state.user(owner, owner_type)
        path = self.git_root / owner / f"{name}.git"
        self.state.git.run("init", "--bare", "-q", str(path))
        self.state.git.run("symbolic-ref", "HEAD", f"refs/heads/{default_branch}", git_dir=path)
        commit_files(
            self.state.git, path, files or {"README.md": f"# {name}\n"}, branch=default_branch, message="Initial commit"
        )
        repo = Repo(self.state.new_id(), owner, name, path, default_branch, private, delete_branch_on_merge, now())
        with self.state.lock:
            self.state.repos[full_name.lower()] = repo
        return repo

    def push(
        self,
        full_name: str,
        files: dict[str, str | bytes | None],
        *,
        branch: str | None = None,
        message: str = "Update",
    ) -> str:
        """Commit `files` onto `branch` (created from the default branch if new), as a person pushing would."""
        repo = self._repo(full_name)
        branch = branch or repo.default_branch
        parent = self.state.branch_sha(repo, branch) or self.state.branch_sha(repo, repo.default_branch)
        return commit_files(self.state.git, repo.path, files, branch=branch, message=message, parent=parent)

    def add_installation(
        self, account: str, repos: list[str] = (), *, selection: str = "selected", permissions: dict | None = None
    ) -> int:
        """Install the App on `account` for `repos` (no webhook); returns the installation id."""
        foreign = [name for name in repos if self._repo(name).owner.lower() != account.lower()]
        if foreign:
            raise ValueError(f"an installation on {account} cannot hold {', '.join(foreign)}")
        inst = Installation(
            self.state.new_id(),
            account,
            [self._repo(r).id for r in repos],
            selection,
            dict(permissions or self.app.permissions),
            list(self.app.events),
            now(),
        )
        self.state.user(account, "Organization")
        with self.state.lock:
            self.state.installations[inst.id] = inst
        return inst.id

    def set_permission(self, full_name: str, login: str, role: str) -> None:
        """Give `login` a role on the repository: admin, maintain, write, triage, read or none."""
        if role not in ROLE_PERMISSION:
            raise ValueError(f"unknown role {role!r}")
        self.state.user(login)
        self._repo(full_name).roles[login.lower()] = role

    def add_member(self, org: str, login: str, role: str = "member") -> None:
        """Make `login` an active member of the organization `org`, as "admin" (an owner) or "member"."""
        if role not in ("admin", "member"):
            raise ValueError(f"unknown org role {role!r}")
        self.state.user(org, "Organization")
        self.state.user(login)
        self.state.memberships[(org.lower(), login.lower())] = role

    def sign_in_browser(self, login: str | None) -> None:
        """Who is signed in to GitHub in the browser that goes through the OAuth web flow (None: nobody)."""
        self.state.browser_user = login if login is None else self.state.user(login).login

    def revoke_authorization(self, login: str) -> None:
        """The user revokes the App's authorization: every user-to-server token of theirs stops working."""
        with self.state.lock:
            for value in [v for v, t in self.state.user_tokens.items() if t.login.lower() == login.lower()]:
                del self.state.user_tokens[value]

    def add_manifest_code(self, code: str | None = None) -> str:
        """A one-time code that `POST /app-manifests/{code}/conversions` exchanges for this App's credentials."""
        code = code or f"manifest-{self.state.new_id()}"
        self.state.manifest_codes.add(code)
        return code

    def inject(
        self,
        kind: str,
        count: int = 1,
        *,
        status: int | None = None,
        match: str = "",
        retry_after: int | None = None,
        reset_in: int = 60,
    ) -> None:
        """Make the next `count` API requests whose "METHOD /path" matches the regex `match` fail with a
        "secondary" or "primary" rate limit or a "server" error (git traffic is never affected)."""
        self.faults.arm(Fault(kind, count, status or DEFAULT_STATUS[kind], match, retry_after, reset_in))

    def deliver_to(self, url: str | None, secret: str | None = None) -> None:
        """Send webhook deliveries to `url`, signed with `secret` (default: the App's webhook secret)."""
        self.hooks.configure(url, secret or self.app.webhook_secret)

    def redeliver(self, delivery_id: str) -> Delivery:
        return self.hooks.redeliver(delivery_id)

    def flush_deliveries(self, timeout: float = 10) -> None:
        """Wait for the deliveries that API calls queued (e.g. for the App's own comments)."""
        self.hooks.flush(timeout)

    # -- people acting on GitHub (each returns the webhook payload it caused) ----------------

    def open_pull(
        self,
        full_name: str,
        head: str,
        *,
        user: str = "alice",
        title: str = "Change",
        body: str | None = None,
        base: str | None = None,
        draft: bool = False,
    ) -> int:
        """A pull request a person opened (the head branch must exist; see `push`); returns its number."""
        repo = self._repo(full_name)
        base = base or repo.default_branch
        pull = Pull(
            self.state.new_id(),
            self.state.next_number(repo),
            repo.id,
            title,
            body,
            head,
            base,
            user,
            draft,
            now(),
            self.state.branch_sha(repo, head),
            self.state.branch_sha(repo, base),
        )
        self.state.user(user)
        with self.state.lock:
            self.state.pulls[(repo.id, pull.number)] = pull
        return pull.number

    def comment(self, full_name: str, number: int, user: str, body: str) -> dict:
        repo, pull = self._pull(full_name, number)
        comment = self.add_comment(repo, pull, user, body, kind="issue")
        return self.emit("issue_comment", payloads.issue_comment(self.render, repo, pull, comment))

    def review_comment(self, full_name: str, number: int, user: str, body: str, path: str, line: int) -> dict:
        repo, pull = self._pull(full_name, number)
        comment = self.add_comment(repo, pull, user, body, kind="review", path=path, line=line)
        return self.emit("pull_request_review_comment", payloads.review_comment(self.render, repo, pull, comment))

    def submit_review(
        self,
        full_name: str,
        number: int,
        user: str,
        body: str | None,
        comments: list[tuple[str, int, str]],
        state: str = "commented",
    ) -> dict:
        """A review with line comments, each (path, line, body): GitHub sends a `pull_request_review_comment`
        for each comment, then the `pull_request_review`; returns the latter's payload."""
        repo, pull = self._pull(full_name, number)
        self.state.user(user)
        review = Review(self.state.new_id(), repo.id, number, user, body, state, pull.head_sha, now())
        with self.state.lock:
            self.state.reviews[review.id] = review
        for path, line, text in comments:
            comment = self.add_comment(repo, pull, user, text, kind="review", path=path, line=line, review_id=review.id)
            self.emit("pull_request_review_comment", payloads.review_comment(self.render, repo, pull, comment))
        return self.emit("pull_request_review", payloads.review(self.render, repo, pull, review))

    def review(self, full_name: str, number: int, user: str, body: str | None, state: str = "commented") -> dict:
        repo, pull = self._pull(full_name, number)
        self.state.user(user)
        review = Review(self.state.new_id(), repo.id, number, user, body, state, pull.head_sha, now())
        with self.state.lock:
            self.state.reviews[review.id] = review
        return self.emit("pull_request_review", payloads.review(self.render, repo, pull, review))

    def edit_pull_body(self, full_name: str, number: int, body: str, user: str = "alice") -> dict:
        """A person edits the pull request's description (`pull_request.edited`)."""
        repo, pull = self._pull(full_name, number)
        self.state.user(user)
        with self.state.lock:
            old, pull.body, pull.updated_at = pull.body, body, now()
        payload = payloads.pull_request(self.render, repo, pull, "edited", user)
        return self.emit("pull_request", {**payload, "changes": {"body": {"from": old or ""}}})

    def check_run(
        self,
        full_name: str,
        sha: str,
        name: str,
        conclusion: str,
        *,
        title: str | None = None,
        summary: str | None = None,
        text: str | None = None,
        annotations: list[tuple[str, int, str]] = (),
        app: str = "github-actions[bot]",
    ) -> dict:
        """A CI app completes a check run on commit `sha`: `check_run.completed`, then `check_suite.completed`
        (one suite per commit); returns the check run's payload."""
        repo = self._repo(full_name)
        self.state.user(app, "Bot")
        with self.state.lock:
            suite = next(
                (s for s in self.state.check_suites.values() if s.repo_id == repo.id and s.head_sha == sha), None
            )
            if suite is None:
                branches = self.state.branches_at(repo, sha)
                suite = CheckSuite(self.state.new_id(), repo.id, sha, branches[0] if branches else None, now())
                self.state.check_suites[suite.id] = suite
            run = CheckRun(
                self.state.new_id(),
                repo.id,
                suite.id,
                sha,
                name,
                conclusion,
                title,
                summary,
                text,
                list(annotations),
                now(),
            )
            self.state.check_runs[run.id] = run
        events = routes_checks.check_events(self.render, run, app)
        for event, payload in events:
            self.emit(event, payload)
        return events[0][1]

    def set_status(
        self,
        full_name: str,
        sha: str,
        state: str,
        context: str,
        *,
        description: str | None = None,
        target_url: str | None = None,
        app: str = "ci-bot",
    ) -> dict:
        """A commit status (`error`, `failure`, `pending` or `success`) set on `sha`: the `status` event."""
        repo = self._repo(full_name)
        self.state.user(app)
        status = CommitStatus(self.state.new_id(), repo.id, sha, state, context, description, target_url, now())
        with self.state.lock:
            self.state.statuses.append(status)
        return self.emit("status", routes_checks.status_event(self.render, status, app))

    def rename_repo(self, full_name: str, new_name: str, *, sender: str = "admin") -> dict:
        """An admin renames the repository (`repository.renamed`); the old name stops answering, as it would once
        GitHub's redirect is taken by a new repository of that name."""
        repo = self._repo(full_name)
        with self.state.lock:
            old = repo.name
            del self.state.repos[full_name.lower()]
            repo.name = new_name
            self.state.repos[repo.full_name.lower()] = repo
        return self.emit(
            "repository",
            payloads.repository_event(
                self.render, repo, "renamed", sender, changes={"repository": {"name": {"from": old}}}
            ),
        )

    def transfer_repo(self, full_name: str, new_owner: str, *, sender: str = "admin") -> dict:
        """The repository moves to `new_owner` (`repository.transferred`); it leaves its installation, and joins
        the App's installation on `new_owner` when there is one (as one of "all repositories" would)."""
        repo = self._repo(full_name)
        self.state.user(new_owner, "Organization")
        with self.state.lock:
            old_owner = repo.owner
            for inst in self.state.installations.values():
                if repo.id in inst.repo_ids:
                    inst.repo_ids.remove(repo.id)
                elif inst.account.lower() == new_owner.lower():
                    inst.repo_ids.append(repo.id)
            del self.state.repos[full_name.lower()]
            repo.owner = new_owner
            self.state.repos[repo.full_name.lower()] = repo
        kind = "organization" if self.state.user(old_owner).type == "Organization" else "user"
        was = self.render.organization(old_owner) if kind == "organization" else self.render.user(old_owner)
        return self.emit(
            "repository",
            payloads.repository_event(
                self.render, repo, "transferred", sender, changes={"owner": {"from": {kind: was}}}
            ),
        )

    def merge(self, full_name: str, number: int, user: str = "maintainer") -> dict:
        """Merge with a real merge commit on the base branch; the pull request ends closed and merged."""
        repo, pull = self._pull(full_name, number)
        if pull.state != "open":
            raise ValueError(f"#{number} is {pull.state}")
        git, path = self.state.git, repo.path
        with self.state.lock:
            head, base = self.state.branch_sha(repo, pull.head), self.state.branch_sha(repo, pull.base)
            merged = git.run("merge-tree", "--write-tree", base, head, git_dir=path, check=False)
            if merged.returncode != 0:
                raise MergeConflict(f"#{number} does not merge into {pull.base}")
            tree = merged.stdout.decode().split()[0]
            env = {
                "GIT_AUTHOR_NAME": user,
                "GIT_AUTHOR_EMAIL": f"{user}@users.noreply.github.com",
                "GIT_COMMITTER_NAME": "GitHub",
                "GIT_COMMITTER_EMAIL": "noreply@github.com",
            }
            message = f"Merge pull request #{number} from {repo.owner}/{pull.head}\n\n{pull.title}"
            commit = git.out("commit-tree", tree, "-p", base, "-p", head, "-m", message, git_dir=path, env=env)
            git.run("update-ref", f"refs/heads/{pull.base}", commit, base, git_dir=path)
            stamp = now()
            pull.state, pull.merged_at, pull.closed_at, pull.updated_at = "closed", stamp, stamp, stamp
            pull.merged_by, pull.merge_commit_sha, pull.head_sha, pull.base_sha = user, commit, head, base
            self.state.user(user)
            if repo.delete_branch_on_merge:
                git.run("update-ref", "-d", f"refs/heads/{pull.head}", git_dir=path)
        return self.emit("pull_request", payloads.pull_request(self.render, repo, pull, "closed", user))

    def close(self, full_name: str, number: int, user: str = "maintainer") -> dict:
        repo, pull = self._pull(full_name, number)
        self._close(pull)
        self.state.user(user)
        return self.emit("pull_request", payloads.pull_request(self.render, repo, pull, "closed", user))

    def install(
        self, account: str, repos: list[str] = (), *, sender: str = "admin", selection: str = "selected"
    ) -> dict:
        """Install the App (`installation.created`); the payload's installation id is the new one."""
        installation_id = self.add_installation(account, repos, selection=selection)
        return self._installation_event(installation_id, "created", sender)

    def uninstall(self, installation_id: int, *, sender: str = "admin") -> dict:
        payload = payloads.installation(self.render, self.state.installations[installation_id], "deleted", sender)
        with self.state.lock:
            del self.state.installations[installation_id]
        self.state.revoke_tokens(installation_id)
        return self.emit("installation", payload)

    def suspend(self, installation_id: int, *, sender: str = "admin") -> dict:
        inst = self.state.installations[installation_id]
        inst.suspended_at, inst.suspended_by = now(), self.state.user(sender).login
        self.state.revoke_tokens(installation_id)
        return self._installation_event(installation_id, "suspend", sender)

    def unsuspend(self, installation_id: int, *, sender: str = "admin") -> dict:
        inst = self.state.installations[installation_id]
        inst.suspended_at = inst.suspended_by = None
        return self._installation_event(installation_id, "unsuspend", sender)

    def add_repos_to_installation(self, installation_id: int, repos: list[str], *, sender: str = "admin") -> dict:
        return self._change_repos(installation_id, repos, "added", sender)

    def remove_repos_from_installation(self, installation_id: int, repos: list[str], *, sender: str = "admin") -> dict:
        return self._change_repos(installation_id, repos, "removed", sender)

    def ping(self) -> dict:
        return self.emit("ping", payloads.ping(self.render, self.hooks.hook_id, self.hooks.url or ""))

    # -- reading the state -------------------------------------------------------------------

    def pull(self, full_name: str, number: int) -> dict:
        return self.render.pull(self._pull(full_name, number)[1])

    def pulls(self, full_name: str) -> list[dict]:
        repo = self._repo(full_name)
        return [self.render.pull(p) for p in self.state.pulls_of(repo.id)]

    def comments(self, full_name: str, number: int) -> list[dict]:
        """Conversation and review comments on a pull request, oldest first."""
        repo = self._repo(full_name)
        found = self.state.comments_on(repo.id, number)
        return [self.render.issue_comment(c) if c.kind == "issue" else self.render.review_comment(c) for c in found]

    def reactions(self, comment_id: int) -> list[tuple[str, str]]:
        """(login, content) of every reaction on a comment."""
        return [(r.user, r.content) for r in self.state.reactions if r.subject[1] == comment_id]

    def clone_url(self, full_name: str) -> str:
        return f"{self.url}/{self._repo(full_name).full_name}.git"

    def repo_path(self, full_name: str) -> Path:
        return self._repo(full_name).path

    def branch_sha(self, full_name: str, branch: str) -> str | None:
        return self.state.branch_sha(self._repo(full_name), branch)

    # -- used by the HTTP side -----------------------------------------------------------------

    def emit(self, event: str, payload: dict, *, background: bool = False) -> dict:
        """Deliver the event when a webhook URL is set; return its payload. Never called under the state lock,
        since the receiver may call back into the API while the delivery is in flight."""
        self.hooks.deliver(event, payload, background=background)
        return payload

    def add_comment(
        self,
        repo: Repo,
        pull: Pull,
        user: str,
        body: str,
        *,
        kind: str,
        via_app: bool = False,
        path: str | None = None,
        line: int | None = None,
        in_reply_to: int | None = None,
        review_id: int | None = None,
    ) -> Comment:
        self.state.user(user, "Bot" if via_app else "User")
        if kind == "review" and review_id is None:
            # On GitHub a line comment made on its own is a review of one comment.
            review = Review(self.state.new_id(), repo.id, pull.number, user, "", "commented", pull.head_sha, now())
            with self.state.lock:
                self.state.reviews[review.id] = review
            review_id = review.id
        comment = Comment(
            self.state.new_id(),
            repo.id,
            pull.number,
            user,
            body,
            now(),
            kind,
            via_app,
            path,
            line,
            pull.head_sha if kind == "review" else None,
            review_id,
            in_reply_to,
        )
        with self.state.lock:
            self.state.comments[comment.id] = comment
        return comment

    def close_pulls_of_branch(self, repo: Repo, branch: str, sender: str) -> None:
        """GitHub closes the open pull requests whose head branch was deleted."""
        closing = [p for p in self.state.pulls_of(repo.id) if p.head == branch and p.state == "open"]
        for pull in closing:
            self._close(pull)
            self.emit("pull_request", payloads.pull_request(self.render, repo, pull, "closed", sender), background=True)

    # -- internals -----------------------------------------------------------------------------

    def _repo(self, full_name: str) -> Repo:
        repo = self.state.repo(full_name)
        if repo is None:
            raise KeyError(f"no repository {full_name!r}; add it with add_repo")
        return repo

    def _pull(self, full_name: str, number: int) -> tuple[Repo, Pull]:
        repo = self._repo(full_name)
        pull = self.state.pull(repo, number)
        if pull is None:
            raise KeyError(f"no pull request #{number} in {full_name}")
        return repo, pull

    def _close(self, pull: Pull) -> None:
        with self.state.lock:
            pull.state, pull.closed_at, pull.updated_at = "closed", now(), now()

    def _installation_event(self, installation_id: int, action: str, sender: str) -> dict:
        inst = self.state.installations[installation_id]
        return self.emit("installation", payloads.installation(self.render, inst, action, sender))

    def _change_repos(self, installation_id: int, names: list[str], action: str, sender: str) -> dict:
        inst = self.state.installations[installation_id]
        changed = [self._repo(name) for name in names]
        with self.state.lock:
            kept = [i for i in inst.repo_ids if i not in {r.id for r in changed}]
            inst.repo_ids = kept + [r.id for r in changed] if action == "added" else kept
        return self.emit(
            "installation_repositories", payloads.installation_repositories(self.render, inst, action, sender, changed)
        )
