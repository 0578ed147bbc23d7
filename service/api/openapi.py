"""The OpenAPI 3.1 document of the HTTP API, served at `GET /v2/openapi.json`.

The document is built from small helpers so that each rule (a schema, a header, an error response)
is written once and referenced wherever it applies. It is the contract that the end-to-end tests
check every real response against (`tests/openapi_check.py`), so it states what the code answers,
status by status and header by header.
"""

from copy import deepcopy
from typing import Any

from service.api.problems import PROBLEMS
from service.job_events import EventType
from service.models import DeliveryStatus, JobStatus, MessageStatus, RoundOutcome

JSON = "application/json"
PROBLEM_JSON = "application/problem+json"
EVENT_STREAM = "text/event-stream"

_ULID = "[0-9A-HJKMNP-TV-Z]{26}"
JOB_ID_PATTERN = f"^job_{_ULID}$"
PROJECT_ID_PATTERN = f"^prj_{_ULID}$"
MESSAGE_ID_PATTERN = f"^msg_{_ULID}$"
WEBHOOK_ID_PATTERN = f"^whk_{_ULID}$"
DELIVERY_ID_PATTERN = "^dlv_[0-9a-f]{26}$"
EVENT_ID_PATTERN = "^[0-9]+-[0-9]+$"
# What `service.clock.iso` writes: UTC, milliseconds, a trailing Z.
TIMESTAMP_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$"


# -- small builders ----------------------------------------------------------------------------


def ref(kind: str, name: str) -> dict:
    """A reference to `#/components/<kind>/<name>`."""
    return {"$ref": f"#/components/{kind}/{name}"}


def nullable(schema: dict) -> dict:
    """`schema` or null: `type: [T, "null"]` for a typed schema, `anyOf` for a reference."""
    if "$ref" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    return {**schema, "type": [schema["type"], "null"]}


def closed_object(properties: dict, *, optional: tuple[str, ...] = (), **extra) -> dict:
    """An object with exactly these properties, all required except `optional` ones."""
    return {
        "type": "object",
        "properties": properties,
        "required": [name for name in properties if name not in optional],
        "additionalProperties": False,
        **extra,
    }


def string(description: str = "", **constraints) -> dict:
    schema = {"type": "string", **constraints}
    if description:
        schema["description"] = description
    return schema


def timestamp(description: str) -> dict:
    return string(description, format="date-time", pattern=TIMESTAMP_PATTERN)


def _when_status(status: str, then: dict, otherwise: dict) -> dict:
    """`then` applies to a job whose status is `status`, `otherwise` to every other job."""
    return {
        "if": {"properties": {"status": {"const": status}}, "required": ["status"]},
        "then": {"properties": then},
        "else": {"properties": otherwise},
    }


# -- schemas -----------------------------------------------------------------------------------


def _job_schema() -> dict:
    job = closed_object(
        {
            "id": string("Opaque, URL-safe, time-sortable: `job_` + a 26-character ULID.", pattern=JOB_ID_PATTERN),
            "status": ref("schemas", "JobStatus"),
            "source": closed_object(
                {
                    "repository": string("Web URL of the repository.", format="uri"),
                    "ref": string("The base ref (branch) the job started from."),
                },
                description="Source repository of the job.",
            ),
            "model": string("The AI model used for this job (`provider:model`)."),
            "prLink": nullable(
                string(
                    "URL of the pull request the agent opened. Null while the job is `active` (a follow-up run "
                    "included: the link shows again when the run ends), null until the agent has opened one, and null "
                    "when no files were changed.",
                    format="uri",
                )
            ),
            "createdAt": timestamp("When the job was created (ISO 8601, UTC)."),
            "archivedAt": nullable(timestamp("When the job was archived; null unless `status` is `archived`.")),
            "branch": nullable(string("The job's branch, `copydesk/<job id>`; null until the first run pushes it.")),
            "updatedAt": timestamp("When the record last changed."),
            "error": nullable(ref("schemas", "JobError"))
            | {"description": "Why the job failed: an object when `status` is `failed`, else null."},
            "automation": closed_object(
                {
                    "id": string("The automation's id."),
                    "runId": string("The run that started the job."),
                    "trigger": string("What fired it: `code_change`, `schedule`, `webhook` or `manual`."),
                },
                description="Present only on a job an automation started.",
            ),
        },
        optional=("automation",),
        description="An agent job. The spec's fields (`id` … `archivedAt`) plus `branch`, `updatedAt`, `error` and, "
        "on a job an automation started, `automation`.",
    )
    job["allOf"] = [
        _when_status("failed", then={"error": ref("schemas", "JobError")}, otherwise={"error": {"type": "null"}}),
        _when_status("archived", then={"archivedAt": {"type": "string"}}, otherwise={"archivedAt": {"type": "null"}}),
        {
            "if": {"properties": {"status": {"const": "active"}}, "required": ["status"]},
            "then": {"properties": {"prLink": {"type": "null"}}},
        },
    ]
    job["examples"] = [
        {
            "id": "job_01JR8Z6Q3V4W5X6Y7Z8A9B0C1D",
            "status": "completed",
            "source": {"repository": "https://github.com/acme/docs", "ref": "main"},
            "model": "anthropic:claude-sonnet-4-5",
            "prLink": "https://github.com/acme/docs/pull/42",
            "createdAt": "2025-01-01T12:00:00.000Z",
            "archivedAt": None,
            "branch": "copydesk/job_01JR8Z6Q3V4W5X6Y7Z8A9B0C1D",
            "updatedAt": "2025-01-01T12:03:10.250Z",
            "error": None,
        }
    ]
    return job


