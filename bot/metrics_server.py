"""A worker host's own `/metrics` (COPYDESK_WORKER_METRICS_PORT), for workers on hosts that run no web server:
this host's metric files, behind the same bearer token as the web's `/metrics`."""

import hmac
import logging
import threading
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app

from service import metrics
from service.settings import Settings

log = logging.getLogger(__name__)


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args) -> None:  # noqa: A002 - the standard library's name
        return  # one line per scrape every few seconds is noise; failures show in Prometheus's `up`


def serve_in_background(settings: Settings) -> WSGIServer | None:
    """Serve `/metrics` on COPYDESK_WORKER_METRICS_PORT from a daemon thread (None when the port is not set)."""
    port = settings.worker_metrics_port
    if port is None:
        return None
    assert settings.metrics_token is not None  # Settings refuses a metrics port without a token
    token = settings.metrics_token
    scrape = make_wsgi_app(metrics.registry(settings.metrics_dir))

    def app(environ, start_response):
        given = environ.get("HTTP_AUTHORIZATION", "")
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found\n"]
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            start_response(
                "401 Unauthorized", [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Bearer realm="copydesk"')]
            )
            return [b"send Authorization: Bearer <COPYDESK_METRICS_TOKEN>\n"]
        return scrape(environ, start_response)

    server = make_server("0.0.0.0", port, app, handler_class=_QuietHandler)  # noqa: S104 - an internal port
    threading.Thread(target=server.serve_forever, name="copydesk-metrics", daemon=True).start()
    log.info("serving this host's metrics on port %d (/metrics, bearer token)", port)
    return server
