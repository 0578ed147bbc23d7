"""A GitHub that answers what a test lines up, on a real HTTP server: for the client's and tokens' edge cases."""

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import pytest
from werkzeug.wrappers import Request, Response

from tests.harness import LiveServer


@dataclass
class Answer:
    status: int = 200
    body: object = field(default_factory=lambda: {"ok": True})
    headers: dict = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering, to make the client time out


@dataclass
class Seen:
    method: str
    path: str  # with its query
    headers: dict
    body: bytes


class ScriptedGitHub:
    """Answers with the answers a test lines up (then 200 {"ok": true}); records every request."""

    def __init__(self) -> None:
        self.answers: deque[Answer] = deque()
        self.seen: list[Seen] = []
        self._lock = threading.Lock()

    def then(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    def __call__(self, environ, start_response):
        request = Request(environ)
        with self._lock:
            self.seen.append(
                Seen(request.method, request.full_path.rstrip("?"), dict(request.headers), request.get_data())
            )
            answer = self.answers.popleft() if self.answers else Answer()
        if answer.delay:
            time.sleep(answer.delay)
        body = b"" if answer.body is None else json.dumps(answer.body).encode()
        headers = {"Content-Type": "application/json; charset=utf-8", **answer.headers} if body else answer.headers
        return Response(body, status=answer.status, headers=headers)(environ, start_response)

    def reset(self) -> "ScriptedGitHub":
        """Forget the answers and requests of the test before."""
        self.answers.clear()
        self.seen.clear()
        return self


@pytest.fixture(scope="module")
def scripted_github_server():
    """A ScriptedGitHub on a real HTTP server, shared by a module's tests (reset it per test)."""
    scripted = ScriptedGitHub()
    with LiveServer(scripted) as live:
        scripted.url = live.url
        yield scripted