def _message_schemas() -> dict:
    def common(role: str) -> dict:
        return {
            "id": string("`msg_` + a 26-character ULID.", pattern=MESSAGE_ID_PATTERN),
            "role": {"const": role},
            "content": string("The prompt (user) or the agent's answer or summary (agent)."),
            "createdAt": timestamp("When the message was stored."),
        }

    user = closed_object(
        {
            **common("user"),
            "status": {
                "type": "string",
                "enum": [s.value for s in MessageStatus],
                "description": "`queued` until its run starts, then `running`, then `processed` or `failed`; "
                "`cancelled` when the job was cancelled (or archived) before it finished.",
            },
            "source": string(
                "Where the message came from: `api`, the code host for a pull-request comment, or `ci` "
                "for an automatic round that fixes the pull request's failing checks."
            ),
            "author": nullable(string("Who wrote it, when known (e.g. the commenter's login).")),
            "error": nullable(ref("schemas", "JobError")),
            "usage": nullable(ref("schemas", "Usage")),
            "outcome": {
                "type": ["string", "null"],
                "enum": [*(o.value for o in RoundOutcome), None],
                "description": "What its run did, once `processed` (null before, and when it failed or was "
                "cancelled): `changed` (it committed changes), `no_change_needed` (the agent "
                "found the docs need no change for this request: `reason` says why; nothing "
                "was committed) or `answered` (it answered without changing anything).",
            },
            "reason": nullable(string("Why no change was needed; null unless `outcome` is `no_change_needed`.")),
        },
        description="A prompt: the create call's (first) or a follow-up message. `usage` is what the run that "
        "processed it cost; null until that run ends, and for a run that never called the model.",
    )
    agent = closed_object(
        {
            **common("agent"),
            "replyTo": nullable(string("The user message this answers.", pattern=MESSAGE_ID_PATTERN)),
            "commit": nullable(
                string(
                    "The commit the run pushed; null when nothing was committed.",
                    pattern="^[0-9a-f]{40}([0-9a-f]{24})?$",
                )
            ),
            "changedFiles": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Repository paths the run changed.",
            },
        },
        description="The agent's answer to one user message.",
    )
    return {
        "UserMessage": user,
        "AgentMessage": agent,
        "Message": {
            "oneOf": [ref("schemas", "UserMessage"), ref("schemas", "AgentMessage")],
            "discriminator": {
                "propertyName": "role",
                "mapping": {"user": "#/components/schemas/UserMessage", "agent": "#/components/schemas/AgentMessage"},
            },
        },
    }


def _problem_schema() -> dict:
    return closed_object(
        {
            "type": string("`urn:copydesk:problem:` + `code`.", pattern="^urn:copydesk:problem:[a-z_]+$"),
            "title": string("Short summary of the kind of problem."),
            "status": {"type": "integer", "minimum": 400, "maximum": 599, "description": "The HTTP status."},
            "detail": string("What went wrong with this request, for people."),
            "code": string("Stable snake_case error code, for programs.", enum=list(PROBLEMS)),
            "error": string("Same text as `detail` (the anchor service's error field)."),
            "field": string("With `invalid_request`: the body field, query parameter or header at fault."),
            "requestId": string("With `internal_error`: the id to quote to the operator (also in `X-Request-Id`)."),
        },
        optional=("field", "requestId"),
        description="RFC 9457 problem details, served as `application/json` unless "
        "the request's `Accept` prefers `application/problem+json`.",
    )


def _create_body(models: tuple[str, ...], max_prompt_chars: int) -> dict:
    model = string("One of the models this server offers; defaults to the server's default model.")
    if models:
        model["enum"] = list(models)
    return closed_object(
        {
            "prompt": _prompt(max_prompt_chars),
            "model": model,
            "ref": string("Base branch to start from; defaults to the project's ref.", minLength=1, maxLength=255),
            "asDraft": {"type": "boolean", "default": False, "description": "Open the pull request as a draft."},
            "maxTokens": {
                "type": "integer",
                "minimum": 1,
                "maximum": 10**10,
                "description": (
                    "The job's budget in billable tokens (`billableTokens`), over all its rounds; defaults to the project's. Each "
                    "model request's output is cut to what remains; a run that reaches it fails with `budget_exceeded`."
                ),
            },
        },
        optional=("model", "ref", "asDraft", "maxTokens"),
        examples=[{"prompt": "Document the new `--dry-run` flag of the CLI."}],
        description="An unknown field is refused with `400 invalid_request` naming it.",
    )


def _prompt(max_prompt_chars: int) -> dict:
    return string("The instruction for the agent.", minLength=1, maxLength=max_prompt_chars)


def _schemas(models: tuple[str, ...], max_prompt_chars: int) -> dict:
    return {
        "JobStatus": {
            "type": "string",
            "enum": [s.value for s in JobStatus],
            "description": (
                "`active`: the agent is working (or a message waits its turn). `completed`: every message was "
                "processed; check `prLink`. `failed`: an unrecoverable error, see `error`. `archived`: archived by "
                "the archive call, a merged or closed pull request, or inactivity; takes no more messages. "
                "Poll until the status is `completed`, `archived` or `failed`. A follow-up message moves a "
                "`completed` or `failed` job back to `active`."
            ),
        },
        "JobError": closed_object(
            {
                "code": string("Stable snake_case reason, e.g. `ref_not_found`, `branch_conflict`."),
                "message": string("Explanation for people."),
            }
        ),
        "Job": _job_schema(),
        "JobPage": closed_object(
            {
                "jobs": {"type": "array", "items": ref("schemas", "Job"), "description": "Newest first."},
                "nextCursor": nullable(string("Pass as `cursor` for the next page; null on the last page.")),
            }
        ),
        **_message_schemas(),
        "Usage": closed_object(_USAGE_FIELDS, description="Model tokens as the vendor counted them."),
        "JobUsage": closed_object(
            {
                **_USAGE_FIELDS,
                "maxTokens": nullable(
                    {"type": "integer", "minimum": 1, "description": "The job's budget; null: none."}
                ),
                "remainingTokens": nullable(
                    {
                        "type": "integer",
                        "minimum": 0,
                        "description": "What is left of the budget in billable tokens; null without one.",
                    }
                ),
            },
            description="Every run of the job, against its token budget.",
        ),
        "Conversation": closed_object(
            {
                "messages": {"type": "array", "items": ref("schemas", "Message"), "description": "Oldest first."},
                "nextCursor": nullable(string("Pass as `cursor` for the next page; null on the last page.")),
                "usage": ref("schemas", "JobUsage"),
            },
            description="One page of the conversation; `usage` totals every run of the job on every page.",
        ),
        **_push_schemas(),
        "CreateJobRequest": _create_body(models, max_prompt_chars),
        "MessageRequest": closed_object(
            {
                "prompt": _prompt(max_prompt_chars),
                "interrupt": {
                    "type": "boolean",
                    "default": False,
                    "description": (
                        "Cancel the running round (as `cancel` does) and waiting messages, then run this one from the state "
                        "the last finished round left; without it the message waits its turn."
                    ),
                },
            },
            optional=("interrupt",),
            description="`prompt`, and optionally `interrupt`; any other field is a `400`.",
        ),
        "Problem": _problem_schema(),
    }


