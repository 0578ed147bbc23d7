"""A project's automations: the list (trigger, next slot, last run's state, merge rate) and each one's run history
for everyone who sees the project; creating from a template, editing, enabling, deleting, running now and
rotating a webhook trigger's secret (shown once) for the admins of its account, as for webhooks."""

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from flask import Blueprint, redirect, request
from werkzeug.datastructures import MultiDict

from bot.dashboard.views_jobs import visible_project
from bot.dashboard.views_outbound_webhooks import administered_project
from bot.dashboard.web import dashboard, page, signed_in
from service.automations import manage, outcomes
from service.automations.model import Automation, ChangeMode, Options, RunState, TriggerType, parse_options
from service.automations.store import RUNS_KEPT
from service.automations.templates import TEMPLATES, Template
from service.errors import AutomationLimitReached, InvalidRequest
from service.models import Project

SECRET_TTL_SECONDS = 600  # as for webhook endpoints: the new secret waits this long for the page that shows it
RUNS_PAGE = 25
STATE_BADGES = {
    RunState.QUEUED: "warn",
    RunState.RUNNING: "warn",
    RunState.REVIEW_NEEDED: "warn",
    RunState.ACCEPTED: "ok",
    RunState.NO_ACTION_NEEDED: "ok",
    RunState.CLOSED: "bad",
    RunState.FAILED: "bad",
    RunState.SKIPPED: "",
}
STATE_WORDS = {
    RunState.QUEUED: "queued",
    RunState.RUNNING: "running",
    RunState.REVIEW_NEEDED: "review needed",
    RunState.ACCEPTED: "accepted",
    RunState.CLOSED: "closed",
    RunState.FAILED: "failed",
    RunState.NO_ACTION_NEEDED: "no action needed",
    RunState.SKIPPED: "skipped",
}


@dataclass(frozen=True)
class Row:
    """One automation on the list page."""

    automation: Automation
    trigger: str
    next_slot: str | None
    last_state: RunState | None
    merge_rate: dict


