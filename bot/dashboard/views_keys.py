"""The API keys page of an account: create (shown once), list, revoke, and the audit list."""

from flask import Blueprint, redirect, request

from bot.dashboard.web import dashboard, page, signed_in
from service.apikeys import DEFAULT_EXPIRY_DAYS, EXPIRY_DAYS, expiry_days
from service.clock import now_iso
from service.errors import InvalidRequest
from service.models import KeyAccess


def register(bp: Blueprint) -> None:
    @bp.get("/accounts/<account>/keys")
    def keys(account: str):
        return _keys_page(account)

    @bp.post("/accounts/<account>/keys")
    def create_key(account: str):
        admin = signed_in().admin_of(account)
        services = dashboard().services
        projects = _projects(admin.login)
        form = request.form
        scope = form.get("scope", "all")
        chosen = form.getlist("projects") if scope == "chosen" else []
        try:
            if scope not in ("all", "chosen"):
                raise InvalidRequest("choose all projects or some projects", field="scope")
            if scope == "chosen" and not chosen:
                raise InvalidRequest("choose at least one project, or all projects", field="projects")
            unknown = [p for p in chosen if p not in {project.id for project in projects}]
            if unknown:
                raise InvalidRequest(f"{admin.login} has no project {unknown[0]}", field="projects")
            if form.get("access") not in (KeyAccess.READ_ONLY.value, KeyAccess.READ_WRITE.value):
                raise InvalidRequest("choose read-only or read-write access", field="access")
            if not form.get("name", "").strip():
                raise InvalidRequest("give the key a name, so you can tell it from others later", field="name")
            key, plaintext = services.keys.create(account=admin.login, name=form.get("name", ""), projects=chosen,
                                                  access=KeyAccess(form["access"]),
                                                  expires_in_days=expiry_days(form.get("expiry")),
                                                  created_by=signed_in().login)
        except InvalidRequest as exc:
            return _keys_page(account, error=exc.detail, status=400)
        return page("key_created.html", account=admin, key=key, plaintext=plaintext,
                    project_names={p.id: p.repository for p in projects})

    @bp.post("/accounts/<account>/keys/<key_id>/revoke")
    def revoke_key(account: str, key_id: str):
        admin = signed_in().admin_of(account)
        services = dashboard().services
        key = services.keys.find(key_id)
        if key is None or key.account != admin.login:
            return _keys_page(account, error=f"There is no key {key_id} in {admin.login} (it may have been "
                              "deleted).", status=404)
        services.keys.revoke(key.id, by=signed_in().login)
        return redirect(f"/dashboard/accounts/{admin.login}/keys", 303)


def _projects(account: str):
    return [p for p in dashboard().services.projects.all() if p.account == account]


def _keys_page(account: str, *, error: str | None = None, status: int = 200):
    admin = signed_in().admin_of(account)
    services = dashboard().services
    projects = _projects(admin.login)
    return page("keys.html", status, account=admin, keys=services.keys.of_account(admin.login),
                audit=services.keys.audit(admin.login, 50), projects=projects,
                project_names={p.id: p.repository for p in projects}, now=now_iso(), error=error,
                form=request.form if request.method == "POST" else {}, expiry_days=EXPIRY_DAYS,
                default_expiry=DEFAULT_EXPIRY_DAYS)