# -- parameters and headers --------------------------------------------------------------------


def _parameters() -> dict:
    return {
        "ProjectId": {
            "name": "projectId",
            "in": "path",
            "required": True,
            "description": "`prj_` + a 26-character ULID. A project outside the key's scope is a `404`.",
            "schema": string(pattern=PROJECT_ID_PATTERN),
        },
        "JobId": {
            "name": "id",
            "in": "path",
            "required": True,
            "description": "The job's `id`.",
            "schema": string(pattern=JOB_ID_PATTERN),
        },
        "IdempotencyKey": {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": (
                "Makes a retried create safe: the same key with the same body within 24 hours returns the first "
                "job (`201`, no new job, no quota used); the same key with another body is `409 idempotency_conflict`."
            ),
            "schema": string(minLength=1, maxLength=255, pattern="^[!-~]+$"),
        },
        "Status": {
            "name": "status",
            "in": "query",
            "required": False,
            "description": "Only jobs in this status.",
            "schema": ref("schemas", "JobStatus"),
        },
        "Limit": {
            "name": "limit",
            "in": "query",
            "required": False,
            "description": "Page size.",
            "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
        },
        "MessagesLimit": {
            "name": "limit",
            "in": "query",
            "required": False,
            "description": "Page size.",
            "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 100},
        },
        "Cursor": {
            "name": "cursor",
            "in": "query",
            "required": False,
            "description": "The `nextCursor` of the previous page.",
            "schema": {"type": "string"},
        },
        "After": {
            "name": "after",
            "in": "query",
            "required": False,
            "description": "Answer with a JSON page of the events after this id (`0`: from the first kept).",
            "schema": string(pattern="^[0-9]+(-[0-9]+)?$"),
        },
        "Follow": {
            "name": "follow",
            "in": "query",
            "required": False,
            "description": "Keep the stream open across follow-ups, until the job is archived.",
            "schema": {"type": "string", "enum": ["true", "false"], "default": "false"},
        },
        "LastEventId": {
            "name": "Last-Event-ID",
            "in": "header",
            "required": False,
            "description": "Resume the stream after this event (EventSource clients send it).",
            "schema": string(pattern="^[0-9]+(-[0-9]+)?$"),
        },
        "Month": {
            "name": "month",
            "in": "query",
            "required": False,
            "description": "`YYYY-MM`; default: this month.",
            "schema": string(pattern="^[0-9]{4}-(0[1-9]|1[0-2])$"),
        },
    }


def _integer_header(description: str) -> dict:
    return {"description": description, "required": True, "schema": {"type": "integer", "minimum": 0}}


def _headers(rate_limit: int) -> dict:
    return {
        "X-Request-Id": {
            "description": "The request's id (the caller's `X-Request-Id` when given); it is in the logs.",
            "required": True,
            "schema": {"type": "string", "minLength": 1},
        },
        "Location": {
            "description": "Path of the new job.",
            "required": True,
            "schema": string(format="uri-reference", pattern=f"^/v2/agent/prj_{_ULID}/job/job_{_ULID}$"),
        },
        "WWW-Authenticate": {
            "description": '`Bearer realm="copydesk"`.',
            "required": True,
            "schema": string(pattern="^Bearer"),
        },
        "Allow": {"description": "The methods the path accepts.", "required": True, "schema": {"type": "string"}},
        "Retry-After": _integer_header("Seconds to wait before trying again."),
        "RateLimit-Limit": _integer_header(
            f"Job creations plus messages allowed per project per hour ({rate_limit}"
            " unless the operator configured another figure)."
        ),
        "RateLimit-Remaining": _integer_header("How many are left in the current hour."),
        "RateLimit-Reset": _integer_header("Seconds until the hour's window resets."),
    }


RATE_LIMIT_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")


def _response_headers(headers: dict, required: tuple[str, ...] = (), optional: tuple[str, ...] = ()) -> dict:
    """`X-Request-Id` and `required` as references, `optional` as inline copies marked not required."""
    result = {name: ref("headers", name) for name in ("X-Request-Id", *required)}
    for name in optional:
        result[name] = {**deepcopy(headers[name]), "required": False}
    return result


# -- responses ---------------------------------------------------------------------------------