def register(bp: Blueprint) -> None:
    """Add the automation pages to the dashboard's blueprint."""

    @bp.get("/projects/<project_id>/automations")
    def automations(project_id: str):
        return _list_page(visible_project(project_id))

    @bp.get("/projects/<project_id>/automations/new")
    def new_automation(project_id: str):
        project = administered_project(project_id)
        chosen = request.args.get("template", "")
        template = TEMPLATES.get(chosen) if chosen else None
        if chosen and template is None:
            manage.template_of(chosen)  # the clear "must be one of" page
        return _form_page(project, None, _template_values(template), template=template)

    @bp.post("/projects/<project_id>/automations")
    def create_automation(project_id: str):
        project = administered_project(project_id)
        template = TEMPLATES.get(request.form.get("template", ""))
        try:
            body = form_body(request.form)
            if template is not None:
                body["template"] = template.id.value
            automation, secret = manage.create(dashboard().services, project, body)
        except (InvalidRequest, AutomationLimitReached) as exc:
            return _form_page(
                project,
                None,
                request.form,
                template=template,
                error=exc.detail,
                status=409 if isinstance(exc, AutomationLimitReached) else 400,
            )
        if secret is not None:
            return _show_secret_once(project, automation, secret, "created")
        return redirect(_path(project, automation), 303)

    @bp.get("/projects/<project_id>/automations/secret")
    def automation_secret(project_id: str):
        project = administered_project(project_id)
        shown = dashboard().sessions.take_once(signed_in().session, _slot(project))
        if shown is None:  # shown already: the list, which never has secrets
            return redirect(_path(project), 303)
        kept = json.loads(shown)
        automation = dashboard().services.automations.find(kept["automation"])
        return page(
            "automation_secret.html",
            project=project,
            automation=automation,
            secret=kept["secret"],
            action=kept["action"],
            url=manage.webhook_url(dashboard().services.settings.base_url, automation) if automation else "",
        )

    @bp.get("/projects/<project_id>/automations/<automation_id>")
    def edit_automation(project_id: str, automation_id: str):
        project = administered_project(project_id)
        automation = dashboard().services.automations.get(project.id, automation_id)
        return _form_page(project, automation, _automation_values(automation))

    @bp.post("/projects/<project_id>/automations/<automation_id>")
    def update_automation(project_id: str, automation_id: str):
        project = administered_project(project_id)
        services = dashboard().services
        automation = services.automations.get(project.id, automation_id)
        try:
            changed, secret = manage.update(services, project, automation.id, form_body(request.form))
        except InvalidRequest as exc:
            return _form_page(project, automation, request.form, error=exc.detail, status=400)
        if secret is not None:
            return _show_secret_once(project, changed, secret, "created")
        return redirect(f"{_path(project, changed)}?saved=1", 303)

    @bp.post("/projects/<project_id>/automations/<automation_id>/<action>")
    def automation_action(project_id: str, automation_id: str, action: str):
        project = administered_project(project_id)
        services = dashboard().services
        automation = services.automations.get(project.id, automation_id)
        if action in ("enable", "disable"):
            body = {"enabled": action == "enable"}
            manage.update(services, project, automation.id, body)
            return redirect(_path(project), 303)
        if action == "run":
            note = request.form.get("note", "").strip() or None
            run = manage.run_now(services, automation, note)
            return redirect(f"{_path(project, automation)}/runs?fired={run.id}", 303)
        if action == "rotate":
            rotated, secret = services.automations.rotate_secret(project.id, automation.id)
            return _show_secret_once(project, rotated, secret, "rotated")
        if action == "delete":
            if request.form.get("confirm") != automation.id:
                raise InvalidRequest(
                    f"Tick the box to confirm that automation {automation.name!r} is to be deleted.", field="confirm"
                )
            services.automations.delete(project.id, automation.id)
            return redirect(_path(project), 303)
        raise InvalidRequest(f"no such action on an automation: {action!r}")

    @bp.get("/projects/<project_id>/automations/<automation_id>/runs")
    def automation_runs(project_id: str, automation_id: str):
        project = visible_project(project_id)
        services = dashboard().services
        automation = services.automations.get(project.id, automation_id)
        found, cursor = services.automations.runs(
            automation.id, limit=RUNS_PAGE, cursor=request.args.get("cursor") or None
        )
        shown = [(run, outcomes.outcome(services, run)) for run in found]
        return page(
            "automation_runs.html",
            project=project,
            automation=automation,
            runs=shown,
            next_cursor=cursor,
            words=STATE_WORDS,
            badges=STATE_BADGES,
            merge_rate=outcomes.merge_rate(services, services.automations.all_runs(automation.id)),
            trigger=manage.describe_trigger(automation.trigger),
            fired=request.args.get("fired", ""),
            can_manage=signed_in().owner_of(project).admin,
            kept=RUNS_KEPT,
        )


def form_body(form: MultiDict) -> dict:
    """The API body a create or edit form stands for; only the trigger fields its type and mode use."""
    kind = form.get("trigger_type", "")
    trigger: dict = {"type": kind}
    if kind == TriggerType.CODE_CHANGE.value:
        trigger.update(repository=form.get("repository", "").strip() or None, mode=form.get("mode", ""))
        if trigger["mode"] == ChangeMode.BATCHED.value:
            trigger.update(
                cron=form.get("cron", "").strip() or None, timeZone=form.get("time_zone", "").strip() or "UTC"
            )
        trigger = {k: v for k, v in trigger.items() if v is not None}
    elif kind == TriggerType.SCHEDULE.value:
        trigger.update(cron=form.get("cron", "").strip(), timeZone=form.get("time_zone", "").strip() or "UTC")
    reviewers = [r for r in form.get("reviewers", "").replace(",", " ").split() if r]
    options = {
        "grouping": "grouping" in form,
        "requestSourceReviews": "request_source_reviews" in form,
        "commentOnSource": "comment_on_source" in form,
        "docsCheckFirst": "docs_check_first" in form,
        "reviewers": reviewers,
        "maxOpenPullRequests": _number(form.get("max_open_pull_requests", "")),
        "maxRunsPerDay": _number(form.get("max_runs_per_day", "")),
        "maxTokens": _number(form.get("max_tokens", "")) or None,
    }
    return {
        "name": form.get("name", "").strip(),
        "prompt": form.get("prompt", "").strip(),
        "trigger": trigger,
        "options": options,
        "enabled": "enabled" in form,
    }


