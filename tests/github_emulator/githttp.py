"""Git's smart HTTP protocol for the emulated repositories, served by `git http-backend` (CGI)."""

import subprocess
from pathlib import Path

from flask import Blueprint, Request, Response, request

from service.workspace.git import Git
from tests.github_emulator.auth import AuthError, can_see, credentials, installation_token
from tests.github_emulator.calls import emulator
from tests.github_emulator.state import Repo, State

SERVICES = ("info/refs", "git-upload-pack", "git-receive-pack")
CHALLENGE = {"WWW-Authenticate": 'Basic realm="GitHub"'}
ENDPOINT = "git.smart-http"

blueprint = Blueprint("git", __name__)


@blueprint.route("/<owner>/<name>.git/<path:service>", endpoint="smart-http", methods=["GET", "POST"])
def smart_http(owner: str, name: str, service: str):
    if service not in SERVICES:
        return Response("Not Found", status=404)
    emu = emulator()
    repo = emu.state.repo(f"{owner}/{name}")
    try:
        authorize(emu.state, request, repo, is_push(service, request.query_string.decode()))
    except GitAccessError as refused:
        return Response(
            refused.message + "\n", status=refused.status, headers=refused.headers, content_type="text/plain"
        )
    return run_backend(emu.state.git, str(emu.git_root), repo, service, request)


class GitAccessError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def authorize(state: State, incoming: Request, repo: Repo | None, pushing: bool) -> None:
    """Pass when a live token that reaches `repo` comes as HTTP Basic with user `x-access-token`."""
    kind, secret = credentials(incoming.headers.get("Authorization"))
    if kind != "basic" or not secret:
        raise GitAccessError(401, "Authentication required", CHALLENGE)
    try:
        token = installation_token(state, secret)
    except AuthError:
        raise GitAccessError(401, "Invalid username or token.", CHALLENGE) from None
    if repo is None or not can_see(state, token, repo):
        raise GitAccessError(404, "Repository not found.")
    if pushing and token.permissions.get("contents") != "write":
        raise GitAccessError(403, f"Permission to {repo.full_name}.git denied.")


def is_push(service_path: str, query: str) -> bool:
    return service_path == "git-receive-pack" or "service=git-receive-pack" in query


def run_backend(git: Git, root: str, repo: Repo, service_path: str, incoming: Request) -> Response:
    """Hand the request to `git http-backend` and relay its CGI answer."""
    body = incoming.get_data()  # werkzeug has already undone chunked transfer encoding
    env = git.env(
        extra={
            "GIT_PROJECT_ROOT": root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": incoming.method,
            # The folder the repository was made in: a renamed or transferred repository keeps it.
            "PATH_INFO": f"/{Path(repo.path).relative_to(root).as_posix()}/{service_path}",
            "QUERY_STRING": incoming.query_string.decode(),
            "CONTENT_TYPE": incoming.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            # http-backend inflates a gzip body itself when told the encoding (git gzips large fetch negotiations).
            "HTTP_CONTENT_ENCODING": incoming.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": incoming.headers.get("Git-Protocol", ""),
            # receive-pack is refused to anonymous users; authorize() has already checked the token.
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": incoming.remote_addr or "127.0.0.1",
        }
    )
    proc = subprocess.run([git.binary, "http-backend"], input=body, capture_output=True, env=env, timeout=120)
    head, _, payload = proc.stdout.partition(b"\r\n\r\n")
    response = Response(payload, status=200)
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name.lower() == "status":
            response.status = value.strip()
        elif name:
            response.headers[name.strip()] = value.strip()
    return response