# The reusable error responses: name -> (status, the codes it may carry, description, required headers).
# Each code's status is the one `service.api.problems.PROBLEMS` gives it.
ERROR_RESPONSES: dict[str, tuple[Any, ...]] = {
    "BadRequest": (
        400,
        ("invalid_json", "invalid_request"),
        "`invalid_json`: the body is not JSON. `invalid_request`: a field is missing, has the wrong type "
        "or length, or is unknown, or holds text that is not valid Unicode (a lone surrogate such as "
        "`\\ud800`, in a value or a field name); or the `Idempotency-Key` header is malformed; or "
        "(create only, whose anchor description has no 404) the project is unknown or outside the key's "
        "scope (`projectId`). `field` names it.",
        (),
    ),
    "InvalidQuery": (
        400,
        ("invalid_request",),
        "`invalid_request`: an unknown query parameter or a bad value; `field` names it.",
        (),
    ),
    "Unauthorized": (
        401,
        ("unauthorized",),
        "No `Authorization: Bearer` header, or the key is unknown, revoked or expired.",
        ("WWW-Authenticate",),
    ),
    "Forbidden": (
        403,
        ("forbidden",),
        "The key is read-only: it may read, but not create, message, archive, cancel, delete or change webhooks.",
        (),
    ),
    "ProjectNotFound": (
        404,
        ("project_not_found",),
        "No such project, or the key may not act on it (the two are not told apart).",
        (),
    ),
    "JobNotFound": (
        404,
        ("project_not_found", "job_not_found"),
        "No such project, or no such job in it; also for one outside the key's scope (never revealed).",
        (),
    ),
    "NotFound": (404, ("not_found",), "No operation at this path.", ()),
    "MethodNotAllowed": (405, ("method_not_allowed",), "The path exists, but not with this method.", ("Allow",)),
    "CreateConflict": (
        409,
        ("project_disabled", "idempotency_conflict"),
        "`project_disabled`: the project's repository is no longer reachable. `idempotency_conflict`: "
        "the `Idempotency-Key` was used with another body in the last 24 hours.",
        (),
    ),
    "JobNotActive": (409, ("job_not_active",), "Only an `active` job can be cancelled.", ()),
    "WebhookLimit": (
        409,
        ("webhook_limit_reached",),
        "The project has as many webhook endpoints as it may (`COPYDESK_WEBHOOK_MAX_ENDPOINTS`); delete one first.",
        (),
    ),
    "ResendLimit": (
        429,
        ("rate_limited",),
        "The endpoint or its account asked for as many re-sends as it may this "
        "minute (`COPYDESK_WEBHOOK_RESENDS_PER_ENDPOINT`, `COPYDESK_WEBHOOK_RESENDS_PER_ACCOUNT`). Wait "
        "`Retry-After` seconds.",
        ("Retry-After",),
    ),
    "JobActive": (
        409,
        ("job_active",),
        "An `active` job (or one whose run is still going) cannot be deleted: "
        "cancel it first, then delete it once its run has stopped.",
        (),
    ),
    "WebhookNotFound": (
        404,
        ("project_not_found", "webhook_not_found"),
        "No such project, or no such webhook endpoint in it.",
        (),
    ),
    "AutomationNotFound": (
        404,
        ("project_not_found", "automation_not_found"),
        "No such project, or no such automation in it.",
        (),
    ),
    "AutomationLimit": (
        409,
        ("automation_limit_reached",),
        "The project has as many automations as it may (`COPYDESK_MAX_AUTOMATIONS`); delete one first.",
        (),
    ),
    "DeliveryNotFound": (
        404,
        ("project_not_found", "webhook_not_found", "delivery_not_found"),
        "No such project, webhook endpoint, or delivery in its log.",
        (),
    ),
    "StreamsBusy": (
        503,
        ("unavailable",),
        "This server process serves as many event streams as it may "
        "(`COPYDESK_MAX_STREAMS`); retry after `Retry-After` seconds, or poll with `?after=`.",
        ("Retry-After",),
    ),
    "TooManyStreams": (
        429,
        ("rate_limited",),
        "This key (or its account) already holds as many event streams as it "
        "may on this server process (`COPYDESK_MAX_STREAMS_PER_KEY`, "
        "`COPYDESK_MAX_STREAMS_PER_ACCOUNT`); close one and retry after `Retry-After` seconds, or poll "
        "with `?after=`.",
        ("Retry-After",),
    ),
    "MessageConflict": (
        409,
        ("job_archived", "project_disabled"),
        "`job_archived`: an archived job takes no more messages. `project_disabled`: the project's "
        "repository is no longer reachable.",
        (),
    ),
    "PayloadTooLarge": (413, ("payload_too_large",), "The body is larger than the limit ({max_body_bytes} bytes).", ()),
    "UnsupportedMediaType": (415, ("unsupported_media_type",), "The body must be sent as `application/json`.", ()),
    "RateLimited": (
        429,
        ("rate_limited", "monthly_budget_exceeded"),
        "`rate_limited`: the project used up its hourly job creations plus messages (with the "
        "`RateLimit-*` headers). `monthly_budget_exceeded`: the account used up its monthly token cap. "
        "Wait `Retry-After` seconds.",
        ("Retry-After",),
        RATE_LIMIT_HEADERS,
    ),
    "InternalError": (
        500,
        ("internal_error",),
        "An unexpected error. No stack trace; `requestId` (when present) identifies it in the logs.",
        (),
    ),
    "Unavailable": (
        503,
        ("unavailable",),
        "The job store is unreachable; retry after `Retry-After` seconds.",
        ("Retry-After",),
    ),
    "NotReady": (
        503,
        ("unavailable", "redis_evicts_keys", "schema_mismatch"),
        "`unavailable`: Redis is not reachable. `redis_evicts_keys`: Redis's `maxmemory-policy` may delete "
        "keys (the detail says how to fix it). `schema_mismatch`: Redis holds data of another schema "
        "version (`copydesk migrate`). Do not route traffic here.",
        (),
    ),
}


def _error_responses(headers: dict, max_body_bytes: int) -> dict:
    responses = {}
    for name, (status, codes, description, required, *optional) in ERROR_RESPONSES.items():
        schema = {
            "allOf": [
                ref("schemas", "Problem"),
                {"properties": {"status": {"const": status}, "code": {"enum": list(codes)}}},
            ]
        }
        responses[name] = {
            "description": description.format(max_body_bytes=max_body_bytes),
            "headers": _response_headers(headers, required, *optional),
            # The same body either way: JSON unless `Accept` prefers problem+json.
            "content": {JSON: {"schema": schema}, PROBLEM_JSON: {"schema": deepcopy(schema)}},
        }
    return responses


def _errors(*names: str) -> dict:
    """Status code -> reference, for the named reusable error responses."""
    return {str(ERROR_RESPONSES[name][0]): ref("responses", name) for name in names}


def _ok(description: str, schema: dict, headers: dict | None = None) -> dict:
    """A success response with a JSON body; `headers` defaults to just `X-Request-Id`."""
    return {
        "description": description,
        "headers": headers or {"X-Request-Id": ref("headers", "X-Request-Id")},
        "content": {JSON: {"schema": schema}},
    }


# -- operations --------------------------------------------------------------------------------

