"""Failures a test arms for the next matching requests: secondary and primary rate limits, server errors."""

import re
import threading
import time
from dataclasses import dataclass

SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID {request_id}."
)
PRIMARY_MESSAGE = "API rate limit exceeded for installation ID {installation}."
DOCS = {
    "secondary": "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api"
    "#about-secondary-rate-limits",
    "primary": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
}


@dataclass
class Fault:
    """`kind` is "secondary", "primary" or "server"; `match` is a regex searched in "METHOD /path"."""

    kind: str
    count: int
    status: int
    match: str = ""
    retry_after: int | None = None
    reset_in: int = 60

    def __post_init__(self) -> None:
        allowed = {"secondary": (403, 429), "primary": (403, 429), "server": (500, 502, 503)}
        if self.status not in allowed.get(self.kind, ()):
            raise ValueError(f"a {self.kind!r} fault cannot answer {self.status}")


@dataclass
class Answer:
    status: int
    body: dict
    headers: dict


class Faults:
    """The armed faults, consumed in the order they were armed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: list[Fault] = []

    def arm(self, fault: Fault) -> None:
        with self._lock:
            self._armed.append(fault)

    def take(self, method: str, path: str, request_id: str, installation: str) -> Answer | None:
        """The error answer for this request if an armed fault matches it (using up one of its count)."""
        with self._lock:
            fault = next((f for f in self._armed if re.search(f.match, f"{method} {path}")), None)
            if fault is None:
                return None
            fault.count -= 1
            if fault.count <= 0:
                self._armed.remove(fault)
        return _answer(fault, request_id, installation)


def _answer(fault: Fault, request_id: str, installation: str) -> Answer:
    if fault.kind == "server":
        body = {"message": "Server Error"} if fault.status == 500 else {"message": "Bad Gateway"}
        return Answer(fault.status, body, {})
    if fault.kind == "secondary":
        headers = {"retry-after": str(fault.retry_after)} if fault.retry_after is not None else {}
        message = SECONDARY_MESSAGE.format(request_id=request_id)
        return Answer(fault.status, {"message": message, "documentation_url": DOCS["secondary"]}, headers)
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + fault.reset_in)}
    message = PRIMARY_MESSAGE.format(installation=installation)
    return Answer(fault.status, {"message": message, "documentation_url": DOCS["primary"]}, headers)