def _number(raw: str) -> int | str:
    """A whole number as a number; anything else as it was typed, for the model's check to name."""
    raw = raw.strip()
    return int(raw) if raw.isdecimal() else raw


def _list_page(project: Project):
    services = dashboard().services
    now = datetime.now(UTC)
    rows = []
    for automation in services.automations.of_project(project.id):
        upcoming = manage.next_slot(automation.trigger, now) if automation.enabled else None
        last = services.automations.latest_run(automation.id)
        rows.append(
            Row(
                automation,
                manage.describe_trigger(automation.trigger),
                upcoming.isoformat().replace("+00:00", "Z") if upcoming else None,
                outcomes.run_state(services, last) if last else None,
                outcomes.merge_rate(services, services.automations.all_runs(automation.id)),
            )
        )
    admin = signed_in().owner_of(project).admin
    return page(
        "automations.html",
        project=project,
        rows=rows,
        can_manage=admin,
        templates=TEMPLATES.values(),
        words=STATE_WORDS,
        badges=STATE_BADGES,
    )


def _form_page(
    project: Project,
    automation: Automation | None,
    values,
    *,
    template: Template | None = None,
    error: str | None = None,
    status: int = 200,
):
    """The create form (prefilled from a template) or an automation's edit page, with what was typed on error."""
    needs = [(n, manage.need_hint(n, project.host)) for n in template.needs] if template else []
    return page(
        "automation_form.html",
        status,
        project=project,
        automation=automation,
        values=values,
        chosen=template,
        needs=needs,
        error=error,
        trigger_types=[t.value for t in TriggerType],
        url=manage.webhook_url(dashboard().services.settings.base_url, automation) if automation else None,
        repository_hint=manage.need_hint("trigger.repository", project.host),
    )


def _template_values(template: Template | None) -> dict:
    """The form's fields as a template (or a blank automation) sets them."""
    body = template.body if template else {"trigger": {"type": TriggerType.SCHEDULE.value}}
    trigger = body.get("trigger", {})
    return {
        "name": body.get("name", ""),
        "prompt": body.get("prompt", ""),
        **_trigger_values(trigger),
        **_option_values(parse_options(body.get("options", {}))),
        "enabled": "on",
    }


def _automation_values(automation: Automation) -> dict:
    values = {
        "name": automation.name,
        "prompt": automation.prompt,
        **_trigger_values(automation.trigger.to_api()),
        **_option_values(automation.options),
    }
    if automation.enabled:
        values["enabled"] = "on"
    return values


def _trigger_values(trigger: dict) -> dict:
    return {
        "trigger_type": trigger.get("type", ""),
        "repository": trigger.get("repository") or "",
        "mode": trigger.get("mode") or ChangeMode.PER_CHANGE.value,
        "cron": trigger.get("cron") or "",
        "time_zone": trigger.get("timeZone") or "UTC",
    }


def _option_values(options: Options) -> dict:
    values = {
        "max_open_pull_requests": str(options.max_open_pull_requests),
        "max_runs_per_day": str(options.max_runs_per_day),
        "reviewers": ", ".join(options.reviewers),
        "max_tokens": "" if options.max_tokens is None else str(options.max_tokens),
    }
    for name, on in (
        ("grouping", options.grouping),
        ("request_source_reviews", options.request_source_reviews),
        ("comment_on_source", options.comment_on_source),
        ("docs_check_first", options.docs_check_first),
    ):
        if on:
            values[name] = "on"
    return values


def _path(project: Project, automation: Automation | None = None) -> str:
    base = f"/dashboard/projects/{project.id}/automations"
    return f"{base}/{automation.id}" if automation else base


# -- the secret, shown once (as for webhook endpoints: kept sealed in the session's one-time values, never in a URL)


def _show_secret_once(project: Project, automation: Automation, secret: str, action: str):
    shown = json.dumps({"automation": automation.id, "action": action, "secret": secret})
    dashboard().sessions.keep_once(signed_in().session, _slot(project), shown, SECRET_TTL_SECONDS)
    return redirect(f"{_path(project)}/secret", 303)


def _slot(project: Project) -> str:
    return f"automation-secret:{project.id}"
