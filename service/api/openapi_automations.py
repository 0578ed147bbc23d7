"""The automations' part of the OpenAPI document: schemas (with a request example per trigger type) and paths."""

from service.api.openapi import (
    PROJECT_ID_PATTERN,
    _errors,
    _ok,
    _operation,
    closed_object,
    nullable,
    ref,
    string,
    timestamp,
)
from service.automations.model import (
    MAX_OPEN_PULL_REQUESTS,
    MAX_REVIEWERS,
    MAX_RUNS_PER_DAY,
    MAX_TOKENS_CAP,
    NAME_MAX_CHARS,
    PROMPT_MAX_CHARS,
    ChangeMode,
    RunState,
)
from service.automations.templates import TEMPLATES

_ULID = "[0-9A-HJKMNP-TV-Z]{26}"
AUTOMATION_ID_PATTERN = f"^auto_{_ULID}$"
RUN_ID_PATTERN = f"^arun_{_ULID}$"
TAG = "Automations"

_EXAMPLES = [
    {
        "name": "Docs from code changes",
        "prompt": "Update the docs for what this merged pull request changed.",
        "trigger": {"type": "code_change", "repository": "acme/api", "mode": "per_change"},
        "options": {"grouping": True, "maxOpenPullRequests": 3, "maxRunsPerDay": 10, "maxTokens": 200000},
    },
    {
        "name": "Weekly changelog",
        "prompt": "Draft a changelog entry for the week.",
        "trigger": {
            "type": "code_change",
            "repository": "acme/api",
            "mode": "batched",
            "cron": "0 9 * * 1",
            "timeZone": "Europe/Berlin",
        },
    },
    {
        "name": "Fix broken links",
        "prompt": "Fix the broken links the docs check found.",
        "trigger": {"type": "schedule", "cron": "0 6 * * *", "timeZone": "UTC"},
        "options": {"docsCheckFirst": True},
        "enabled": True,
    },
    {
        "name": "Release notes from CI",
        "prompt": "Document the release described in the context.",
        "trigger": {"type": "webhook"},
        "options": {"grouping": False},
    },
    {"template": "update-docs-from-code-changes", "trigger": {"repository": "acme/api"}},
    {
        "template": "fix-broken-links",
        "trigger": {"cron": "0 6 * * 1", "timeZone": "Europe/Berlin"},
        "options": {"maxTokens": 100000},
    },
]


def _trigger() -> dict:
    cron = string("Five fields: minute hour day-of-month month day-of-week.", maxLength=200)
    zone = string("An IANA time zone name.", default="UTC")
    return {
        "description": "What starts a run.",
        "oneOf": [
            closed_object(
                {
                    "type": {"const": "code_change"},
                    "repository": string(
                        "The source repository: `owner/name` of the same installation on "
                        "GitHub; a local bare repository's absolute path on the local host.",
                        minLength=1,
                        maxLength=1000,
                    ),
                    "mode": {
                        "type": "string",
                        "enum": [m.value for m in ChangeMode],
                        "default": "per_change",
                        "description": "`per_change`: a run per merged change. `batched`: one run over "
                        "everything merged since the last, on `cron`.",
                    },
                    "cron": cron,
                    "timeZone": zone,
                },
                optional=("mode", "cron", "timeZone"),
            ),
            closed_object({"type": {"const": "schedule"}, "cron": cron, "timeZone": zone}, optional=("timeZone",)),
            closed_object({"type": {"const": "webhook"}}),
        ],
    }


def _options(*, response: bool) -> dict:
    properties = {
        "grouping": {
            "type": "boolean",
            "default": True,
            "description": (
                "While the automation's last pull request is open, a new run is a follow-up round on that job."
            ),
        },
        "maxOpenPullRequests": {"type": "integer", "minimum": 1, "maximum": MAX_OPEN_PULL_REQUESTS, "default": 3},
        "maxRunsPerDay": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_RUNS_PER_DAY,
            "default": 10,
            "description": "Runs started per UTC day; past it a run is skipped.",
        },
        "reviewers": {"type": "array", "items": string(), "maxItems": MAX_REVIEWERS},
        "requestSourceReviews": {"type": "boolean", "default": True},
        "commentOnSource": {"type": "boolean", "default": False},
        "maxTokens": nullable(
            {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TOKENS_CAP,
                "description": "Each run's job budget; null: the project's.",
            }
        ),
        "docsCheckFirst": {
            "type": "boolean",
            "default": False,
            "description": (
                "Each run first checks the whole docs site without the model; the agent runs only when the check "
                "finds problems, with its report. A clean site ends the run as `no_action_needed`, without tokens."
            ),
        },
    }
    return closed_object(properties, optional=() if response else tuple(properties))


