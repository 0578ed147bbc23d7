"""Who is signed in and what they may do: the accounts they see, and whether they are admin of one.

Accounts and roles are cached in the session for ROLE_TTL_SECONDS, then worked out again: from GitHub for a
GitHub session, from the local projects for the operator's. When GitHub cannot be asked, the answer is no (fail
closed) until it answers, and it is asked again only every ROLE_RETRY_SECONDS, so a GitHub outage does not make
every request (the job page polls) wait on it.
"""

import time
from dataclasses import asdict, dataclass

from bot.dashboard.oauth import GitHubSignIn, SignInFailed
from bot.dashboard.operator import local_accounts
from bot.dashboard.sessions import GITHUB, Account, Session, SessionStore
from bot.github.secretbox import SecretBox
from service.models import Project
from service.store.projects import ProjectStore

ROLE_TTL_SECONDS = 60
ROLE_RETRY_SECONDS = 15  # after GitHub failed to answer a check, before it is asked again
SESSION_BOX_INFO = b"copydesk dashboard session"


class NotAllowed(Exception):
    """The signed-in person may not see or do this; `detail` says why in plain words."""

    def __init__(self, title: str, detail: str, status: int = 403) -> None:
        super().__init__(detail)
        self.title, self.detail, self.status = title, detail, status


@dataclass
class Viewer:
    """The signed-in person for one request."""

    session: Session
    accounts: list[Account]

    @property
    def login(self) -> str:
        return self.session.login

    def account(self, login: str) -> Account:
        """A visible account, or NotAllowed (an account they cannot see reads like one that does not exist)."""
        found = next((a for a in self.accounts if a.login.lower() == login.lower()), None)
        if found is None:
            raise NotAllowed("No such account", f"You have no access to an account called {login!r}.", 404)
        return found

    def admin_of(self, login: str) -> Account:
        """A visible account the person administers, or NotAllowed."""
        return _admin(self.account(login))

    def sees(self, project: Project) -> bool:
        """Whether the project belongs to one of the visible accounts (same name and same code host)."""
        return any(a.owns(project) for a in self.accounts)

    def owner_of(self, project: Project) -> Account:
        """The visible account that owns `project`, or NotAllowed (as if the project did not exist)."""
        found = next((a for a in self.accounts if a.owns(project)), None)
        if found is None:
            raise NotAllowed("No such project", f"There is no project {project.id} in your accounts.", 404)
        return found

    def admin_of_project(self, project: Project) -> Account:
        """The account owning `project`, when the person administers it; else NotAllowed."""
        return _admin(self.owner_of(project))


def _admin(account: Account) -> Account:
    if not account.admin:
        raise NotAllowed(
            "Admins only",
            f"Only an admin of {account.login} can do this. You are a member; ask an owner of the organization.",
        )
    return account


class Gate:
    """Turns a session into a Viewer, refreshing GitHub accounts and roles when their cache is stale."""

    def __init__(
        self, sessions: SessionStore, projects: ProjectStore, sign_in: GitHubSignIn | None, box: SecretBox | None
    ) -> None:
        self._sessions = sessions
        self._projects = projects
        self._sign_in = sign_in
        self._box = box

    def viewer(self, session: Session) -> Viewer:
        """The Viewer for a live session; SignInFailed (the session ended) when GitHub refuses its token."""
        if time.time() - session.checked_at > ROLE_TTL_SECONDS:
            if session.source == GITHUB:
                self._recheck(session)
            else:
                self._refresh_local(session)
        return Viewer(session, session.visible())

    def seal(self, token: str) -> str:
        assert self._box is not None  # only GitHub sign-in seals tokens, and it comes with a box
        return self._box.seal(token).decode("ascii")

    def _recheck(self, session: Session) -> None:
        token = self._box.unseal(session.sealed_token or "") if self._box and self._sign_in else None
        if token is None:
            self._sessions.end(session)
            raise SignInFailed("Please sign in again", "Your session can no longer be checked with GitHub.", 401)
        assert self._sign_in is not None  # a token is unsealed only when GitHub sign-in is set up
        try:
            accounts = self._sign_in.accounts(token, session.login)
        except SignInFailed as exc:
            if exc.status == 401:
                self._sessions.end(session)
                raise
            # GitHub could not be asked: keep what the person may see, but no admin rights until it answers. Kept
            # so, and counted as checked such that the next try comes ROLE_RETRY_SECONDS from now, not at once.
            session.accounts = [{**a, "admin": False} for a in session.accounts]
            session.checked_at = time.time() - ROLE_TTL_SECONDS + ROLE_RETRY_SECONDS
            self._sessions.save(session)
            return
        session.accounts = [a.__dict__ for a in accounts]
        session.checked_at = time.time()
        self._sessions.save(session)

    def _refresh_local(self, session: Session) -> None:
        """The operator's accounts again: `local` and those owning local projects, some perhaps added since."""
        session.accounts = [asdict(a) for a in local_accounts(self._projects)]
        session.checked_at = time.time()
        self._sessions.save(session)
