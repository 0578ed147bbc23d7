"""Every error code Copydesk shows, with its HTTP status and words, in one place: the codes the API answers with
(the dashboard's error pages take their titles from the same table) and the codes a failed run records in its
job's `error`."""

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True)
class ErrorCode:
    status: int
    title: str
    api: bool = True  # the API answers with it; False: only the dashboard shows it (not in the OpenAPI document)


ERRORS: dict[str, ErrorCode] = {
    "invalid_json": ErrorCode(400, "Invalid JSON"),
    "invalid_request": ErrorCode(400, "Invalid request"),
    "unauthorized": ErrorCode(401, "Unauthorized"),
    "forbidden": ErrorCode(403, "Forbidden"),
    "project_not_found": ErrorCode(404, "Project not found"),
    "job_not_found": ErrorCode(404, "Job not found"),
    "webhook_not_found": ErrorCode(404, "Webhook endpoint not found"),
    "delivery_not_found": ErrorCode(404, "Webhook delivery not found"),
    "automation_not_found": ErrorCode(404, "Automation not found"),
    "key_not_found": ErrorCode(404, "API key not found", api=False),
    "not_found": ErrorCode(404, "Not found"),
    "method_not_allowed": ErrorCode(405, "Method not allowed"),
    "job_archived": ErrorCode(409, "Job archived"),
    "job_not_active": ErrorCode(409, "Job not active"),
    "job_active": ErrorCode(409, "Job active"),
    "project_disabled": ErrorCode(409, "Project disabled"),
    "project_disabled_by_host": ErrorCode(409, "Project disabled by its code host", api=False),
    "idempotency_conflict": ErrorCode(409, "Idempotency key reused"),
    "webhook_limit_reached": ErrorCode(409, "Too many webhook endpoints"),
    "automation_limit_reached": ErrorCode(409, "Too many automations"),
    "payload_too_large": ErrorCode(413, "Payload too large"),
    "unsupported_media_type": ErrorCode(415, "Unsupported media type"),
    "rate_limited": ErrorCode(429, "Too many requests"),
    "monthly_budget_exceeded": ErrorCode(429, "Monthly token budget used up"),
    "internal_error": ErrorCode(500, "Internal error"),
    "unavailable": ErrorCode(503, "Service unavailable"),
    "redis_evicts_keys": ErrorCode(503, "Redis may evict keys"),
    "schema_mismatch": ErrorCode(503, "Data of another schema version"),
}


class RunFailure(StrEnum):
    """The `error.code` of a failed run (the value is what the job records)."""

    REF_NOT_FOUND = "ref_not_found"
    REPOSITORY_UNREACHABLE = "repository_unreachable"
    SOURCE_UNREACHABLE = "source_unreachable"
    BRANCH_CONFLICT = "branch_conflict"
    UNSAFE_COMMIT = "unsafe_commit"
    PROJECT_DISABLED = "project_disabled"
    INSTALLATION_REMOVED = "installation_removed"
    INSTALLATION_SUSPENDED = "installation_suspended"
    JOB_ARCHIVED = "job_archived"
    CODE_HOST_ERROR = "code_host_error"
    STEP_LIMIT_EXCEEDED = "step_limit_exceeded"
    TOKEN_LIMIT_EXCEEDED = "token_limit_exceeded"
    WRITE_LIMIT_EXCEEDED = "write_limit_exceeded"
    TIME_LIMIT_EXCEEDED = "time_limit_exceeded"
    BUDGET_EXCEEDED = "budget_exceeded"
    MONTHLY_BUDGET_EXCEEDED = "monthly_budget_exceeded"
    MODEL_AUTH_FAILED = "model_auth_failed"
    MODEL_UNAVAILABLE = "model_unavailable"
    UNKNOWN_MODEL = "unknown_model"
    INVALID_SCRIPT = "invalid_script"
    MODEL_ERROR = "model_error"
    RUN_INTERRUPTED = "run_interrupted"
    INTERNAL_ERROR = "internal_error"

    @property
    def words(self) -> str:
        """What happened, for a person (the README's table says the same)."""
        return _RUN_WORDS[self]

    @property
    def status(self) -> int | None:
        """The HTTP status of the same code where the API answers with it too; None for a run's own codes."""
        known = ERRORS.get(self.value)
        return known.status if known else None


_RUN_WORDS = {
    RunFailure.REF_NOT_FOUND: "the base branch does not exist in the repository",
    RunFailure.REPOSITORY_UNREACHABLE: "git could not fetch from or push to the repository",
    RunFailure.SOURCE_UNREACHABLE: "the round's source repository or its commit could not be read",
    RunFailure.BRANCH_CONFLICT: "the job branch changed during the run in the same files",
    RunFailure.UNSAFE_COMMIT: "the commit would not pass git fsck --strict: nothing was pushed",
    RunFailure.PROJECT_DISABLED: "the operator disabled the project while the message waited",
    RunFailure.INSTALLATION_REMOVED: "the GitHub App lost access to the repository (uninstalled or removed)",
    RunFailure.INSTALLATION_SUSPENDED: "the GitHub App's installation is suspended",
    RunFailure.JOB_ARCHIVED: "the job was archived while the run worked: nothing was pushed",
    RunFailure.CODE_HOST_ERROR: "the code host refused or kept failing a request",
    RunFailure.STEP_LIMIT_EXCEEDED: "the run took more steps than a run may",
    RunFailure.TOKEN_LIMIT_EXCEEDED: "the run used more tokens than a run may",
    RunFailure.WRITE_LIMIT_EXCEEDED: "the run wrote more than a run may",
    RunFailure.TIME_LIMIT_EXCEEDED: "the run took longer than a run may",
    RunFailure.BUDGET_EXCEEDED: "the job reached its token budget",
    RunFailure.MONTHLY_BUDGET_EXCEEDED: "the account used up its monthly token cap",
    RunFailure.MODEL_AUTH_FAILED: "the model vendor refused the API key",
    RunFailure.MODEL_UNAVAILABLE: "the model vendor kept failing after the retries",
    RunFailure.UNKNOWN_MODEL: "the model name is not one Copydesk can use",
    RunFailure.INVALID_SCRIPT: "the scripted model's script file is wrong",
    RunFailure.MODEL_ERROR: "the model could not be used",
    RunFailure.RUN_INTERRUPTED: "the run's worker died too many times during it",
    RunFailure.INTERNAL_ERROR: "a bug; the operator's logs carry the job id",
}