def _body(*, create: bool) -> dict:
    properties = {
        "name": string(minLength=1, maxLength=NAME_MAX_CHARS),
        "prompt": string(
            "What the agent should do on each run; the trigger's data is added after it, as data.",
            minLength=1,
            maxLength=PROMPT_MAX_CHARS,
        ),
        "trigger": ref("schemas", "AutomationTrigger"),
        "options": ref("schemas", "AutomationOptionsRequest"),
        "enabled": {"type": "boolean", "default": True},
    }
    if not create:
        return closed_object(properties, optional=tuple(properties), examples=[_EXAMPLES[2]])
    from_template = {
        "template": {
            "type": "string",
            "enum": list(TEMPLATES),
            "description": (
                "Start from this template (`GET …/automation-templates`): its body, with the fields given here laid "
                "over it (`trigger` and `options` field by field while the trigger's type stays the template's). A "
                "blank the template `needs` that is still empty is a 400 naming it."
            ),
        },
        **properties,
        "trigger": ref("schemas", "AutomationTriggerOverride"),
    }
    return {
        "description": "A whole automation, or a template with overrides.",
        "oneOf": [
            closed_object(properties, optional=("options", "enabled"), title="Automation"),
            closed_object(from_template, optional=tuple(properties), title="From a template"),
        ],
        "examples": _EXAMPLES,
    }


def _trigger_override() -> dict:
    trigger = _trigger()["oneOf"][0]["properties"]
    return closed_object(
        {
            "type": {"type": "string", "enum": ["code_change", "schedule", "webhook"]},
            **{k: v for k, v in trigger.items() if k != "type"},
        },
        optional=("type", "repository", "mode", "cron", "timeZone"),
        description="Fields of the template's trigger to replace; another `type` replaces it whole.",
    )


def _template() -> dict:
    return closed_object(
        {
            "id": {"type": "string", "enum": list(TEMPLATES)},
            "title": string(),
            "description": string(),
            "body": {"type": "object", "description": "The create body it stands for, blanks left out."},
            "needs": {"type": "array", "items": string(), "description": "Fields to give when creating from it."},
            "hints": {
                "type": "object",
                "additionalProperties": string(),
                "description": "What each needed field asks for on this project's code host.",
            },
        }
    )


