"""What the web process adds to every request where it enters the app and its response leaves (WSGI): the
request's id, on the log records written while it is handled and in X-Request-Id, and the security headers (a
CSP and no framing for pages; no caching, no sniffing, no referrer for every response)."""

from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask

from service import logcontext
from service.api.problems import assign_request_id


def content_security_policy(form_targets: tuple[str, ...] = (), *, inline_styles: bool = True) -> str:
    """The pages' policy: nothing from elsewhere, inline styles only when allowed, forms posted here or to
    `form_targets`. The dashboard's pages take theirs from one static stylesheet and allow no inline style."""
    forms = " ".join(("'self'", *(target.rstrip("/") for target in form_targets)))
    styles = "'self' 'unsafe-inline'" if inline_styles else "'self'"
    return (
        "default-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
        f"form-action {forms}; style-src {styles}; img-src 'self' data:; "
        "script-src 'self'; connect-src 'self'"
    )


# Links may carry one-time tokens (registration, sign-in): never pass them on to another site. Job records, keys
# shown once and one-time pages must not stay in a browser's or a proxy's cache.
_EVERY_RESPONSE = (
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
)

Headers = list[tuple[str, str]]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict, StartResponse], Iterable[bytes]]


class Edge:
    """WSGI middleware around the Flask app. Added here rather than by Flask's request hooks, which cost a
    request ~4 times as much: werkzeug's header objects validate and copy each header again."""

    def __init__(self, app: WsgiApp, *, form_targets: tuple[str, ...] = ()) -> None:
        self._app = app
        page_headers = (("Content-Security-Policy", content_security_policy(form_targets)), ("X-Frame-Options", "DENY"))
        self._every = _lowered(_EVERY_RESPONSE)
        self._pages = _lowered(_EVERY_RESPONSE + page_headers)

    def __call__(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        rid = assign_request_id(environ)

        def start(status: str, headers: Headers, exc_info: Any = None) -> Any:
            return start_response(status, self._completed(headers, rid), exc_info)

        logcontext.set_request(rid)
        try:
            return self._app(environ, start)
        finally:
            logcontext.set_request(None)

    def _completed(self, headers: Headers, rid: str) -> Headers:
        """`headers` with the request id and the security headers a view did not set itself."""
        present = set()
        page = False
        for name, value in headers:
            lowered = name.lower()
            present.add(lowered)
            if lowered == "content-type":
                page = value.partition(";")[0].strip().lower() == "text/html"
        added = [] if "x-request-id" in present else [("X-Request-Id", rid)]
        added += [
            (name, value) for lowered, name, value in (self._pages if page else self._every) if lowered not in present
        ]
        return headers + added


def _lowered(headers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str, str], ...]:
    return tuple((name.lower(), name, value) for name, value in headers)


def install(app: Flask, *, form_targets: tuple[str, ...] = ()) -> None:
    """Wrap `app`'s WSGI callable in the Edge (the way Flask documents for middleware)."""
    app.wsgi_app = Edge(app.wsgi_app, form_targets=form_targets)  # type: ignore[method-assign]
