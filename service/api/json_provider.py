"""Flask's JSON (jsonify, request.get_json) by service.fastjson."""

from typing import Any, cast

from flask import Flask, Response
from flask.json.provider import DefaultJSONProvider

from service import fastjson


class FastJSONProvider(DefaultJSONProvider):
    """Flask's default provider with orjson doing the work: the same JSON for every value Flask's takes (dates,
    dataclasses, UUIDs and decimals go through its `default`), keys in the order given, text as UTF-8 rather than
    ASCII escapes. A call with options of `json.dumps` or `json.loads` is served by Flask's own."""

    sort_keys = False  # the API's records list the spec's fields first

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        if kwargs:
            return super().dumps(obj, **kwargs)
        return fastjson.dumps(obj, default=self.default).decode()

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return super().loads(s, **kwargs) if kwargs else fastjson.loads(s)

    def response(self, *args: Any, **kwargs: Any) -> Response:
        body = self.body(self._prepare_response_obj(args, kwargs))
        # Typed as the sans-I/O app, whose response takes no body; the provider is only ever given a Flask app.
        return cast(Flask, self._app).response_class(body, mimetype=self.mimetype)

    def body(self, obj: Any) -> bytes:
        """The body `jsonify(obj)` answers with (indented in debug mode, as Flask's)."""
        pretty = self.compact is False or (self.compact is None and self._app.debug)
        return fastjson.dumps(obj, indent=pretty, default=self.default) + b"\n"