def automation_schemas() -> dict:
    run = closed_object(
        {
            "id": string(pattern=RUN_ID_PATTERN),
            "automationId": string(pattern=AUTOMATION_ID_PATTERN),
            "trigger": {"type": "string", "enum": ["code_change", "schedule", "webhook", "manual"]},
            "createdAt": timestamp("When it fired."),
            "state": {
                "type": "string",
                "enum": [s.value for s in RunState],
                "description": (
                    "`review_needed`: its pull request is open. `accepted`: merged. `closed`: closed unmerged. "
                    "`no_action_needed`: the round ended without a change. `skipped`: see `reason`."
                ),
            },
            "reason": nullable(string("Why it was skipped, or the agent's reason for no change.")),
            "jobId": nullable(string()),
            "messageId": nullable(string("The job's round it made (a follow-up round when grouped).")),
            "prLink": nullable(string()),
            "pullRequestState": {"type": ["string", "null"], "enum": ["open", "merged", "closed", None]},
            "changes": {"type": "array", "description": "The source changes it covers.", "items": {"type": "object"}},
        }
    )
    return {
        "AutomationTrigger": _trigger(),
        "AutomationOptionsRequest": _options(response=False),
        "AutomationOptions": _options(response=True),
        "AutomationTriggerOverride": _trigger_override(),
        "CreateAutomationRequest": _body(create=True),
        "AutomationTemplate": _template(),
        "AutomationTemplates": closed_object(
            {"templates": {"type": "array", "items": ref("schemas", "AutomationTemplate")}}
        ),
        "UpdateAutomationRequest": _body(create=False),
        "Automation": closed_object(
            {
                "id": string(pattern=AUTOMATION_ID_PATTERN),
                "projectId": string(pattern=PROJECT_ID_PATTERN),
                "name": string(),
                "prompt": string(),
                "trigger": ref("schemas", "AutomationTrigger"),
                "options": ref("schemas", "AutomationOptions"),
                "enabled": {"type": "boolean"},
                "template": nullable(string()),
                "createdAt": timestamp("Created."),
                "updatedAt": timestamp("Changed."),
                "webhookUrl": string("A webhook trigger's URL.", format="uri"),
                "secret": string(
                    "A webhook trigger's secret (`Authorization: Bearer` on its URL); shown only when made "
                    "(create, a change to a webhook trigger, rotate).",
                    pattern="^cdah_[A-Za-z0-9_-]+$",
                ),
            },
            optional=("webhookUrl", "secret"),
        ),
        "AutomationList": closed_object({"automations": {"type": "array", "items": ref("schemas", "Automation")}}),
        "AutomationRun": run,
        "AutomationRuns": closed_object(
            {
                "runs": {"type": "array", "items": ref("schemas", "AutomationRun"), "description": "Newest first."},
                "nextCursor": nullable(string()),
                "mergeRate": closed_object(
                    {
                        "accepted": {"type": "integer", "minimum": 0},
                        "withPullRequest": {"type": "integer", "minimum": 0},
                        "rate": nullable({"type": "number", "minimum": 0, "maximum": 1}),
                    },
                    description="Of the jobs its runs started that opened a pull request, those merged.",
                ),
            }
        ),
        "FiredRun": closed_object({"run": ref("schemas", "AutomationRun"), "job": nullable(ref("schemas", "Job"))}),
        "RunNowRequest": closed_object(
            {"note": string("Passed to the agent as context.", maxLength=2000)}, optional=("note",)
        ),
        "AutopilotRequest": closed_object(
            {"prompt": string(minLength=1)}, examples=[{"prompt": "Document the new `--dry-run` flag of the CLI."}]
        ),
    }


