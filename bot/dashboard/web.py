"""Request plumbing shared by the dashboard's pages: the session cookie, the signed-in viewer, CSRF checks,
security headers and the clear error page."""

import hmac
import logging
import secrets
from dataclasses import dataclass
from urllib.parse import quote

import redis
from flask import current_app, g, redirect, render_template, request
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Response

from bot.dashboard.access import Gate, NotAllowed, Viewer
from bot.dashboard.github_diff import GitHubDiffs
from bot.dashboard.oauth import GitHubSignIn, SignInFailed
from bot.dashboard.sessions import Session, SessionStore
from bot.door_limits import DoorLimits
from bot.edge import content_security_policy
from service.api.problems import is_outage, request_id
from service.codehost.local import LocalCodeHost
from service.codes import ERRORS
from service.errors import RateLimited, ServiceError
from service.services import Services

log = logging.getLogger(__name__)

EXTENSION = "copydesk.dashboard"
# A longer `next` is dropped for the home page: it is kept in Redis while the person is away at GitHub.
MAX_NEXT_CHARS = 512
SIGN_OUT_ENDPOINT = "dashboard.logout"
# Scripts and styles only from our own static files: no inline script or style can run, whatever a page shows.
# The other security headers (nosniff, no framing, no referrer, no caching) are the app's, from bot.edge.
CSP = content_security_policy(inline_styles=False)


@dataclass
class Dashboard:
    """What the dashboard's views work with; built once by the app factory."""

    services: Services
    local: LocalCodeHost
    sessions: SessionStore
    gate: Gate
    sign_in: GitHubSignIn | None
    secure_cookies: bool
    github_diffs: GitHubDiffs
    doors: DoorLimits

    @property
    def cookie_name(self) -> str:
        # __Host-: the browser refuses it unless Secure, path / and no Domain, so no sibling host can plant one.
        return "__Host-copydesk-session" if self.secure_cookies else "copydesk-session"

    @property
    def nonce_cookie(self) -> str:
        return "__Host-copydesk-signin" if self.secure_cookies else "copydesk-signin"


class PageError(Exception):
    """Ends a request with the clear error page."""

    def __init__(self, title: str, detail: str, status: int) -> None:
        super().__init__(detail)
        self.title, self.detail, self.status = title, detail, status


def dashboard() -> Dashboard:
    return current_app.extensions[EXTENSION]


def page(template: str, status: int = 200, **context) -> tuple[str, int]:
    """Render a dashboard page with the viewer (if any) and the CSRF token in its context."""
    viewer = g.get("viewer")
    return render_template(template, viewer=viewer, csrf_token=viewer.session.csrf if viewer else "", **context), status


def problem(title: str, detail: str, status: int) -> tuple[str, int]:
    return page("problem.html", status, title=title, detail=detail)


def safe_next(path: str | None) -> str:
    """A same-site path to return to after sign-in; anything else is the dashboard's home."""
    if (
        path
        and len(path) <= MAX_NEXT_CHARS
        and path.startswith("/")
        and not path.startswith("//")
        and "\\" not in path
        and path.isprintable()
    ):
        return path
    return "/dashboard/"


def load_viewer() -> None:
    """before_request: find the session and its viewer; check the CSRF token of every form post."""
    g.viewer = None
    deps = dashboard()
    session = deps.sessions.load(request.cookies.get(deps.cookie_name))
    if session is not None:
        try:
            g.viewer = deps.gate.viewer(session)
        except SignInFailed as exc:
            raise PageError(exc.title, exc.detail, exc.status) from None
    # Signing out with no live session has nothing to protect: let it through to the sign-in page.
    if request.method == "POST" and not (session is None and request.endpoint == SIGN_OUT_ENDPOINT):
        check_csrf(session)


def check_csrf(session: Session | None) -> None:
    # No session, no form parsing: an anonymous post costs nothing past its headers.
    sent = request.form.get("csrf_token", "") if session is not None else ""
    if session is None or not sent or not hmac.compare_digest(sent, session.csrf):
        raise PageError(
            "Form expired",
            "This form was not sent from a page of your current session (its security "
            "token is missing or stale). Go back, reload the page and try again.",
            403,
        )


def signed_in() -> Viewer:
    """The viewer, or a redirect to the sign-in page that returns here."""
    viewer = g.get("viewer")
    if viewer is None:
        raise _SignInFirst(request.full_path if request.query_string else request.path)
    return viewer


class _SignInFirst(Exception):
    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.next_path = next_path


def register_handlers(bp) -> None:
    """Error pages and headers for a dashboard blueprint."""
    bp.before_request(load_viewer)

    @bp.after_request
    def stricter_policy(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CSP)
        return response

    @bp.errorhandler(PageError)
    def page_error(exc: PageError):
        return problem(exc.title, exc.detail, exc.status)

    @bp.errorhandler(NotAllowed)
    def not_allowed(exc: NotAllowed):
        return problem(exc.title, exc.detail, exc.status)

    @bp.errorhandler(SignInFailed)
    def sign_in_failed(exc: SignInFailed):
        return problem(exc.title, exc.detail, exc.status)

    @bp.errorhandler(ServiceError)
    def service_error(exc: ServiceError):
        known = ERRORS.get(exc.code)
        body, status = problem(known.title if known else "Not possible", exc.detail, known.status if known else 404)
        return body, status, ({"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else {})

    @bp.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        return problem(exc.name, exc.description or exc.name, exc.code or 500)

    @bp.errorhandler(redis.RedisError)
    def store_down(exc: redis.RedisError):
        if not is_outage(exc):
            return unexpected(exc)
        log.error("dashboard: store unavailable: %s", exc)
        return problem(
            "Copydesk is unavailable", "Copydesk cannot reach its store right now. Try again in a moment.", 503
        )

    @bp.errorhandler(Exception)
    def unexpected(exc: Exception):
        rid = request_id()
        log.exception("unhandled error on dashboard request %s", rid)
        return problem(
            "Something went wrong",
            f"Copydesk hit an unexpected error (request {rid}). The operator's logs have the details.",
            500,
        )

    @bp.errorhandler(_SignInFirst)
    def sign_in_first(exc: _SignInFirst):
        return redirect(f"/dashboard/signin?next={quote(safe_next(exc.next_path), safe='/')}", 303)


def set_session_cookie(response: Response, session_id: str) -> None:
    """Hand the browser its new session; a session it had before ends (no two sign-ins share a browser)."""
    deps = dashboard()
    if g.get("viewer") is not None:
        deps.sessions.end(g.viewer.session)
    response.set_cookie(
        deps.cookie_name,
        session_id,
        httponly=True,
        samesite="Lax",
        secure=deps.secure_cookies,
        path="/",
        max_age=deps.sessions.max_seconds,
    )


def new_nonce() -> str:
    return secrets.token_urlsafe(24)
