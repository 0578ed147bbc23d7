"""GitHub's published schemas for the operations and webhooks Copydesk uses, as test assertions.

The data comes from `scripts/extract_github_schemas.py` (GitHub's OpenAPI description in `@octokit/openapi`
and the example payloads in `@octokit/webhooks-examples`):

    validate_response("POST", "/repos/acme/docs/pulls", 201, response.json())
    validate_response("GET", "/repos/acme/docs/compare/main...topic", 200, response.text,
                      media_type="application/vnd.github.diff")
    validate_request("pulls/create", body)
    validate_webhook("issue_comment", "created", payload)

Each raises GitHubSchemaError (an AssertionError) naming the operation and what does not match.
"""

import functools
import json
import re
from pathlib import Path

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from tests.openapi_check import _escape, _json_path, _most_relevant

DATA = Path(__file__).parent / "data" / "github"
URI = "urn:github:openapi-operations"
# GitHub documents only some error statuses per operation, yet answers every one of them (401, 404, rate limits,
# 5xx) with the same basic error body.
GENERIC_ERROR = "#/components/schemas/basic-error"
JSON = "application/json"
# Path parameters GitHub marks `x-multi-segment`: they keep their slashes (heads/feature/x, main...feature/x,
# .copydesk/config.yml).
MULTI_SEGMENT = {"{ref}", "{basehead}", "{path}"}


class GitHubSchemaError(AssertionError):
    """An instance does not match GitHub's schema for it."""


@functools.cache
def document() -> dict:
    return json.loads((DATA / "openapi-operations.json").read_text(encoding="utf-8"))


@functools.cache
def _registry() -> Registry:
    return Registry().with_resource(URI, Resource.from_contents(document(), default_specification=DRAFT202012))


@functools.cache
def _templates() -> list[tuple[re.Pattern, str, str]]:
    """(regex, method, operation id) for every operation, literal segments before parameters."""
    found = []
    for operation_id, op in document()["operations"].items():
        parts = re.split(r"(\{[^}]+\})", op["path"])
        pattern = "".join(
            (".+" if p in MULTI_SEGMENT else "[^/]+") if p.startswith("{") else re.escape(p) for p in parts
        )
        found.append((re.compile(f"^{pattern}$"), op["method"], operation_id))
    return sorted(found, key=lambda item: document()["operations"][item[2]]["path"].count("{"))


def operation_for(method: str, path: str) -> str | None:
    """The operation id of a concrete request ("GET", "/repos/acme/docs/pulls?state=all" -> "pulls/list")."""
    path = path.split("?", 1)[0]
    return next((op for regex, verb, op in _templates() if verb == method.upper() and regex.match(path)), None)


def _operation(method: str, path_or_operation: str) -> str:
    if path_or_operation in document()["operations"]:
        return path_or_operation
    operation = operation_for(method, path_or_operation)
    if operation is None:
        raise GitHubSchemaError(f"{method} {path_or_operation}: not one of the extracted operations")
    return operation


def validate_response(method: str, path_or_operation: str, status: int, body, *, media_type: str = JSON) -> None:
    """Assert that a response body is what GitHub documents for this operation, status and media type (the
    response's Content-Type without its parameters; a diff or a patch is checked as the text it is)."""
    operation = _operation(method, path_or_operation)
    if media_type != JSON:
        _check_other_media(operation, status, media_type, body)
        return
    responses = document()["operations"][operation]["responses"]
    where = f"{operation} -> {status}"
    if str(status) in responses and responses[str(status)] is not None:
        _check(where, {"$ref": f"{URI}#/operations/{_escape(operation)}/responses/{status}"}, body)
    elif status == 204 or str(status) in ("304",):
        if body not in (None, b"", ""):
            raise GitHubSchemaError(f"{where}: GitHub sends no body, got {body!r}")
    elif status >= 400:
        _check(f"{where} (generic error)", {"$ref": URI + GENERIC_ERROR}, body)
    else:
        raise GitHubSchemaError(f"{where}: status {status} is not documented (documented: {', '.join(responses)})")


def _check_other_media(operation: str, status: int, media_type: str, body) -> None:
    """A body in a media type other than JSON, against the schema GitHub documents for that media type."""
    documented = document()["operations"][operation].get("otherMediaTypes", {}).get(str(status), {})
    where = f"{operation} -> {status} ({media_type})"
    if media_type not in documented:
        raise GitHubSchemaError(
            f"{where}: GitHub documents no such answer (documented: "
            f"{', '.join([JSON, *documented]) if documented else JSON})"
        )
    _check(
        where, {"$ref": f"{URI}#/operations/{_escape(operation)}/otherMediaTypes/{status}/{_escape(media_type)}"}, body
    )


def validate_request(operation: str, body) -> None:
    """Assert that a request body matches the operation's request schema."""
    op = document()["operations"][operation]
    if op["requestBody"] is None:
        if body not in (None, {}, b"", ""):
            raise GitHubSchemaError(f"{operation}: takes no request body, got {body!r}")
        return
    if body is None:
        if op["requestBodyRequired"]:
            raise GitHubSchemaError(f"{operation}: a request body is required")
        return
    _check(f"{operation} request", {"$ref": f"{URI}#/operations/{_escape(operation)}/requestBody"}, body)


def validate_webhook(event: str, action: str | None, payload: dict) -> None:
    """Assert that a webhook payload matches GitHub's schema for the event and action."""
    key = f"{event}.{action}" if action else event
    if key not in document()["webhooks"]:
        raise GitHubSchemaError(f"webhook {key}: not one of the extracted events ({', '.join(document()['webhooks'])})")
    _check(f"webhook {key}", {"$ref": f"{URI}#/webhooks/{_escape(key)}"}, payload)


def webhook_examples(event: str, action: str | None = None) -> list[dict]:
    """Real example payloads for the event and action, from @octokit/webhooks-examples."""
    examples = json.loads((DATA / "webhook-examples.json").read_text(encoding="utf-8"))["examples"]
    return examples[f"{event}.{action}" if action else event]


def _check(where: str, schema: dict, instance) -> None:
    validator = Draft202012Validator(schema, registry=_registry(), format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"  at {_json_path(e)}: {e.message[:300]}" for e in map(_most_relevant, errors[:8])]
        raise GitHubSchemaError(f"{where}: does not match GitHub's schema:\n" + "\n".join(lines))
