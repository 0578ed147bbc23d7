"""The emulated GitHub's records: users, repositories (real bare git repositories), installations, tokens,
pull requests, comments, reviews and reactions."""

import itertools
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from service.workspace.git import Git

# GitHub's roles and the legacy `permission` each one reports (maintain reads as write, triage as read).
ROLE_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
# What `State.commit` reads of a commit, NUL-separated (the message last: it may hold anything but NUL).
COMMIT_FORMAT = "%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B"


def now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


@dataclass
class User:
    login: str
    id: int
    type: str = "User"  # "User", "Organization" or "Bot"


@dataclass
class Repo:
    id: int
    owner: str
    name: str
    path: Path
    default_branch: str
    private: bool
    delete_branch_on_merge: bool
    created_at: datetime
    roles: dict[str, str] = field(default_factory=dict)  # login -> role

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass
class Installation:
    id: int
    account: str
    repo_ids: list[int]
    selection: str  # "all" or "selected"
    permissions: dict
    events: list
    created_at: datetime
    suspended_at: datetime | None = None
    suspended_by: str | None = None


@dataclass
class Token:
    value: str = field(repr=False)
    installation_id: int
    expires_at: datetime
    repo_ids: list[int] | None  # None: every repository of the installation, now and later
    permissions: dict


@dataclass
class UserToken:
    """A user-to-server token from the OAuth web flow (`ghu_`)."""

    value: str = field(repr=False)
    login: str
    expires_at: datetime


@dataclass
class OAuthCode:
    login: str
    redirect_uri: str
    expires_at: datetime


@dataclass
class Pull:
    id: int
    number: int
    repo_id: int
    title: str
    body: str | None
    head: str
    base: str
    user: str
    draft: bool
    created_at: datetime
    head_sha: str
    base_sha: str
    state: str = "open"
    updated_at: datetime | None = None
    closed_at: datetime | None = None
    merged_at: datetime | None = None
    merged_by: str | None = None
    merge_commit_sha: str | None = None
    requested_reviewers: list[str] = field(default_factory=list)  # logins whose review is requested


@dataclass
class Comment:
    id: int
    repo_id: int
    number: int
    user: str
    body: str
    created_at: datetime
    kind: str  # "issue" (conversation) or "review" (on a line of the diff)
    via_app: bool = False
    path: str | None = None
    line: int | None = None
    commit_id: str | None = None
    review_id: int | None = None
    in_reply_to: int | None = None
    updated_at: datetime | None = None
    start_line: int | None = None


@dataclass
class GitCommit:
    """A commit of a repository as git records it (dates as git prints them, ISO 8601 with an offset)."""

    sha: str
    tree: str
    parents: list[str]
    author_name: str
    author_email: str
    author_date: str
    committer_name: str
    committer_email: str
    committer_date: str
    message: str


@dataclass
class Review:
    id: int
    repo_id: int
    number: int
    user: str
    body: str | None
    state: str  # webhook spelling: "commented", "approved", "changes_requested"
    commit_id: str
    submitted_at: datetime


@dataclass
class CheckRun:
    """A completed check run of a head commit, with its output and annotations ((path, line, message), failures)."""

    id: int
    repo_id: int
    suite_id: int
    head_sha: str
    name: str
    conclusion: str
    title: str | None
    summary: str | None
    text: str | None
    annotations: list
    completed_at: datetime


@dataclass
class CheckSuite:
    id: int
    repo_id: int
    head_sha: str
    head_branch: str | None
    created_at: datetime


@dataclass
class CommitStatus:
    id: int
    repo_id: int
    sha: str
    state: str  # error, failure, pending, success
    context: str
    description: str | None
    target_url: str | None
    created_at: datetime


@dataclass
class Reaction:
    id: int
    subject: tuple[str, int]  # ("issue_comment" | "review_comment" | "issue", id or (repo_id, number))
    user: str
    content: str
    created_at: datetime


