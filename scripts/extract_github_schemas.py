"""Extract the GitHub REST and webhook schemas Copydesk's tests check against, from pinned npm packages.

    .venv/bin/python scripts/extract_github_schemas.py [--cache DIR]

Downloads `@octokit/openapi` and `@octokit/webhooks-examples` from registry.npmjs.org (checked against
their published sha512 integrity) and writes two small JSON files under `tests/data/github/`:

- `openapi-operations.json`: for each operation the GitHub emulator serves, its method, path, request
  body schema and response schemas (`application/json`; an operation that also documents other media types,
  such as a diff, gets their schemas under `otherMediaTypes`, by status and media type; a diff or a patch that
  only the operation's description lists, as `pulls/get` does, is added there as text); the webhook payload
  schemas of the events Copydesk routes; and only the `components.schemas` those reach. OpenAPI 3.0 `nullable` is rewritten to JSON Schema 2020-12
  (`type: [..., "null"]` or `anyOf [..., null]`); descriptions, examples and `x-*` keys are dropped.
- `webhook-examples.json`: a few real example payloads per event and action.

Re-running with the same pins writes byte-identical files.
"""

import argparse
import base64
import hashlib
import io
import json
import sys
import tarfile
import urllib.request
from pathlib import Path

OPENAPI = (
    "@octokit/openapi",
    "23.0.2",
    "sha512-pV8M7L9GY23AybNvTmo2nyjmpmnt6+2sRE/tqr0ZLQcPS4lnw7u5eZGNmwRNkBC3D7gZXbFx5AHzLUVRBXGDhg==",
)
EXAMPLES = (
    "@octokit/webhooks-examples",
    "7.6.1",
    "sha512-De6U3XB6O3DtCa7bKgCMzTHdeopqqZ6SNivMYJnK65ierKL1AnNIA0tkRYCRS7lwGT792d+Ps1WbfHlso6MynQ==",
)
# The non-dereferenced description: shared components stay shared, which keeps the output small.
OPENAPI_MEMBER = "package/generated/api.github.com.json"
EXAMPLES_MEMBER = "package/api.github.com/index.json"
OUT_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "github"

OPERATIONS = (
    "apps/get-authenticated",
    "apps/create-installation-access-token",
    "apps/list-repos-accessible-to-installation",
    "apps/create-from-manifest",
    "repos/get",
    "repos/get-collaborator-permission-level",
    "pulls/list",
    "pulls/create",
    "pulls/get",
    # Automations: review requests on the docs pull request from the source pull requests' authors, when they are
    # collaborators of the docs repository.
    "pulls/request-reviewers",
    "repos/check-collaborator",
    # The dashboard's diff of a GitHub job's pull request, in the diff media type.
    "repos/compare-commits-with-basehead",
    "pulls/update",
    "pulls/create-reply-for-review-comment",
    "issues/create-comment",
    "issues/list-comments",
    # One tracking comment per round, edited in place.
    "issues/update-comment",
    # Answers in review threads: a review's line comments, and the thread replies already posted.
    "pulls/list-review-comments",
    "pulls/get-review",
    "pulls/list-comments-for-review",
    # The CI feedback loop: the failing checks and statuses of a head commit, and the base branch's config.
    "checks/list-for-ref",
    "checks/list-annotations",
    "repos/get-combined-status-for-ref",
    "repos/get-content",
    "reactions/create-for-issue-comment",
    "reactions/create-for-pull-request-review-comment",
    "reactions/create-for-issue",
    "git/delete-ref",
    # The dashboard's sign-in with GitHub, with the user-to-server token.
    "users/get-authenticated",
    "apps/list-installations-for-authenticated-user",
    "orgs/get-membership-for-authenticated-user",
)
# (event, action or None); the OpenAPI document names them "<event>-<action>" with dashes.
WEBHOOKS = (
    ("installation", "created"),
    ("installation", "deleted"),
    ("installation", "suspend"),
    ("installation", "unsuspend"),
    ("installation_repositories", "added"),
    ("installation_repositories", "removed"),
    ("issue_comment", "created"),
    ("issue_comment", "edited"),
    ("check_run", "completed"),
    ("check_suite", "completed"),
    ("status", None),
    ("repository", "renamed"),
    ("repository", "transferred"),
    ("pull_request", "closed"),
    ("pull_request", "review_requested"),
    ("pull_request_review", "submitted"),
    ("pull_request_review_comment", "created"),
    ("ping", None),
)
EXAMPLES_PER_ACTION = 2
# Text media types some operations document only in their description's list of custom media types (a pull
# request's diff); they are added to the operation's 200 answer as text, the schema compare gives them.
DESCRIBED_MEDIA_TYPES = ("application/vnd.github.diff", "application/vnd.github.patch")
# Annotations and OpenAPI-only keywords that do not constrain an instance.
DROPPED_KEYWORDS = {
    "description",
    "example",
    "examples",
    "title",
    "summary",
    "externalDocs",
    "xml",
    "discriminator",
    "readOnly",
    "writeOnly",
    "deprecated",
    "nullable",
}
# Keywords whose value maps names to schemas (the names are data, not keywords).
SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}


