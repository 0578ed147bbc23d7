"""Exceptions raised inside the service; only the HTTP edge turns them into problem details."""

from service.codes import RunFailure


class ServiceError(Exception):
    """Base of every expected failure; `code` is the stable snake_case name clients see."""

    code = "internal_error"

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidRequest(ServiceError):
    code = "invalid_request"

    def __init__(self, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.field = field


class InvalidJson(ServiceError):
    code = "invalid_json"


class Unauthorized(ServiceError):
    code = "unauthorized"


class Forbidden(ServiceError):
    """The key is valid but may not do this (a read-only key on a write)."""

    code = "forbidden"


class ProjectNotFound(ServiceError):
    code = "project_not_found"


class JobNotFound(ServiceError):
    code = "job_not_found"


class JobArchived(ServiceError):
    code = "job_archived"


class JobNotActive(ServiceError):
    code = "job_not_active"


class JobActive(ServiceError):
    code = "job_active"


class ProjectDisabled(ServiceError):
    code = "project_disabled"


class HostDisabledProject(ServiceError):
    """An admin tried to enable a project its code host disabled (see service.projectstate)."""

    code = "project_disabled_by_host"


class IdempotencyConflict(ServiceError):
    code = "idempotency_conflict"


class RateLimited(ServiceError):
    code = "rate_limited"

    def __init__(self, detail: str, retry_after: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.retry_after = retry_after
        self.headers = headers or {}


class MonthlyBudgetExceeded(RateLimited):
    """The account used up its monthly token cap; `retry_after` is the time to the month's end."""

    code = "monthly_budget_exceeded"


class WebhookNotFound(ServiceError):
    code = "webhook_not_found"


class WebhookLimitReached(ServiceError):
    """The project has as many webhook endpoints as it may have."""

    code = "webhook_limit_reached"


class AutomationNotFound(ServiceError):
    code = "automation_not_found"


class AutomationLimitReached(ServiceError):
    """The project has as many automations as it may have."""

    code = "automation_limit_reached"


class DeliveryNotFound(ServiceError):
    code = "delivery_not_found"


class StreamsBusy(ServiceError):
    code = "unavailable"


class TooManyStreams(RateLimited):
    """The key (or session) or its account already holds as many event streams as it may in this process."""


class WriteNotReplicated(ServiceError):
    """Fewer replicas than COPYDESK_REDIS_MIN_REPLICAS confirmed a write in time: it must not be answered as done
    (a failover now could lose it)."""

    code = "unavailable"
    retry_after = 5


class KeyNotFound(ServiceError):
    code = "key_not_found"


class PayloadTooLarge(ServiceError):
    code = "payload_too_large"


class UnsupportedMediaType(ServiceError):
    code = "unsupported_media_type"


class RunCancelled(Exception):
    """The run stopped because its job was cancelled; nothing it had not pushed yet is pushed."""


class RunFailed(Exception):
    """An unrecoverable failure of one agent run; `code` and `message` go into the job's `error`."""

    def __init__(self, code: RunFailure, message: str) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code
        self.message = message
