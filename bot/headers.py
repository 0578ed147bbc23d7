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


def install(app: Flask, *, form_targets: tuple[str, ...] = ()) -> None:
    """Add the headers to every response of `app`; a view that sets one of them keeps its own value."""
    policy = content_security_policy(form_targets)

    @app.after_request
    def secure(response: Response) -> Response:
        headers = response.headers
        headers.setdefault("X-Content-Type-Options", "nosniff")
        # Links may carry one-time tokens (registration, sign-in): never pass them on to another site.
        headers.setdefault("Referrer-Policy", "no-referrer")
        # Job records, keys shown once and one-time pages must not stay in a browser's or a proxy's cache.
        headers.setdefault("Cache-Control", "no-store")
        if response.mimetype == "text/html":
            headers.setdefault("Content-Security-Policy", policy)
            headers.setdefault("X-Frame-Options", "DENY")
        return response