class IntegrityError(Exception):
    """A downloaded tarball does not match its pinned integrity."""


def fetch_tarball(package: tuple[str, str, str], cache: Path | None) -> bytes:
    """The package tarball, from the cache folder when present there, else from the npm registry."""
    name, version, integrity = package
    filename = f"{name.split('/')[-1]}-{version}.tgz"
    cached = cache / filename if cache else None
    if cached and cached.exists():
        data = cached.read_bytes()
    else:
        url = f"https://registry.npmjs.org/{name}/-/{filename}"
        with urllib.request.urlopen(url, timeout=120) as response:
            data = response.read()
    digest = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if digest != integrity:
        raise IntegrityError(f"{name}@{version}: integrity {digest} is not the pinned {integrity}")
    if cached and not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(data)
    return data


def read_member(tarball: bytes, member: str):
    """Parse one JSON file inside a .tgz."""
    return json.loads(read_text_member(tarball, member))


def read_text_member(tarball: bytes, member: str) -> str:
    """One text file inside a .tgz."""
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        handle = archive.extractfile(member)
        if handle is None:
            raise ValueError(f"{member} is not a regular file in the package")
        return handle.read().decode("utf-8")


def clean_schema(node):
    """A JSON Schema 2020-12 copy of an OpenAPI 3.0 schema, without annotations."""
    if isinstance(node, list):
        return [clean_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in DROPPED_KEYWORDS or key.startswith("x-"):
            continue
        if key in SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: clean_schema(sub) for name, sub in value.items()}
        elif key in ("enum", "const", "default", "required"):
            out[key] = value
        else:
            out[key] = clean_schema(value)
    if node.get("nullable") is True:
        out = allow_null(out)
    return out


def allow_null(schema: dict) -> dict:
    """OpenAPI 3.0 `nullable: true` said in 2020-12 terms."""
    if "enum" in schema and None not in schema["enum"]:
        schema = {**schema, "enum": [*schema["enum"], None]}
    kind = schema.get("type")
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list):
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def component_name(ref: str, kind: str) -> str | None:
    prefix = f"#/components/{kind}/"
    return ref[len(prefix) :] if ref.startswith(prefix) else None


def schema_refs(node):
    """Every `$ref` string inside a JSON value."""
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from schema_refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from schema_refs(item)


def reachable_components(document: dict, roots: list) -> dict:
    """The cleaned `components.schemas` entries that `roots` reach, sorted by name."""
    schemas = document["components"]["schemas"]
    found: dict = {}
    pending = [ref for root in roots for ref in schema_refs(root)]
    while pending:
        name = component_name(pending.pop(), "schemas")
        if name is None or name in found:
            continue
        found[name] = clean_schema(schemas[name])
        pending.extend(schema_refs(found[name]))
    return dict(sorted(found.items()))


def resolve(document: dict, node: dict, kind: str) -> dict:
    """Follow a `#/components/<kind>/...` reference (responses, requestBodies)."""
    while "$ref" in node:
        node = document["components"][kind][component_name(node["$ref"], kind)]
    return node


