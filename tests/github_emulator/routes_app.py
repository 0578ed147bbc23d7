"""The App's own operations: who am I, installation tokens, the installation's repositories, manifests."""

from flask import Blueprint, jsonify

from tests.github_emulator.calls import (
    GitHubError,
    created,
    emulator,
    json_body,
    not_found,
    paginated,
    require_app,
    require_token,
)
from tests.github_emulator.state import iso

LEVELS = {"read": 1, "write": 2, "admin": 3}

blueprint = Blueprint("app", __name__)


@blueprint.get("/app", endpoint="apps/get-authenticated")
def get_app():
    require_app()
    return jsonify(emulator().render.app_json(installations_count=len(emulator().state.installations)))


@blueprint.post(
    "/app/installations/<int:installation_id>/access_tokens", endpoint="apps/create-installation-access-token"
)
def create_token(installation_id: int):
    require_app()
    emu = emulator()
    inst = emu.state.installations.get(installation_id)
    if inst is None:
        raise not_found()
    if inst.suspended_at is not None:
        raise GitHubError(403, "This installation has been suspended")
    data = json_body()
    repo_ids = None
    if data.get("repositories") or data.get("repository_ids"):
        named = [emu.state.repo(f"{inst.account}/{name}") for name in data.get("repositories") or []]
        ids = [r.id if r else None for r in named] + list(data.get("repository_ids") or [])
        if any(i not in inst.repo_ids for i in ids):
            raise GitHubError(
                422,
                "There is at least one repository that does not exist or is not accessible to the parent installation.",
            )
        repo_ids = sorted(set(ids))
    permissions = data.get("permissions") or dict(inst.permissions)
    if any(LEVELS.get(inst.permissions.get(name), 0) < LEVELS.get(level, 9) for name, level in permissions.items()):
        raise GitHubError(422, "The permissions requested are not granted to this installation.")
    token = emu.state.mint_token(inst, emu.token_ttl, repo_ids, permissions)
    shape = {
        "token": token.value,
        "expires_at": iso(token.expires_at),
        "permissions": permissions,
        "repository_selection": "selected" if repo_ids is not None else inst.selection,
    }
    if repo_ids is not None:
        shape["repositories"] = [emu.render.repository(emu.state.repo_by_id(i)) for i in repo_ids]
    return created(shape)


@blueprint.get("/installation/repositories", endpoint="apps/list-repos-accessible-to-installation")
def installation_repositories():
    token = require_token()
    emu = emulator()
    inst = emu.state.installations[token.installation_id]
    repos = [emu.state.repo_by_id(i) for i in inst.repo_ids if token.repo_ids is None or i in token.repo_ids]
    selection = "selected" if token.repo_ids is not None else inst.selection
    return paginated(
        [emu.render.repository(r) for r in repos],
        wrap=lambda page: {"total_count": len(repos), "repository_selection": selection, "repositories": page},
    )


@blueprint.post("/app-manifests/<code>/conversions", endpoint="apps/create-from-manifest")
def convert_manifest(code: str):
    emu = emulator()
    with emu.state.lock:
        if code not in emu.state.manifest_codes:
            raise not_found()
        emu.state.manifest_codes.discard(code)  # a manifest code works once
    app = emu.app
    return created(
        emu.render.app_json()
        | {
            "pem": app.private_key_pem,
            "webhook_secret": app.webhook_secret,
            "client_id": app.client_id,
            "client_secret": app.client_secret,
        }
    )
