"""Security headers on every response: a CSP and no framing for pages, no caching, no sniffing, no referrer."""

from flask import Flask, Response


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


def install(app: Flask, *, form_targets: tuple[str, ...] = ()) -> None:
    """Add the headers to every response of `app`; a view that sets one of them keeps its own value."""
    page_headers = (("Content-Security-Policy", content_security_policy(form_targets)), ("X-Frame-Options", "DENY"))

    @app.after_request
    def secure(response: Response) -> Response:
        wanted = _EVERY_RESPONSE + page_headers if response.mimetype == "text/html" else _EVERY_RESPONSE
        _add_missing(response, wanted)
        return response


def _add_missing(response: Response, wanted: tuple[tuple[str, str], ...]) -> None:
    # One pass over the response's few headers: werkzeug's setdefault looks each name up by raising and catching a
    # KeyError, which cost this hook, run on every response, most of its time.
    present = {name.lower() for name, _ in response.headers.items()}
    for name, value in wanted:
        if name.lower() not in present:
            response.headers.add(name, value)
