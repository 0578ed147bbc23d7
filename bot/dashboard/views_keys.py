"""The API keys page of an account: create (shown once), list, revoke, and the audit list."""

from flask import Blueprint, redirect, request

from bot.dashboard.sessions import Account
from bot.dashboard.web import dashboard, page, signed_in
from service.apikeys import DEFAULT_EXPIRY_DAYS, EXPIRY_DAYS, expiry_days
from service.clock import now_iso
from service.errors import InvalidRequest
from service.models import ApiKey, KeyAccess, Project

# How long a new key waits, server-side, for the page that shows it (the redirect right after creating it).
NEW_KEY_TTL_SECONDS = 300


def register(bp: Blueprint) -> None:
    @bp.get("/accounts/<account>/keys")
    def keys(account: str):
        return _keys_page(account)

    @bp.post("/accounts/<account>/keys")
    def create_key(account: str):
        viewer = signed_in()
        admin = viewer.admin_of(account)
        try:
            key, plaintext = _create(admin, request.form, created_by=viewer.login)
        except InvalidRequest as exc:
            return _keys_page(account, error=exc.detail, status=400)
        # Post/redirect/get: a reload of the page that shows the key must not make another one. The plaintext
        # waits in the server-side session for that one page, never in a URL, a cookie or a log line.
        dashboard().sessions.keep_once(viewer.session, _slot(key), plaintext, NEW_KEY_TTL_SECONDS)
        return redirect(f"/dashboard/accounts/{admin.login}/keys/{key.id}/new", 303)

    @bp.get("/accounts/<account>/keys/<key_id>/new")
    def key_created(account: str, key_id: str):
        viewer = signed_in()
        admin = viewer.admin_of(account)
        key = _own_key(admin, key_id)
        if key is None:
            return _keys_page(account, error=f"There is no key {key_id} in {admin.login}.", status=404)
        plaintext = dashboard().sessions.take_once(viewer.session, _slot(key))
        return page(
            "key_created.html",
            account=admin,
            key=key,
            plaintext=plaintext,
            project_names={p.id: p.repository for p in _projects(admin)},
        )

    @bp.post("/accounts/<account>/keys/<key_id>/revoke")
    def revoke_key(account: str, key_id: str):
        admin = signed_in().admin_of(account)
        key = _own_key(admin, key_id)
        if key is None:
            return _keys_page(
                account, error=f"There is no key {key_id} in {admin.login} (it may have been deleted).", status=404
            )
        dashboard().services.keys.revoke(key.id, by=signed_in().login)
        return redirect(f"/dashboard/accounts/{admin.login}/keys", 303)


def _create(admin: Account, form, *, created_by: str) -> tuple[ApiKey, str]:
    """Check the create form and make the key, bound to the account's code host; InvalidRequest says what is wrong."""
    owned = {project.id for project in _projects(admin)}
    scope = form.get("scope", "all")
    chosen = form.getlist("projects") if scope == "chosen" else []
    if scope not in ("all", "chosen"):
        raise InvalidRequest("choose all projects or some projects", field="scope")
    if scope == "chosen" and not chosen:
        raise InvalidRequest("choose at least one project, or all projects", field="projects")
    unknown = [p for p in chosen if p not in owned]
    if unknown:
        raise InvalidRequest(f"{admin.login} has no project {unknown[0]}", field="projects")
    if form.get("access") not in (KeyAccess.READ_ONLY.value, KeyAccess.READ_WRITE.value):
        raise InvalidRequest("choose read-only or read-write access", field="access")
    if not form.get("name", "").strip():
        raise InvalidRequest("give the key a name, so you can tell it from others later", field="name")
    return dashboard().services.keys.create(
        account=admin.login,
        name=form.get("name", ""),
        projects=chosen,
        access=KeyAccess(form["access"]),
        expires_in_days=expiry_days(form.get("expiry")),
        created_by=created_by,
        host=admin.host,
    )


def _own_key(admin: Account, key_id: str) -> ApiKey | None:
    """The key, if it is this account's on this account's code host."""
    key = dashboard().services.keys.find(key_id)
    return key if key is not None and key.account == admin.login and key.works_on(admin.host) else None


def _slot(key: ApiKey) -> str:
    return f"new-key:{key.id}"


def _projects(account: Account) -> list[Project]:
    # By code host too: a GitHub account may bear the name of a local one (`local`, or any `--account`).
    return [p for p in dashboard().services.projects.all() if account.owns(p)]


def _keys_page(account: str, *, error: str | None = None, status: int = 200):
    admin = signed_in().admin_of(account)
    services = dashboard().services
    projects = _projects(admin)
    keys = services.keys.of_account(admin.login, admin.host)
    shown = {k.id for k in keys}
    # The audit list is kept per account name; show only the lines about keys of this code host's account.
    audit = [e for e in services.keys.audit(admin.login, 50) if e.key_id in shown]
    return page(
        "keys.html",
        status,
        account=admin,
        keys=keys,
        audit=audit,
        projects=projects,
        project_names={p.id: p.repository for p in projects},
        now=now_iso(),
        error=error,
        form=request.form if request.method == "POST" else {},
        expiry_days=EXPIRY_DAYS,
        default_expiry=DEFAULT_EXPIRY_DAYS,
    )
