"""Managing a project's automations the same way through every door (API, CLI, dashboard): create from a body or
a template with overrides, change, run now, and the API form of automations and their runs."""

from datetime import datetime

from service.automations import outcomes, schedule
from service.automations.events import TriggerEvent
from service.automations.model import (
    Automation,
    AutomationRun,
    AutomationSpec,
    ChangeMode,
    Trigger,
    TriggerType,
    parse_spec,
)
from service.automations.runs import fire
from service.automations.templates import TEMPLATES, Template
from service.errors import InvalidRequest
from service.ids import UlidGenerator
from service.models import Project
from service.services import Services

NOTE_MAX_CHARS = 2000  # a run-now note
# What a template's blank asks for, per code host: the words of the error that names it and of the form's hint.
NEED_HINTS = {
    ("trigger.repository", "github"): 'the source repository to watch, as "owner/name" (a repository of the same '
    "installation)",
    ("trigger.repository", "local"): "the source repository to watch: a local bare repository's absolute path",
}
_ids = UlidGenerator()


def template_of(template_id: object) -> Template:
    """The template named `template_id`, or InvalidRequest listing the ones there are."""
    template = TEMPLATES.get(template_id) if isinstance(template_id, str) else None
    if template is None:
        raise InvalidRequest(f"`template` must be one of: {', '.join(TEMPLATES)}", field="template")
    return template


def need_hint(need: str, host: str) -> str:
    """What a template's blank `need` asks for on `host`, in a person's words."""
    return NEED_HINTS.get((need, host), f"`{need}`")


def template_api(template: Template, host: str) -> dict:
    """A template as the API shows it, with what each of its blanks asks for on `host`."""
    return {**template.to_api(), "hints": {need: need_hint(need, host) for need in template.needs}}


def from_template(body: dict, *, host: str) -> tuple[dict, str | None]:
    """The create body to check and the template it came from: `body` itself without a `template`; else the
    template's body with `body`'s fields laid over it (`trigger` and `options` merged field by field, unless the
    trigger's type changes), and InvalidRequest naming a blank the template needs that is still empty."""
    if "template" not in body:
        return body, None
    template = template_of(body["template"])
    given = {k: v for k, v in body.items() if k != "template"}
    merged = {**template.body, **given}
    for part in ("trigger", "options"):
        base, override = template.body.get(part), given.get(part)
        if isinstance(base, dict) and isinstance(override, dict):
            same_type = part != "trigger" or override.get("type", base.get("type")) == base.get("type")
            merged[part] = {**base, **override} if same_type else override
    template_type = template.body.get("trigger", {}).get("type")
    trigger = merged.get("trigger")
    if isinstance(trigger, dict) and trigger.get("type") == template_type:
        for need in template.needs:
            if _blank(merged, need):
                raise InvalidRequest(
                    f"the template {template.id.value!r} needs `{need}`: {need_hint(need, host)}", field=need
                )
    return merged, template.id.value


def create(services: Services, project: Project, body: dict) -> tuple[Automation, str | None]:
    """Check `body` (or the template it names, with its overrides) and add the automation to `project`; a webhook
    trigger's secret comes back here once."""
    checked, template = from_template(body, host=project.host)
    spec = _within_account(parse_spec(checked, host=project.host), project)
    return services.automations.create(
        project.id,
        host=project.host,
        account=project.account,
        spec=spec,
        template=template,
        limit=services.settings.max_automations,
    )


def update(services: Services, project: Project, automation_id: str, body: dict) -> tuple[Automation, str | None]:
    """Lay `body` (a PATCH body) over the automation and store it; a trigger that became a webhook gets a secret,
    returned once."""
    current = services.automations.get(project.id, automation_id)
    spec = _within_account(parse_spec(body, host=project.host, base=current), project)
    return services.automations.update(project.id, current.id, spec)


def _within_account(spec: AutomationSpec, project: Project) -> AutomationSpec:
    """`spec`, unless its source repository is on GitHub under another account than the project's: the App reads
    a source with the project's installation, which sees only its own account's repositories."""
    repository = spec.trigger.repository
    if project.host == "github" and repository and repository.split("/", 1)[0].lower() != project.account.lower():
        raise InvalidRequest(
            f"`trigger.repository` {repository!r} is not under the project's account "
            f"{project.account!r}; a source repository must be one the same installation can read",
            field="trigger.repository",
        )
    return spec


def run_now(
    services: Services, automation: Automation, note: str | None = None, *, idempotency_key: str | None = None
) -> AutomationRun:
    """Fire a "manual" event: one run per `idempotency_key` (each call its own run without one)."""
    if note is not None and (not isinstance(note, str) or len(note) > NOTE_MAX_CHARS):
        raise InvalidRequest(f"`note` must be text of at most {NOTE_MAX_CHARS} characters", field="note")
    key = f"manual:{idempotency_key}" if idempotency_key else f"manual:{_ids.new()}"
    return fire(services, automation, TriggerEvent(kind="manual", key=key, context=note or None))


def webhook_url(base_url: str, automation: Automation) -> str | None:
    """A webhook trigger's URL; None for other triggers."""
    if automation.trigger.type is not TriggerType.WEBHOOK:
        return None
    return f"{base_url.rstrip('/')}/v2/automations/{automation.id}/webhook"


def automation_api(services: Services, automation: Automation, secret: str | None = None) -> dict:
    """The automation as the API shows it, with its webhook URL and, just made, its secret (the only time)."""
    shown = automation.to_api()
    url = webhook_url(services.settings.base_url, automation)
    if url is not None:
        shown["webhookUrl"] = url
    if secret is not None:
        shown["secret"] = secret
    return shown


def run_api(services: Services, run: AutomationRun) -> dict:
    """A run as the API shows it: its state (with why, when skipped), its job and pull request, what it covers."""
    seen = outcomes.outcome(services, run)
    return {
        "id": run.id,
        "automationId": run.automation_id,
        "trigger": run.trigger,
        "createdAt": run.created_at,
        "state": seen.state.value,
        "reason": seen.reason,
        "jobId": run.job_id,
        "messageId": run.message_id,
        "prLink": seen.job.pr_link if seen.job is not None else None,
        "pullRequestState": seen.pull_state,
        "changes": run.changes,
    }


def describe_trigger(trigger: Trigger) -> str:
    """The trigger in a few words, e.g. "each merged change in acme/api" or "cron 0 9 * * 1 (Europe/Berlin)"."""
    on_cron = f"cron {trigger.cron} ({trigger.time_zone})"
    if trigger.type is TriggerType.SCHEDULE:
        return f"schedule: {on_cron}"
    if trigger.type is TriggerType.WEBHOOK:
        return "webhook: a POST to its URL"
    if trigger.mode is ChangeMode.BATCHED:
        return f"code change in {trigger.repository}, batched on {on_cron}"
    return f"code change: each merged change in {trigger.repository}"


def next_slot(trigger: Trigger, now: datetime) -> datetime | None:
    """When a trigger with a cron (schedule, batched code change) next fires, in UTC; None for the others."""
    if trigger.cron is None:
        return None
    return schedule.next_slot(trigger.cron, trigger.time_zone, now)


def _blank(body: dict, dotted: str) -> bool:
    node: object = body
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node is None or (isinstance(node, str) and not node.strip())
