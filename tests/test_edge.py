"""bot.edge: the request id and the security headers every response of the web process carries."""

import logging
import re

import pytest
from flask import Flask, Response, jsonify

from bot.edge import install
from service import logcontext
from service.api.problems import request_id

FRESH_ID = re.compile(r"req_[0-9a-f]{24}")


@pytest.fixture
def app():
    app = Flask(__name__)
    seen: dict[str, str | None] = {}

    @app.get("/json")
    def json_view():
        seen["logged"] = _tagged_request_id()
        return jsonify({"id": request_id()})

    @app.get("/page")
    def page():
        return Response("<p>hi</p>", mimetype="text/html")

    @app.get("/own")
    def own():
        response = Response("<p>mine</p>", content_type="Text/HTML; charset=utf-8")
        response.headers["cache-control"] = "max-age=60"
        response.headers["Content-Security-Policy"] = "default-src 'self'"
        return response

    install(app, form_targets=("https://github.example/",))
    app.extensions["seen"] = seen
    return app


def _tagged_request_id() -> str | None:
    """The request id a log record written now is tagged with."""
    record = logging.makeLogRecord({})
    logcontext.ContextFilter().filter(record)
    return record.request_id


def test_every_response_carries_a_fresh_request_id_that_the_view_and_its_logs_share(app):
    response = app.test_client().get("/json")
    rid = response.headers["X-Request-Id"]
    assert FRESH_ID.fullmatch(rid)
    assert response.get_json() == {"id": rid} and app.extensions["seen"]["logged"] == rid
    assert _tagged_request_id() is None
    assert app.test_client().get("/json").headers["X-Request-Id"] != rid


def test_a_sane_caller_id_is_kept_and_any_other_replaced(app):
    client = app.test_client()
    assert client.get("/json", headers={"X-Request-Id": "caller-1"}).headers["X-Request-Id"] == "caller-1"
    for given in ("x" * 129, "a\x7fb", "a\tb", ""):
        response = client.get("/json", headers={"X-Request-Id": given})
        assert FRESH_ID.fullmatch(response.headers["X-Request-Id"]), given
        assert response.get_json()["id"] == response.headers["X-Request-Id"]


def test_json_gets_the_headers_of_every_response_and_pages_also_a_csp_and_no_framing(app):
    client = app.test_client()
    for path in ("/json", "/page"):
        headers = client.get(path).headers
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "no-referrer" and headers["Cache-Control"] == "no-store"
    json_headers, page_headers = client.get("/json").headers, client.get("/page").headers
    assert "Content-Security-Policy" not in json_headers and "X-Frame-Options" not in json_headers
    assert page_headers["X-Frame-Options"] == "DENY"
    assert "form-action 'self' https://github.example;" in page_headers["Content-Security-Policy"]


def test_a_header_the_view_set_is_kept_whatever_its_case(app):
    headers = app.test_client().get("/own").headers
    assert headers.getlist("Cache-Control") == ["max-age=60"]
    assert headers.getlist("Content-Security-Policy") == ["default-src 'self'"]
    assert headers["X-Frame-Options"] == "DENY" and FRESH_ID.fullmatch(headers["X-Request-Id"])