class State:
    """Every record of the emulated GitHub, guarded by one lock (the server is threaded)."""

    def __init__(self) -> None:
        self.git = Git()
        self.lock = threading.RLock()
        self._ids = itertools.count(1001)
        self._numbers: dict[int, itertools.count] = {}
        self.users: dict[str, User] = {}
        self.repos: dict[str, Repo] = {}
        self.installations: dict[int, Installation] = {}
        self.tokens: dict[str, Token] = {}
        # Installation tokens are minted and checked against this clock, which a test moves on (`pass_time`)
        # to expire them instead of sleeping.
        self._token_clock_offset = timedelta(0)
        self.pulls: dict[tuple[int, int], Pull] = {}
        self.comments: dict[int, Comment] = {}
        self.reviews: dict[int, Review] = {}
        self.reactions: list[Reaction] = []
        self.check_suites: dict[int, CheckSuite] = {}
        self.check_runs: dict[int, CheckRun] = {}
        self.statuses: list[CommitStatus] = []
        self.manifest_codes: set[str] = set()
        self.memberships: dict[tuple[str, str], str] = {}  # (org, login), lower case -> "admin" or "member"
        self.user_tokens: dict[str, UserToken] = {}
        self.oauth_codes: dict[str, OAuthCode] = {}
        self.browser_user: str | None = None  # who is signed in to GitHub in "the browser" (the web flow)

    def new_id(self) -> int:
        return next(self._ids)

    def next_number(self, repo: Repo) -> int:
        """Issues and pull requests share one number sequence per repository."""
        return next(self._numbers.setdefault(repo.id, itertools.count(1)))

    def user(self, login: str, type: str = "User") -> User:
        """The user with this login, created on first mention."""
        with self.lock:
            if login.lower() not in self.users:
                self.users[login.lower()] = User(login, self.new_id(), type)
            return self.users[login.lower()]

    def repo(self, full_name: str) -> Repo | None:
        return self.repos.get(full_name.lower())

    def repo_by_id(self, repo_id: int) -> Repo:
        return next(r for r in list(self.repos.values()) if r.id == repo_id)

    def pull(self, repo: Repo, number: int) -> Pull | None:
        """The pull request, its head sha refreshed while open (pushes move it, as on GitHub)."""
        pull = self.pulls.get((repo.id, number))
        if pull is not None and pull.state == "open":
            pull.head_sha = self.branch_sha(repo, pull.head) or pull.head_sha
        return pull

    def is_collaborator(self, repo: Repo, login: str) -> bool:
        """Whether `login` is a collaborator of `repo`: given a role on it, its owner, or an owner of its org."""
        login = login.lower()
        return (
            repo.roles.get(login, "none") != "none"
            or login == repo.owner.lower()
            or self.memberships.get((repo.owner.lower(), login)) == "admin"
        )

    def installation_of(self, repo: Repo) -> Installation | None:
        return next((i for i in list(self.installations.values()) if repo.id in i.repo_ids), None)

    def pulls_of(self, repo_id: int) -> list[Pull]:
        """The repository's pull requests by number (a snapshot: other threads may be adding some)."""
        with self.lock:
            return sorted((p for p in self.pulls.values() if p.repo_id == repo_id), key=lambda p: p.number)

    def comments_on(self, repo_id: int, number: int, kind: str | None = None) -> list[Comment]:
        """The comments on one pull request, oldest first, all or of one kind ("issue" or "review")."""
        with self.lock:
            return sorted(
                (
                    c
                    for c in self.comments.values()
                    if c.repo_id == repo_id and c.number == number and kind in (None, c.kind)
                ),
                key=lambda c: c.id,
            )

    def mint_token(
        self, installation: Installation, ttl: float, repo_ids: list[int] | None, permissions: dict
    ) -> Token:
        token = Token(
            "ghs_" + secrets.token_hex(18),
            installation.id,
            self.token_now() + timedelta(seconds=ttl),
            repo_ids,
            permissions,
        )
        with self.lock:
            self.tokens[token.value] = token
        return token

    def token_now(self) -> datetime:
        """The time installation tokens are minted and checked at."""
        return now() + self._token_clock_offset

    def pass_time(self, seconds: float) -> None:
        """Move the installation tokens' clock on by `seconds`: tokens expire as if that much time had passed."""
        with self.lock:
            self._token_clock_offset += timedelta(seconds=seconds)

    def user_installations(self, login: str) -> list[Installation]:
        """The installations a user can reach: on their own account, or on an org they belong to."""
        with self.lock:
            return [
                i
                for i in self.installations.values()
                if i.account.lower() == login.lower() or (i.account.lower(), login.lower()) in self.memberships
            ]

    def revoke_tokens(self, installation_id: int) -> None:
        with self.lock:
            for value in [v for v, t in self.tokens.items() if t.installation_id == installation_id]:
                del self.tokens[value]

    # -- the git side of a repository --------------------------------------------------------

    def branch_sha(self, repo: Repo, branch: str) -> str | None:
        proc = self.git.run(
            "rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}", git_dir=repo.path, check=False
        )
        return proc.stdout.decode().strip() or None

    def branches_at(self, repo: Repo, sha: str) -> list[str]:
        """The branches whose head is `sha`."""
        out = self.git.out(
            "for-each-ref", f"--points-at={sha}", "--format=%(refname:short)", "refs/heads/", git_dir=repo.path
        )
        return out.split()

    def is_ancestor(self, repo: Repo, older: str, newer: str) -> bool:
        return self.git.run("merge-base", "--is-ancestor", older, newer, git_dir=repo.path, check=False).returncode == 0

    def resolve(self, repo: Repo, name: str) -> str | None:
        """The commit a compare side names: a branch, a tag or a (possibly abbreviated) commit sha."""
        if not name or name.startswith("-"):  # never an option to git
            return None
        for candidate in (f"refs/heads/{name}", f"refs/tags/{name}"):
            proc = self.git.run(
                "rev-parse", "--verify", "-q", f"{candidate}^{{commit}}", git_dir=repo.path, check=False
            )
            if proc.returncode == 0:
                return proc.stdout.decode().strip()
        if not re.fullmatch(r"[0-9a-f]{7,40}", name):
            return None
        proc = self.git.run("rev-parse", "--verify", "-q", f"{name}^{{commit}}", git_dir=repo.path, check=False)
        return proc.stdout.decode().strip() or None

    def merge_base(self, repo: Repo, base: str, head: str) -> str | None:
        proc = self.git.run("merge-base", base, head, git_dir=repo.path, check=False)
        return proc.stdout.decode().strip() or None

    def commit(self, repo: Repo, sha: str) -> GitCommit:
        fields = self.git.out("show", "-s", f"--format={COMMIT_FORMAT}", sha, git_dir=repo.path).split("\x00")
        sha, tree, parents, *people, message = fields
        return GitCommit(sha, tree, parents.split(), *people, message=message)

    def commits_between(self, repo: Repo, since: str, head: str, limit: int) -> list[str]:
        """The newest `limit` commits of `since..head`, oldest first (GitHub's order for a comparison)."""
        listed = self.git.out("rev-list", f"--max-count={limit}", "--reverse", f"{since}..{head}", git_dir=repo.path)
        return listed.split()

    def count(self, repo: Repo, older: str, newer: str) -> int:
        """How many commits `newer` has that `older` has not."""
        return int(self.git.out("rev-list", "--count", f"{older}..{newer}", git_dir=repo.path))