_USAGE_FIELDS = {
    "inputTokens": {"type": "integer", "minimum": 0, "description": "Tokens sent to the model, cached ones included."},
    "outputTokens": {"type": "integer", "minimum": 0, "description": "Tokens the model generated."},
    "cacheReadTokens": {
        "type": "integer",
        "minimum": 0,
        "description": "Of `inputTokens`: served from the vendor's prompt cache.",
    },
    "cacheWriteTokens": {
        "type": "integer",
        "minimum": 0,
        "description": "Of `inputTokens`: written to the vendor's prompt cache (Anthropic).",
    },
    "billableTokens": {
        "type": "integer",
        "minimum": 0,
        "description": (
            "What budgets and caps count: uncached input, cached input at the vendor's price (Anthropic: reads 0.1x, "
            "writes 1.25x; OpenAI: 0.5x), and output."
        ),
    },
}
_JOB_READ_ERRORS = ("Unauthorized", "JobNotFound", "InternalError", "Unavailable")
_BODY_ERRORS = ("PayloadTooLarge", "UnsupportedMediaType", "RateLimited", "InternalError", "Unavailable")


def _operation(
    operation_id: str,
    summary: str,
    description: str,
    responses: dict,
    *,
    tag: str = "Jobs",
    parameters: tuple[str, ...] = (),
    body: str | None = None,
    public: bool = False,
) -> dict:
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "tags": [tag],
        "summary": summary,
        "description": description,
    }
    if parameters:
        operation["parameters"] = [ref("parameters", name) for name in parameters]
    if body:
        operation["requestBody"] = {"required": True, "content": {JSON: {"schema": ref("schemas", body)}}}
    operation["responses"] = responses
    if public:
        operation["security"] = []
    return operation


def _job_paths(headers: dict, rate_limit: int) -> dict:
    job = ref("schemas", "Job")
    quota = f"Counts against the project's {rate_limit} job creations plus messages per hour."
    return {
        "/v2/agent/{projectId}/job": {
            "parameters": [ref("parameters", "ProjectId")],
            "post": _operation(
                "createJob",
                "Create an agent job",
                "Stores the prompt and starts a background job; the call does not wait for the work. The job "
                "starts `active`; poll `GET /v2/agent/{projectId}/job/{id}` until `completed`, `archived` or "
                f"`failed`. When the agent changes files it opens a pull request and sets `prLink`. {quota} "
                "With an `Idempotency-Key`, a retry returns the first job instead of creating another.",
                {
                    "201": _ok(
                        "Created (or, for a retry with the same `Idempotency-Key` and body, the job the first "
                        "call created). `RateLimit-*` headers are absent on such a replay, which uses no quota.",
                        job,
                        _response_headers(headers, ("Location",), optional=RATE_LIMIT_HEADERS),
                    ),
                    **_errors("BadRequest", "Unauthorized", "Forbidden", "CreateConflict", *_BODY_ERRORS),
                },
                parameters=("IdempotencyKey",),
                body="CreateJobRequest",
            ),
        },
        "/v2/agent/{projectId}/job/{id}": {
            "parameters": [ref("parameters", "ProjectId"), ref("parameters", "JobId")],
            "get": _operation(
                "getJob",
                "Get an agent job",
                "The polling operation. Poll until `status` is `completed`, `archived` or `failed`; then read "
                "`prLink` (or `error`).",
                {"200": _ok("The job.", job), **_errors(*_JOB_READ_ERRORS)},
            ),
            "delete": _operation(
                "deleteJob",
                "Delete a job",
                "Removes the job's record, prompts, conversation, events and token counts, its idempotency "
                "entries and its place in the job lists; the account's monthly usage totals keep its tokens. The "
                "branch and pull request stay on the code host (the answer names them): delete them there. An "
                "`active` job is refused: cancel it first. Deleting again answers 404. No body.",
                {
                    "200": _ok(
                        "The job is gone; what stays on the code host.",
                        closed_object(
                            {
                                "deleted": {"const": True},
                                "id": string("The deleted job's id."),
                                "kept": closed_object(
                                    {
                                        "branch": nullable(string("The job's branch, left on the code host.")),
                                        "prLink": nullable(string("The job's pull request, left open or as it was.")),
                                        "note": string(),
                                    }
                                ),
                            }
                        ),
                    ),
                    **_errors("Unauthorized", "Forbidden", "JobNotFound", "JobActive", "InternalError", "Unavailable"),
                },
            ),
        },
        "/v2/agent/{projectId}/job/{id}/message": {
            "parameters": [ref("parameters", "ProjectId"), ref("parameters", "JobId")],
            "post": _operation(
                "sendMessage",
                "Send a follow-up message to a job",
                "Queues another instruction for the job; it is stored before the call returns and processed "
                "asynchronously, after any message already waiting. The job becomes (or stays) `active`; its "
                f"commits go to the same branch and pull request. An archived job refuses it. {quota}",
                {
                    "200": _ok(
                        "The message is queued; the job as it is now.",
                        job,
                        _response_headers(headers, RATE_LIMIT_HEADERS),
                    ),
                    **_errors(
                        "BadRequest", "Unauthorized", "Forbidden", "JobNotFound", "MessageConflict", *_BODY_ERRORS
                    ),
                },
                body="MessageRequest",
            ),
        },
        "/v2/agent/{projectId}/job/{id}/messages": {
            "parameters": [ref("parameters", "ProjectId"), ref("parameters", "JobId")],
            "get": _operation(
                "getConversation",
                "Get a job's conversation",
                "The job's prompts and the agent's answers, oldest first, a page at a time; follow `nextCursor` "
                "until it is null.",
                {
                    "200": _ok("A page of the conversation.", ref("schemas", "Conversation")),
                    **_errors("BadRequest", *_JOB_READ_ERRORS),
                },
                parameters=("MessagesLimit", "Cursor"),
            ),
        },
        "/v2/agent/{projectId}/job/{id}/archive": {
            "parameters": [ref("parameters", "ProjectId"), ref("parameters", "JobId")],
            "post": _operation(
                "archiveJob",
                "Archive a job",
                "Moves the job to `archived` and sets `archivedAt`; messages still waiting are cancelled, a run "
                "under way finishes. Idempotent: archiving an archived job returns it unchanged. No body.",
                {"200": _ok("The archived job.", job), **_errors(*_JOB_READ_ERRORS, "Forbidden")},
            ),
        },
        "/v2/agent/{projectId}/jobs": {
            "parameters": [ref("parameters", "ProjectId")],
            "get": _operation(
                "listJobs",
                "List a project's jobs",
                "Newest first, a page at a time; follow `nextCursor` until it is null.",
                {
                    "200": _ok("A page of jobs.", ref("schemas", "JobPage")),
                    **_errors("InvalidQuery", "Unauthorized", "ProjectNotFound", "InternalError", "Unavailable"),
                },
                parameters=("Status", "Limit", "Cursor"),
            ),
        },
    }


