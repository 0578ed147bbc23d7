"""Check real HTTP responses against the OpenAPI document: status, headers and body.

    validator = ResponseValidator(openapi_document(...))
    validator.validate("GET", "/v2/agent/prj_X/job/job_Y", 200, response.get_json(), response.headers)

Every mismatch raises AssertionError naming the operation, the status and what is wrong.
"""

import json
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOCUMENT_URI = "urn:copydesk:openapi"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _escape(token: str) -> str:
    """One JSON Pointer reference token."""
    return token.replace("~", "~0").replace("/", "~1")


class ResponseValidator:
    """Finds the operation of a concrete request and checks a response against what it documents."""

    def __init__(self, document: Mapping) -> None:
        self.document = document
        resource = Resource.from_contents(document, default_specification=DRAFT202012)
        self._registry = Registry().with_resource(DOCUMENT_URI, resource)
        # Templates with fewer parameters first, so a literal segment beats a `{param}` one.
        self._paths = sorted(
            ((self._template_regex(template), template) for template in document.get("paths", {})),
            key=lambda item: item[1].count("{"),
        )

    @staticmethod
    def _template_regex(template: str) -> re.Pattern:
        parts = re.split(r"(\{[^}/]+\})", template)
        return re.compile("^" + "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts if p) + "$")

    # -- lookup ------------------------------------------------------------------------------

    def template_for(self, path: str) -> str | None:
        """The document's path template that `path` (concrete, maybe with a query) matches."""
        path = urlsplit(path).path
        for regex, template in self._paths:
            if regex.match(path):
                return template
        return None

    def _resolve(self, pointer: str) -> tuple[str, dict]:
        """Follow `$ref`s inside the document from `pointer`; return the final pointer and object."""
        node = self._at(pointer)
        seen = set()
        while isinstance(node, Mapping) and "$ref" in node:
            target = node["$ref"]
            assert target.startswith("#/"), f"only local references are supported, not {target!r}"
            assert target not in seen, f"reference loop at {target!r}"
            seen.add(target)
            pointer = target[1:]
            node = self._at(pointer)
        return pointer, node

    def _at(self, pointer: str):
        node = self.document
        for token in pointer.lstrip("/").split("/"):
            node = node[token.replace("~1", "/").replace("~0", "~")]
        return node

    def _response_pointer(self, method: str, path: str, status: int) -> str:
        where = f"{method.upper()} {path} -> {status}"
        template = self.template_for(path)
        components = self.document.get("components", {}).get("responses", {})
        if template is None:
            # A path with no operation: only the documented generic 404 fits.
            if status == 404 and "NotFound" in components:
                return "/components/responses/NotFound"
            raise AssertionError(f"{where}: no path template in the document matches {path!r}")
        item = self.document["paths"][template]
        operation = item.get(method.lower())
        if operation is None:
            if status == 405 and "MethodNotAllowed" in components:
                return "/components/responses/MethodNotAllowed"
            documented = sorted(m.upper() for m in METHODS if m in item)
            raise AssertionError(
                f"{where}: the document has no {method.upper()} operation on {template} "
                f"(it has {', '.join(documented)})"
            )
        responses = operation.get("responses", {})
        for key in (str(status), f"{str(status)[0]}XX", "default"):
            if key in responses:
                return f"/paths/{_escape(template)}/{method.lower()}/responses/{key}"
        raise AssertionError(
            f"{where}: status {status} is not documented for {operation.get('operationId')} "
            f"({template}); documented: {', '.join(sorted(responses))}"
        )

    # -- checks ------------------------------------------------------------------------------

    def validate(
        self, method: str, path: str, status: int, body: dict | list | None, headers: Mapping | None = None
    ) -> None:
        """Assert that a response with this status, body and headers is what the document promises."""
        where = f"{method.upper()} {path} -> {status}"
        pointer, response = self._resolve(self._response_pointer(method, path, status))
        if headers is not None:
            self._check_headers(where, pointer, response, headers)
        content = response.get("content") or {}
        if not content:
            assert body in (None, b"", ""), f"{where}: the document promises no body, got {body!r}"
            return
        media_type = self._media_type(where, content, headers)
        assert body is not None, f"{where}: the document promises a {media_type} body, got none"
        schema_pointer = f"{pointer}/content/{_escape(media_type)}/schema"
        self._check_schema(where, schema_pointer, body)

    def validate_schema(self, name: str, instance) -> None:
        """Assert that `instance` matches `#/components/schemas/<name>` (e.g. a request body)."""
        self._check_schema(f"schema {name}", f"/components/schemas/{_escape(name)}", instance)

    def _media_type(self, where: str, content: Mapping, headers: Mapping | None) -> str:
        declared = _header(headers, "Content-Type") if headers is not None else None
        if declared is not None:
            media_type = declared.split(";")[0].strip().lower()
            assert media_type in content, (
                f"{where}: Content-Type {declared!r} is not documented; documented: {', '.join(content)}"
            )
            return media_type
        assert len(content) == 1, f"{where}: several media types documented ({', '.join(content)}); pass headers"
        return next(iter(content))

    def _check_headers(self, where: str, pointer: str, response: Mapping, headers: Mapping) -> None:
        for name, header in (response.get("headers") or {}).items():
            header_pointer, header = self._resolve(f"{pointer}/headers/{_escape(name)}")
            value = _header(headers, name)
            if value is None:
                assert not header.get("required"), f"{where}: required header {name} is missing"
                continue
            instance: object = value
            if (header.get("schema") or {}).get("type") == "integer":
                assert re.fullmatch(r"[0-9]+", value.strip()), f"{where}: header {name} is not an integer: {value!r}"
                instance = int(value)
            self._check_schema(f"{where}: header {name}", f"{header_pointer}/schema", instance)

    def _check_schema(self, where: str, pointer: str, instance) -> None:
        validator = Draft202012Validator(
            {"$ref": f"{DOCUMENT_URI}#{pointer}"},
            registry=self._registry,
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        )
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
        if errors:
            lines = [f"  at {_json_path(error)}: {error.message}" for error in map(_most_relevant, errors[:8])]
            shown = json.dumps(instance, default=str)
            if len(shown) > 2000:
                shown = shown[:2000] + "..."
            raise AssertionError(f"{where}: does not match #{pointer}:\n" + "\n".join(lines) + f"\n  instance: {shown}")


def _header(headers: Mapping, name: str) -> str | None:
    """A header's value, looked up case-insensitively (works for dicts and werkzeug Headers)."""
    getter = getattr(headers, "get", None)
    if getter is not None:
        value = getter(name)
        if value is not None:
            return value
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None


def _most_relevant(error: ValidationError) -> ValidationError:
    """Inside `anyOf`/`oneOf`, an error of the branch that came closest (fewest errors) to matching."""
    if not error.context:
        return error
    branches: dict = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    closest = min(branches.values(), key=len)
    return _most_relevant(min(closest, key=lambda e: len(e.absolute_path), default=error))


def _json_path(error) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
