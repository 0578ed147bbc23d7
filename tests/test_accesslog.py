"""The access log's atoms without secrets, and the API's timestamps, checked without a server."""

from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

from gunicorn.config import Config

from bot.accesslog import REDACTED, RedactingLogger
from service.clock import iso


def _atoms(*, query: str, request_headers: list, response_headers: list, environ: dict) -> dict:
    config = Config()
    config.set("accesslog", "-")
    response = SimpleNamespace(status="200 OK", sent=2, headers=response_headers)
    base = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": f"/github/register?{query}",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "PATH_INFO": "/github/register",
        "QUERY_STRING": query,
        "REMOTE_ADDR": "127.0.0.1",
    }
    return RedactingLogger(config).atoms(response, request_headers, {**base, **environ}, timedelta(milliseconds=3))


def test_credential_headers_and_secret_parameters_are_redacted_and_the_rest_kept():
    atoms = _atoms(
        query="token=s3cr3t&page=2",
        request_headers=[("AUTHORIZATION", "Bearer cdk_x"), ("COOKIE", "session=abc"), ("X-REQUEST-ID", "req-1")],
        response_headers=[("Set-Cookie", "session=def"), ("X-Request-Id", "req-1"), ("Location", "/next?code=c0de")],
        environ={"HTTP_AUTHORIZATION": "Bearer cdk_x", "HTTP_X_HUB_SIGNATURE_256": "sha256=ff", "HTTP_ACCEPT": "a=b"},
    )
    for atom in ("{authorization}i", "{cookie}i", "{set-cookie}o", "{http_authorization}e"):
        assert atoms[atom] == REDACTED
    assert atoms["{http_x_hub_signature_256}e"] == REDACTED
    assert atoms["r"] == f"GET /github/register?token={REDACTED}&page=2 HTTP/1.1"
    assert atoms["q"] == f"token={REDACTED}&page=2"
    assert atoms["{location}o"] == f"/next?code={REDACTED}"
    assert atoms["{x-request-id}o"] == "req-1" and atoms["{http_accept}e"] == "a=b"


def test_iso_is_utc_with_milliseconds_and_a_z():
    moment = datetime(2026, 3, 4, 5, 6, 7, 891999, tzinfo=timezone(timedelta(hours=2)))
    assert iso(moment) == "2026-03-04T03:06:07.891Z"
    assert iso(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01T00:00:00.000Z"