def json_schema_of(content: dict | None):
    media = (content or {}).get("application/json")
    return clean_schema(media["schema"]) if media and "schema" in media else None


def other_media_schemas(content: dict | None) -> dict:
    """The schemas of a response's media types other than JSON (a diff, a patch), by media type."""
    return {
        media: clean_schema(body["schema"])
        for media, body in sorted((content or {}).items())
        if media != "application/json" and "schema" in body
    }


def described_media_types(description: str) -> dict:
    """The DESCRIBED_MEDIA_TYPES that an operation's description lists as custom media types, each as text."""
    return {media: {"type": "string"} for media in DESCRIBED_MEDIA_TYPES if f"**`{media}`**" in description}


def operations(document: dict) -> dict:
    """The listed operations: method, path, request body schema, response schema per status."""
    index = {
        op["operationId"]: (method, path, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and "operationId" in op
    }
    result = {}
    for operation_id in OPERATIONS:
        method, path, op = index[operation_id]
        body = resolve(document, op["requestBody"], "requestBodies") if "requestBody" in op else None
        responses = {
            status: json_schema_of(resolve(document, response, "responses").get("content"))
            for status, response in sorted(op["responses"].items())
        }
        result[operation_id] = {
            "method": method.upper(),
            "path": path,
            "requestBody": json_schema_of(body["content"]) if body else None,
            "requestBodyRequired": bool(body and body.get("required")),
            "responses": responses,
        }
        others = {
            status: other_media_schemas(resolve(document, response, "responses").get("content"))
            for status, response in sorted(op["responses"].items())
        }
        if "200" in others:
            others["200"] = {**described_media_types(op.get("description") or ""), **others["200"]}
        # Only where there are some: the other operations' entries stay as they were.
        if any(others.values()):
            result[operation_id]["otherMediaTypes"] = {status: found for status, found in others.items() if found}
    return result


def webhooks(document: dict) -> dict:
    """The payload schema of each listed webhook event and action, keyed "event" or "event.action"."""
    result = {}
    for event, action in WEBHOOKS:
        name = event.replace("_", "-") + (f"-{action.replace('_', '-')}" if action else "")
        post = document["x-webhooks"][name]["post"]
        result[f"{event}.{action}" if action else event] = json_schema_of(post["requestBody"]["content"])
    return result


def examples(catalogue: list) -> dict:
    """Up to EXAMPLES_PER_ACTION real payloads per listed event and action."""
    by_event = {entry["name"]: entry["examples"] for entry in catalogue}
    result = {}
    for event, action in WEBHOOKS:
        chosen = [e for e in by_event.get(event, []) if action is None or e.get("action") == action]
        if chosen:
            result[f"{event}.{action}" if action else event] = chosen[:EXAMPLES_PER_ACTION]
    return result


def write_json(path: Path, value) -> int:
    text = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return len(text.encode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, help="folder to keep downloaded tarballs in")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)

    document = read_member(fetch_tarball(OPENAPI, args.cache), OPENAPI_MEMBER)
    ops, hooks = operations(document), webhooks(document)
    roots = (
        [op["requestBody"] for op in ops.values()]
        + [schema for op in ops.values() for schema in op["responses"].values()]
        + [op.get("otherMediaTypes", {}) for op in ops.values()]
        + list(hooks.values())
    )
    schemas = {
        "source": f"{OPENAPI[0]}@{OPENAPI[1]} {OPENAPI_MEMBER} (OpenAPI {document['openapi']}), "
        "nullable rewritten for JSON Schema 2020-12",
        "operations": ops,
        "webhooks": hooks,
        "components": {"schemas": reachable_components(document, roots)},
    }
    catalogue = read_member(fetch_tarball(EXAMPLES, args.cache), EXAMPLES_MEMBER)
    payloads = {"source": f"{EXAMPLES[0]}@{EXAMPLES[1]} {EXAMPLES_MEMBER}", "examples": examples(catalogue)}

    args.out.mkdir(parents=True, exist_ok=True)
    for name, value in (("openapi-operations.json", schemas), ("webhook-examples.json", payloads)):
        size = write_json(args.out / name, value)
        print(f"wrote {args.out / name} ({size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