def _service_paths() -> dict:
    def status_body(value: str) -> dict:
        return closed_object({"status": {"const": value}})

    return {
        "/v2/openapi.json": {
            "get": _operation(
                "getOpenApiDocument",
                "This document",
                "The OpenAPI 3.1 description of the API. No authentication.",
                {
                    "200": _ok("The document.", {"type": "object", "required": ["openapi", "info", "paths"]}),
                    **_errors("InternalError"),
                },
                tag="Service",
                public=True,
            )
        },
        "/healthz": {
            "get": _operation(
                "healthz",
                "Liveness",
                "Answers while the web process is up. No authentication.",
                {"200": _ok("The process is alive.", status_body("ok")), **_errors("InternalError")},
                tag="Service",
                public=True,
            )
        },
        "/readyz": {
            "get": _operation(
                "readyz",
                "Readiness",
                "Ready when Redis answers, never evicts keys and holds data of this release's "
                "schema version. No authentication.",
                {"200": _ok("Ready to serve.", status_body("ready")), **_errors("NotReady", "InternalError")},
                tag="Service",
                public=True,
            )
        },
    }


# -- events, webhooks, cancel and usage ---------------------------------------------------------


def _push_schemas() -> dict:
    types = [t.value for t in EventType]
    return {
        "EventType": {
            "type": "string",
            "enum": types,
            "description": (
                "`job.*`: the job's state changed (`job.cancelled` when a cancel settled it, `job.budget_reached` when a "
                "run hit the job's token budget). `run.*`: one run of a message: `run.started` (`run.messageId`), "
                "`run.step` (`run.tool` and a short `run.summary` of its arguments, never file contents), `run.pushed` "
                "(`run.commit`), `run.finished` (`run.outcome`: processed, failed or cancelled, and `run.error`; for a "
                "processed run also `run.result`, what it did as its message's `outcome` says: changed, "
                "no_change_needed or answered, and `run.reason`, why no change was needed). "
                "`pr.opened`, `pr.updated`: with `pullRequest`."
            ),
        },
        "EventBody": closed_object(
            {
                "type": ref("schemas", "EventType"),
                "timestamp": timestamp("When the event happened."),
                "data": {
                    "type": "object",
                    "description": (
                        "The job record as it was at the event (`prLink` is null while the job is `active`), plus "
                        "`run` for `run.*` events, `pullRequest` (`url`, `number`) for `pr.*` events and `budget` for "
                        "`job.budget_reached`."
                    ),
                    "required": ["id", "status"],
                },
            },
            description="What a webhook delivery's body and an SSE event's `data:` carry (Standard Webhooks).",
        ),
        "Event": closed_object(
            {
                "id": string(
                    "The event's id: monotonic within the job; send it as `after` or `Last-Event-ID`.",
                    pattern=EVENT_ID_PATTERN,
                ),
                "type": ref("schemas", "EventType"),
                "timestamp": timestamp("When the event happened."),
                "data": {"type": "object", "required": ["id", "status"]},
            }
        ),
        "EventPage": closed_object(
            {
                "events": {
                    "type": "array",
                    "items": ref("schemas", "Event"),
                    "maxItems": 500,
                    "description": "Oldest first, at most 500; ask again with the last id for more.",
                },
                "lastEventId": nullable(string("The last event's id (or the `after` given when none came).")),
            }
        ),
        "UsageTotals": closed_object(
            {
                "month": string("`YYYY-MM`, UTC.", pattern="^[0-9]{4}-[0-9]{2}$"),
                "account": closed_object(
                    {
                        "name": string("The key's account."),
                        "month": string(),
                        **_USAGE_FIELDS,
                        "monthlyCap": nullable({"type": "integer", "minimum": 1}),
                    }
                ),
                "key": closed_object({"id": string("The calling key's id."), "month": string(), **_USAGE_FIELDS}),
            },
            description="Model tokens of the month, for the key's account and for the key itself.",
        ),
        "CreateWebhookRequest": closed_object(
            {
                "url": string(
                    "Where to POST events: http(s); a host resolving to an address that is not public "
                    "(loopback, private, link-local, shared, reserved) is refused unless the operator allows it.",
                    minLength=1,
                    maxLength=2000,
                ),
                "events": {
                    "type": "array",
                    "items": ref("schemas", "EventType"),
                    "description": "The event types to send; absent or empty: all.",
                },
                "description": string("For people.", maxLength=500),
            },
            optional=("events", "description"),
        ),
        "Webhook": _webhook_schema(with_secret=False),
        "WebhookWithSecret": _webhook_schema(with_secret=True),
        "WebhookList": closed_object({"webhooks": {"type": "array", "items": ref("schemas", "Webhook")}}),
        "Delivery": closed_object(
            {
                "id": string("The delivery's id, sent as `webhook-id` by every attempt.", pattern=DELIVERY_ID_PATTERN),
                "webhookId": string(pattern=WEBHOOK_ID_PATTERN),
                "jobId": string(pattern=JOB_ID_PATTERN),
                "type": ref("schemas", "EventType"),
                "status": {
                    "type": "string",
                    "enum": [s.value for s in DeliveryStatus],
                    "description": (
                        "`pending`: not delivered yet, a retry is scheduled (`nextAttemptAt`). `succeeded`: a 2xx answer. "
                        "`failed`: every attempt within 24 hours failed."
                    ),
                },
                "attempts": {"type": "integer", "minimum": 0},
                "responseStatus": nullable({"type": "integer", "description": "The last attempt's HTTP status."}),
                "latencyMs": nullable({"type": "integer", "minimum": 0}),
                "error": nullable(string("Why the last attempt failed.")),
                "createdAt": timestamp("When the event was fanned out."),
                "lastAttemptAt": nullable(timestamp("The last attempt.")),
                "nextAttemptAt": nullable(timestamp("The next scheduled retry.")),
            }
        ),
        "DeliveryList": closed_object(
            {
                "deliveries": {
                    "type": "array",
                    "items": ref("schemas", "Delivery"),
                    "description": "Newest first, the last 200.",
                }
            }
        ),
    }


