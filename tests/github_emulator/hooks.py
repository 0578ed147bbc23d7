"""Webhook deliveries as GitHub sends them: a JSON body signed with the webhook secret, GitHub's headers,
recorded so tests can inspect and redeliver them."""

import hmac
import json
import queue
import threading
import uuid
from dataclasses import dataclass, field

import requests

USER_AGENT = "GitHub-Hookshot/emulator"


def signature(body: bytes, secret: str, digest: str = "sha256") -> str:
    """The `X-Hub-Signature(-256)` value for `body`."""
    return f"{digest}=" + hmac.new(secret.encode(), body, digest).hexdigest()


@dataclass
class Delivery:
    id: str
    event: str
    body: bytes = field(repr=False)
    headers: dict = field(repr=False)
    url: str
    status: int | None = None
    error: str | None = None
    redelivery: bool = False

    @property
    def payload(self) -> dict:
        return json.loads(self.body)


class WebhookSender:
    """Posts deliveries to the configured URL: in the caller's thread, or queued in order from a background
    thread for events that API calls cause (GitHub delivers those while the API call has already returned)."""

    def __init__(self, app_id: int, hook_id: int) -> None:
        self.app_id, self.hook_id = app_id, hook_id
        self.url: str | None = None
        self._secret: str | None = None
        self.deliveries: list[Delivery] = []
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def configure(self, url: str | None, secret: str | None) -> None:
        self.url, self._secret = url, secret

    def deliver(self, event: str, payload: dict, *, background: bool = False) -> Delivery | None:
        """Sign and send one event; None when no URL is configured."""
        if self.url is None:
            return None
        body = json.dumps(payload).encode()
        delivery_id = str(uuid.uuid4())
        headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery_id,
            "X-GitHub-Hook-ID": str(self.hook_id),
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": str(self.app_id),
            "User-Agent": USER_AGENT,
            "Content-Type": "application/json",
        }
        if self._secret:
            headers["X-Hub-Signature"] = signature(body, self._secret, "sha1")
            headers["X-Hub-Signature-256"] = signature(body, self._secret)
        delivery = Delivery(delivery_id, event, body, headers, self.url)
        with self._lock:
            self.deliveries.append(delivery)
        if background:
            self._start()
            self._queue.put(delivery)
        else:
            self._post(delivery)
        return delivery

    def redeliver(self, delivery_id: str) -> Delivery:
        """Send a recorded delivery again: same id, same headers, same body (as GitHub's "Redeliver")."""
        original = next(d for d in self.deliveries if d.id == delivery_id)
        again = Delivery(
            original.id, original.event, original.body, dict(original.headers), original.url, redelivery=True
        )
        with self._lock:
            self.deliveries.append(again)
        self._post(again)
        return again

    def flush(self, timeout: float = 10) -> None:
        """Wait until every queued delivery has been posted."""
        if self._thread is not None:
            done = threading.Event()
            self._queue.put(done)
            if not done.wait(timeout):
                raise TimeoutError("webhook deliveries still queued")

    def stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=10)
            self._thread = None

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if isinstance(item, threading.Event):
                item.set()
            else:
                self._post(item)

    @staticmethod
    def _post(delivery: Delivery) -> None:
        try:
            response = requests.post(delivery.url, data=delivery.body, headers=delivery.headers, timeout=10)
            delivery.status = response.status_code
        except requests.RequestException as exc:
            delivery.error = type(exc).__name__
