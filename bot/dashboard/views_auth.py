"""Signing in (with GitHub, or with the operator's one-time link), the home page and signing out."""

from flask import Blueprint, g, make_response, redirect, request

from bot.dashboard.oauth import STATE_TTL_SECONDS, SignInFailed
from bot.dashboard.operator import LOGIN_LINK_COMMAND, local_accounts, use_login_token
from bot.dashboard.sessions import GITHUB, OPERATOR
from bot.dashboard.web import dashboard, new_nonce, page, problem, safe_next, set_session_cookie, signed_in
from bot.door_limits import Door

# A GitHub session ends this long before its user token does, so no request goes out with a token about to lapse.
TOKEN_MARGIN_SECONDS = 60


def register(bp: Blueprint) -> None:
    @bp.get("/")
    def home():
        viewer = signed_in()
        if not viewer.accounts:
            return problem(
                "No installations",
                "Your GitHub account cannot see any installation of this App. Ask "
                "an owner of your organization to install it, or install it on your own account, then "
                "sign in again.",
                403,
            )
        return page("home.html", accounts=viewer.accounts)

    @bp.get("/signin")
    def signin():
        if g.viewer is not None:
            return redirect(safe_next(request.args.get("next")), 303)
        return page(
            "signin.html",
            github=dashboard().sign_in is not None,
            command=LOGIN_LINK_COMMAND,
            next_path=safe_next(request.args.get("next")),
        )

    @bp.get("/login/github")
    def login_github():
        deps = dashboard()
        if deps.sign_in is None:
            return problem(
                "Sign-in with GitHub is off",
                "This Copydesk has no GitHub App with an OAuth client "
                f"configured. The operator can sign in with `{LOGIN_LINK_COMMAND}`.",
                404,
            )
        deps.doors.admit(Door.SIGN_IN, request.remote_addr)  # each start keeps a state in Redis for 10 minutes
        nonce = new_nonce()
        response = make_response(redirect(deps.sign_in.start(nonce, safe_next(request.args.get("next"))), 303))
        response.set_cookie(
            deps.nonce_cookie,
            nonce,
            httponly=True,
            samesite="Lax",
            secure=deps.secure_cookies,
            path="/",
            max_age=STATE_TTL_SECONDS,
        )
        return response

    @bp.get("/login/github/callback")
    def login_github_done():
        deps = dashboard()
        if deps.sign_in is None:
            return problem("Sign-in with GitHub is off", "This Copydesk has no GitHub App configured.", 404)
        if request.args.get("error"):
            return problem(
                "Sign-in cancelled",
                "GitHub did not authorize Copydesk (you may have pressed Cancel). Start again from the sign-in page.",
                400,
            )
        grant = deps.sign_in.finish(
            state=request.args.get("state", ""),
            code=request.args.get("code", ""),
            browser_nonce=request.cookies.get(deps.nonce_cookie, ""),
        )
        login = deps.sign_in.user_login(grant.token)
        accounts = deps.sign_in.accounts(grant.token, login)
        # The session ends with the token (GitHub's last 8 hours), so nobody meets "authorization ended" mid-work.
        # Simpler than keeping the refresh token, sealed, and trading it for new tokens: one more secret to hold
        # and a refresh race between tabs, for a sign-in that takes two clicks.
        lifetime = None if grant.expires_in is None else max(0, grant.expires_in - TOKEN_MARGIN_SECONDS)
        session_id = deps.sessions.create(
            login=login,
            source=GITHUB,
            accounts=accounts,
            sealed_token=deps.gate.seal(grant.token),
            max_seconds=lifetime,
        )
        response = make_response(redirect(safe_next(grant.next_path), 303))
        response.delete_cookie(deps.nonce_cookie, path="/")
        set_session_cookie(response, session_id)
        return response

    @bp.get("/login/link")
    def login_link():
        deps = dashboard()
        deps.doors.admit(Door.LOGIN_LINK, request.remote_addr)
        if not use_login_token(deps.services.redis, request.args.get("token", "")):
            raise SignInFailed(
                "Sign-in link not valid",
                "This link was used already, expired, or is not one this "
                f"server issued. Run `{LOGIN_LINK_COMMAND}` on the server for a new one.",
                403,
            )
        session_id = deps.sessions.create(
            login=OPERATOR, source=OPERATOR, accounts=local_accounts(deps.services.projects)
        )
        response = make_response(redirect("/dashboard/", 303))
        set_session_cookie(response, session_id)
        return response

    @bp.route("/<path:unknown>", methods=["GET", "POST"])
    def unknown_page(unknown: str):
        return problem("Page not found", "There is no such page on the dashboard.", 404)

    @bp.post("/logout")
    def logout():
        deps = dashboard()
        if g.viewer is not None:
            deps.sessions.end(g.viewer.session)
        response = make_response(redirect("/dashboard/signin", 303))
        response.delete_cookie(deps.cookie_name, path="/")
        return response