def _webhook_schema(*, with_secret: bool) -> dict:
    properties = {
        "id": string(pattern=WEBHOOK_ID_PATTERN),
        "url": string(),
        "description": string(),
        "events": {"type": "array", "items": ref("schemas", "EventType"), "description": "Empty: all types."},
        "enabled": {"type": "boolean"},
        "disabledReason": nullable(string("Set when Copydesk disabled it: every delivery failed for 5 days.")),
        "failingSince": nullable(timestamp("The first failed attempt since the last success.")),
        "createdAt": timestamp("When it was registered."),
    }
    if with_secret:
        properties["secret"] = string(
            "The signing secret (`whsec_` + base64), shown this once only.", pattern="^whsec_[A-Za-z0-9+/=]+$"
        )
    return closed_object(properties, description="A webhook endpoint of the project.")


def _push_paths(headers: dict) -> dict:
    project, job_params = [ref("parameters", "ProjectId")], [ref("parameters", "ProjectId"), ref("parameters", "JobId")]
    webhook = [
        *project,
        {"name": "webhookId", "in": "path", "required": True, "schema": string(pattern=WEBHOOK_ID_PATTERN)},
    ]
    read_errors = _errors("Unauthorized", "WebhookNotFound", "InternalError", "Unavailable")
    write_errors = _errors("Unauthorized", "Forbidden", "WebhookNotFound", "InternalError", "Unavailable")
    body_errors = _errors(
        "BadRequest",
        "Unauthorized",
        "Forbidden",
        "ProjectNotFound",
        "PayloadTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Unavailable",
    )
    stream = {
        "description": (
            "Without `after`: a Server-Sent Events stream. Each event has `id:`, `event:` (its type) and `data:` (an "
            "EventBody); a `: keep-alive` comment comes every 15 s when idle. It starts after `Last-Event-ID` (or at "
            "the first event kept) and ends when the job leaves `active`; with `follow=true` it stays open across "
            "follow-ups until the job is archived. With `after`: one JSON page of the events after that id."
        ),
        "headers": {"X-Request-Id": ref("headers", "X-Request-Id")},
        "content": {EVENT_STREAM: {"schema": {"type": "string"}}, JSON: {"schema": ref("schemas", "EventPage")}},
    }
    return {
        "/v2/agent/{projectId}/job/{id}/cancel": {
            "parameters": job_params,
            "post": _operation(
                "cancelJob",
                "Cancel a job",
                "Stops the job's run within seconds (an in-flight model call is abandoned); a run that has not pushed "
                "pushes nothing. Waiting messages become `cancelled`. The job returns to the state its last finished "
                "round left (`completed`, or `failed` with that error; `completed` with a null `prLink` when the first "
                "round is cancelled), keeping its pull request, and emits `job.cancelled`. The answer is the job as it "
                "is now: still `active` while a running run stops. No body.",
                {
                    "200": _ok("The job.", ref("schemas", "Job")),
                    **_errors(
                        "Unauthorized", "Forbidden", "JobNotFound", "JobNotActive", "InternalError", "Unavailable"
                    ),
                },
            ),
        },
        "/v2/agent/{projectId}/job/{id}/events": {
            "parameters": job_params,
            "get": _operation(
                "getJobEvents",
                "Follow a job's events",
                "Server-Sent Events, resumable with `Last-Event-ID`, or a JSON page with `after`.",
                {
                    "200": stream,
                    "204": {
                        "description": "A client reconnected with `Last-Event-ID` after the job ended and has every "
                        "event: stop reconnecting.",
                        "headers": {"X-Request-Id": ref("headers", "X-Request-Id")},
                    },
                    **_errors("InvalidQuery", "Unauthorized", "JobNotFound", "TooManyStreams", "InternalError"),
                    "503": ref("responses", "StreamsBusy"),
                },
                tag="Events",
                parameters=("After", "Follow", "LastEventId"),
            ),
        },
        "/v2/agent/usage": {
            "get": _operation(
                "getUsage",
                "Model tokens of the month",
                "Totals for the key's account on its code host (with its monthly cap, if any) and for the key itself. "
                "Runs count each model call as it returns.",
                {
                    "200": _ok("The month's usage.", ref("schemas", "UsageTotals")),
                    **_errors("InvalidQuery", "Unauthorized", "InternalError", "Unavailable"),
                },
                tag="Events",
                parameters=("Month",),
            )
        },
        "/v2/agent/{projectId}/webhooks": {
            "parameters": project,
            "post": _operation(
                "createWebhook",
                "Register a webhook endpoint",
                "Events of the project's jobs are POSTed to `url` as Standard Webhooks (`webhook-id`, "
                "`webhook-timestamp`, `webhook-signature` v1 HMAC-SHA256), retried with exponential backoff for 24 "
                "hours. The secret is in this answer only.",
                {
                    "201": _ok(
                        "Registered.",
                        ref("schemas", "WebhookWithSecret"),
                        {
                            "X-Request-Id": ref("headers", "X-Request-Id"),
                            "Location": {
                                "description": "Path of the new endpoint.",
                                "required": True,
                                "schema": string(pattern=f"^/v2/agent/prj_{_ULID}/webhooks/whk_{_ULID}$"),
                            },
                        },
                    ),
                    **body_errors,
                    **_errors("WebhookLimit"),
                },
                tag="Events",
                body="CreateWebhookRequest",
            ),
            "get": _operation(
                "listWebhooks",
                "List webhook endpoints",
                "The project's endpoints (never their secrets).",
                {
                    "200": _ok("The endpoints.", ref("schemas", "WebhookList")),
                    **_errors("Unauthorized", "ProjectNotFound", "InternalError", "Unavailable"),
                },
                tag="Events",
            ),
        },
        "/v2/agent/{projectId}/webhooks/{webhookId}": {
            "parameters": webhook,
            "get": _operation(
                "getWebhook",
                "Get a webhook endpoint",
                "Without its secret.",
                {"200": _ok("The endpoint.", ref("schemas", "Webhook")), **read_errors},
                tag="Events",
            ),
            "delete": _operation(
                "deleteWebhook",
                "Delete a webhook endpoint",
                "No more deliveries; scheduled retries are dropped.",
                {
                    "204": {"description": "Deleted.", "headers": {"X-Request-Id": ref("headers", "X-Request-Id")}},
                    **write_errors,
                },
                tag="Events",
            ),
        },
        "/v2/agent/{projectId}/webhooks/{webhookId}/rotate": {
            "parameters": webhook,
            "post": _operation(
                "rotateWebhookSecret",
                "Rotate an endpoint's secret",
                "A new secret, shown once; for 24 hours deliveries carry a second signature made with the old one.",
                {"200": _ok("The endpoint and its new secret.", ref("schemas", "WebhookWithSecret")), **write_errors},
                tag="Events",
            ),
        },
        "/v2/agent/{projectId}/webhooks/{webhookId}/enable": {
            "parameters": webhook,
            "post": _operation(
                "enableWebhook",
                "Enable an endpoint again",
                "After Copydesk disabled it for failing 5 days.",
                {"200": _ok("The endpoint.", ref("schemas", "Webhook")), **write_errors},
                tag="Events",
            ),
        },
        "/v2/agent/{projectId}/webhooks/{webhookId}/deliveries": {
            "parameters": webhook,
            "get": _operation(
                "listDeliveries",
                "The endpoint's delivery log",
                "Status, response code, latency and attempts of the last 200 deliveries.",
                {"200": _ok("The log.", ref("schemas", "DeliveryList")), **read_errors},
                tag="Events",
            ),
        },
        "/v2/agent/{projectId}/webhooks/{webhookId}/deliveries/{deliveryId}/resend": {
            "parameters": [
                *webhook,
                {"name": "deliveryId", "in": "path", "required": True, "schema": string(pattern=DELIVERY_ID_PATTERN)},
            ],
            "post": _operation(
                "resendDelivery",
                "Send a delivery again",
                "A worker makes one more attempt (same `webhook-id`, a fresh timestamp and signature), without "
                "retries of its own; watch the log for its outcome.",
                {
                    "202": _ok("Queued; the delivery as it is now.", ref("schemas", "Delivery")),
                    **_errors(
                        "Unauthorized", "Forbidden", "DeliveryNotFound", "ResendLimit", "InternalError", "Unavailable"
                    ),
                },
                tag="Events",
            ),
        },
    }