def automation_paths() -> dict:
    project = [ref("parameters", "ProjectId")]
    one = [
        *project,
        {"name": "automationId", "in": "path", "required": True, "schema": string(pattern=AUTOMATION_ID_PATTERN)},
    ]
    automation = ref("schemas", "Automation")
    read = _errors("Unauthorized", "AutomationNotFound", "InternalError", "Unavailable")
    write = _errors("Unauthorized", "Forbidden", "AutomationNotFound", "InternalError", "Unavailable")
    body = _errors("BadRequest", "PayloadTooLarge", "UnsupportedMediaType")
    fired = _ok(
        "Fired: the run (a `skipped` one says why) and the job it started or added a round to.",
        ref("schemas", "FiredRun"),
    )
    autopilot = _operation(
        "{}",
        "Start a job from a prompt",
        'Mintlify\'s autopilot: `{"prompt"}` with an API key that may write; the job starts as a create would.',
        {
            "202": _ok("Accepted: the job.", ref("schemas", "Job")),
            **_errors(
                "BadRequest",
                "Unauthorized",
                "Forbidden",
                "ProjectNotFound",
                "CreateConflict",
                "PayloadTooLarge",
                "UnsupportedMediaType",
                "RateLimited",
                "InternalError",
                "Unavailable",
            ),
        },
        tag=TAG,
        parameters=("IdempotencyKey",),
        body="AutopilotRequest",
    )
    return {
        "/v2/agent/{projectId}/automations": {
            "parameters": project,
            "post": _operation(
                "createAutomation",
                "Create an automation",
                "A name, a prompt, one trigger and options, or `template` with overrides. A webhook trigger's secret "
                "is in this answer only.",
                {"201": _ok("Created.", automation), **body, **write, **_errors("ProjectNotFound", "AutomationLimit")},
                tag=TAG,
                body="CreateAutomationRequest",
            ),
            "get": _operation(
                "listAutomations",
                "List automations",
                "The project's automations (never their secrets).",
                {
                    "200": _ok("The automations.", ref("schemas", "AutomationList")),
                    **_errors("Unauthorized", "ProjectNotFound", "InternalError", "Unavailable"),
                },
                tag=TAG,
            ),
        },
        "/v2/agent/{projectId}/automation-templates": {
            "parameters": project,
            "get": _operation(
                "listAutomationTemplates",
                "List automation templates",
                "What `template` in a create body can name: each template's body and the fields it still needs. "
                "Under the project because keys are per project and the needs read differently per code host.",
                {
                    "200": _ok("The templates.", ref("schemas", "AutomationTemplates")),
                    **_errors("Unauthorized", "ProjectNotFound", "InternalError", "Unavailable"),
                },
                tag=TAG,
            ),
        },
        "/v2/agent/{projectId}/automations/{automationId}": {
            "parameters": one,
            "get": _operation(
                "getAutomation",
                "Get an automation",
                "Without its secret.",
                {"200": _ok("It.", automation), **read},
                tag=TAG,
            ),
            "patch": _operation(
                "updateAutomation",
                "Change an automation",
                "The fields given replace the automation's; `options` are merged.",
                {"200": _ok("Changed.", automation), **body, **write},
                tag=TAG,
                body="UpdateAutomationRequest",
            ),
            "delete": _operation(
                "deleteAutomation",
                "Delete an automation",
                "With its run history; the jobs it started stay.",
                {
                    "204": {"description": "Deleted.", "headers": {"X-Request-Id": ref("headers", "X-Request-Id")}},
                    **write,
                },
                tag=TAG,
            ),
        },
        "/v2/agent/{projectId}/automations/{automationId}/run": {
            "parameters": one,
            "post": _operation(
                "runAutomation",
                "Run an automation now",
                "Fires a `manual` event (an `Idempotency-Key` makes a retry the same run). The body is optional.",
                {"202": fired, **body, **write},
                tag=TAG,
                parameters=("IdempotencyKey",),
            ),
        },
        "/v2/agent/{projectId}/automations/{automationId}/runs": {
            "parameters": one,
            "get": _operation(
                "listAutomationRuns",
                "An automation's run history",
                "Each run's state, reason, job and pull request, and what it covers; with the merge rate.",
                {"200": _ok("The runs.", ref("schemas", "AutomationRuns")), **read, **_errors("InvalidQuery")},
                tag=TAG,
                parameters=("MessagesLimit", "Cursor"),
            ),
        },
        "/v2/agent/{projectId}/automations/{automationId}/rotate-secret": {
            "parameters": one,
            "post": _operation(
                "rotateAutomationSecret",
                "Rotate a webhook trigger's secret",
                "The old one stops working at once.",
                {"200": _ok("The automation with its new secret.", automation), **write, **_errors("BadRequest")},
                tag=TAG,
            ),
        },
        "/v2/automations/{automationId}/webhook": {
            "parameters": one[1:],
            "post": {
                **_operation(
                    "fireAutomationWebhook",
                    "A webhook trigger's URL",
                    "`Authorization: Bearer <the automation's secret>`. The body (any text, bounded) is passed to the "
                    "agent as context. Each request is one event: send an `Idempotency-Key` (or `webhook-id`) so a "
                    "re-delivery never starts a second run.",
                    {"202": fired, **_errors("Unauthorized", "PayloadTooLarge", "InternalError", "Unavailable")},
                    tag=TAG,
                    parameters=("IdempotencyKey",),
                ),
                "requestBody": {"required": False, "content": {"*/*": {"schema": {}}}},
                "security": [{"automationSecret": []}],
            },
        },
        "/v2/agent/{projectId}/autopilot": {
            "parameters": project,
            "post": {**autopilot, "operationId": "startAutopilot"},
        },
        "/v2/autopilot/{projectId}/webhook": {
            "parameters": project,
            "post": {**autopilot, "operationId": "startAutopilotWebhook"},
        },
    }


SECURITY_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "bearerFormat": "cdah_ automation secret",
    "description": "A webhook trigger's own secret, shown when the automation is made or rotated.",
}