# -- the document ------------------------------------------------------------------------------


def _description(rate_limit: int, max_prompt_chars: int, max_body_bytes: int) -> str:
    return f"""\
Copydesk runs documentation-editing agent jobs in the background. Create a job with a prompt; the agent edits \
the project's docs, commits to a branch and opens a pull request, whose URL appears in the job's `prLink`.

**Polling.** Work is asynchronous: poll `GET /v2/agent/{{projectId}}/job/{{id}}` until `status` is `completed`, \
`archived` or `failed` (the statuses at which polling stops). A follow-up message makes the job `active` again.

**Push instead of polling.** `GET /v2/agent/{{projectId}}/job/{{id}}/events` streams the job's events as \
Server-Sent Events (resumable with `Last-Event-ID`; `?after=` answers them as JSON), and webhook endpoints \
(`/v2/agent/{{projectId}}/webhooks`) receive them as Standard Webhooks, signed and retried for 24 hours. \
`POST .../cancel` stops a job; `maxTokens` caps its model tokens.

**Authentication.** Every `/v2/agent` operation needs `Authorization: Bearer cdk_...`, an admin API key. It is a \
server-side secret: never put it in client-side code. A read-only key may use the `GET` operations only; \
other methods answer `403 forbidden`. An expired or revoked key is `401 unauthorized`.

**Idempotency.** Send an `Idempotency-Key` header when creating a job: a retry with the same key and body within \
24 hours returns the first job; the same key with another body is `409 idempotency_conflict`.

**Limits.** {rate_limit} job creations plus messages per project per hour (`429 rate_limited` with `Retry-After` \
beyond that; create and message responses carry `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`); \
prompts of 1 to {max_prompt_chars} characters; bodies up to {max_body_bytes} bytes.

**Errors.** RFC 9457 problem details with a stable snake_case `code`, and `error` repeating `detail` (the \
anchor service's error field). They are served as `application/json`, as the anchor service's clients expect, \
unless the request's `Accept` prefers `application/problem+json`. A path with no operation is `404 not_found`; a known path with another method is \
`405 method_not_allowed` with an `Allow` header. Every response carries `X-Request-Id`."""


def openapi_document(
    base_url: str,
    models: tuple[str, ...],
    *,
    rate_limit: int = 100,
    max_prompt_chars: int = 20_000,
    max_body_bytes: int = 64 * 1024,
) -> dict:
    """The OpenAPI 3.1.0 document for a server at `base_url` offering `models`.

    The keyword arguments are the configurable limits; their defaults are the settings' defaults.
    """
    # Imported here: that module builds on the helpers above.
    from service.api.openapi_automations import SECURITY_SCHEME, automation_paths, automation_schemas

    headers = _headers(rate_limit)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Copydesk Agent Job API",
            "version": "2.0.0",
            "description": _description(rate_limit, max_prompt_chars, max_body_bytes),
        },
        "servers": [{"url": base_url}],
        "security": [{"bearerAuth": []}],
        "tags": [
            {"name": "Jobs", "description": "Agent jobs and their messages."},
            {"name": "Events", "description": "A job's events: a stream, a page, webhooks, and token usage."},
            {
                "name": "Automations",
                "description": "Runs that start by themselves: on a code change, a "
                "schedule or a webhook; and the autopilot doors.",
            },
            {"name": "Service", "description": "The API description and health checks."},
        ],
        "paths": {**_job_paths(headers, rate_limit), **_push_paths(headers), **automation_paths(), **_service_paths()},
        "components": {
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "cdk_ API key",
                    "description": "An admin API key: `cdk_` followed by base62 characters, created on the dashboard's "
                    "API keys page. Send it as `Authorization: Bearer cdk_...`; keep it server-side.",
                },
                "automationSecret": SECURITY_SCHEME,
            },
            "schemas": {**_schemas(models, max_prompt_chars), **automation_schemas()},
            "parameters": _parameters(),
            "headers": headers,
            "responses": _error_responses(headers, max_body_bytes),
        },
    }
