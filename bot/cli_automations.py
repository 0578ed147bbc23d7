"""The `copydesk automation` commands: a project's automations (list, show, create from flags or a template,
update, delete), run one now, its run history with the merge rate, and a webhook trigger's new secret."""

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

from bot import context
from service.automations import manage, outcomes
from service.automations.model import Automation, TriggerType
from service.automations.store import RUNS_KEPT
from service.automations.templates import TEMPLATES
from service.errors import InvalidRequest
from service.settings import Settings

RUNS_SHOWN = 20
# The flag that sets each field of an API body, to name in an error about that field.
FLAGS = {
    "name": "--name",
    "prompt": "--prompt",
    "template": "--template",
    "enabled": "--enable/--disable",
    "trigger": "--trigger",
    "trigger.type": "--trigger",
    "trigger.repository": "--repository",
    "trigger.mode": "--mode",
    "trigger.cron": "--cron",
    "trigger.timeZone": "--time-zone",
    "options.grouping": "--grouping",
    "options.maxOpenPullRequests": "--max-open-pull-requests",
    "options.maxRunsPerDay": "--max-runs-per-day",
    "options.reviewers": "--reviewer",
    "options.requestSourceReviews": "--request-source-reviews",
    "options.commentOnSource": "--comment-on-source",
    "options.maxTokens": "--max-tokens",
    "note": "--note",
}
_OPTION_FLAGS = (
    ("grouping", "grouping"),
    ("max_open_pull_requests", "maxOpenPullRequests"),
    ("max_runs_per_day", "maxRunsPerDay"),
    ("reviewer", "reviewers"),
    ("request_source_reviews", "requestSourceReviews"),
    ("comment_on_source", "commentOnSource"),
    ("max_tokens", "maxTokens"),
)
_TRIGGER_FLAGS = (("repository", "repository"), ("mode", "mode"), ("cron", "cron"), ("time_zone", "timeZone"))


def _print(args, data: dict, human: str) -> None:
    print(json.dumps(data) if getattr(args, "json", False) else human, flush=True)


def _flagged(exc: InvalidRequest) -> InvalidRequest:
    """The same refusal, naming the command-line flag that sets the field."""
    flag = FLAGS.get(exc.field or "")
    return InvalidRequest(f"{exc.detail} (set with {flag})", field=exc.field) if flag else exc


# -- reading -----------------------------------------------------------------------------------------------


def _list(args, settings: Settings) -> None:
    services = context.build(settings).services
    project = services.projects.get(args.project)
    automations = services.automations.of_project(project.id)
    _print(
        args,
        {"automations": [manage.automation_api(services, a) for a in automations]},
        "\n".join(_line(a) for a in automations) or "No automations.",
    )


def _line(automation: Automation) -> str:
    upcoming = manage.next_slot(automation.trigger, datetime.now(UTC))
    return (
        f"{automation.id}  {'enabled ' if automation.enabled else 'disabled'}  {automation.name}  "
        f"[{manage.describe_trigger(automation.trigger)}]"
        + (f"  next {upcoming.isoformat(timespec='minutes')}" if upcoming and automation.enabled else "")
    )


def _show(args, settings: Settings) -> None:
    services = context.build(settings).services
    project = services.projects.get(args.project)
    automation = services.automations.get(project.id, args.id)
    shown = manage.automation_api(services, automation)
    options = automation.options.to_api()
    human = [
        _line(automation),
        f"template: {automation.template or '-'}",
        "options: " + ", ".join(f"{k}={json.dumps(v)}" for k, v in options.items()),
    ]
    if "webhookUrl" in shown:
        human.append(f"webhook URL: {shown['webhookUrl']} (its secret was shown once; `rotate-secret` makes a new one)")
    _print(args, shown, "\n".join([*human, "prompt:", automation.prompt]))


def _templates(args, settings: Settings) -> None:
    lines = [
        f"{t.id.value}  {t.title}" + (f"  (needs {', '.join(t.needs)})" if t.needs else "") + f"\n    {t.description}"
        for t in TEMPLATES.values()
    ]
    _print(args, {"templates": [t.to_api() for t in TEMPLATES.values()]}, "\n".join(lines))


def _runs(args, settings: Settings) -> None:
    services = context.build(settings).services
    project = services.projects.get(args.project)
    automation = services.automations.get(project.id, args.id)
    runs, cursor = services.automations.runs(automation.id, limit=args.limit, cursor=args.cursor)
    shown = [manage.run_api(services, run) for run in runs]
    rate = outcomes.merge_rate(services, services.automations.all_runs(automation.id))
    lines = [_run_line(run) for run in shown] or ["No runs yet."]
    lines.append(_rate_line(rate))
    if cursor:
        lines.append(f"older runs: --cursor {cursor}")
    _print(args, {"runs": shown, "nextCursor": cursor, "mergeRate": rate}, "\n".join(lines))


def _run_line(run: dict) -> str:
    covers = ", ".join(_change_name(c) for c in run["changes"])
    return "  ".join(
        part
        for part in (
            run["id"],
            run["createdAt"],
            f"{run['trigger']:11}",
            f"{run['state']:16}",
            f"({run['reason']})" if run["reason"] else "",
            f"job {run['jobId']}" if run["jobId"] else "",
            run["prLink"] or "",
            f"covers {covers}" if covers else "",
        )
        if part
    )


def _change_name(change: dict) -> str:
    name = f"#{change['id']}" if change.get("kind") == "pull_request" else str(change.get("id", ""))[:12]
    return f"{name} {change.get('title', '')}".strip()


def _rate_line(rate: dict) -> str:
    if rate["rate"] is None:
        return "merge rate: no pull requests yet"
    return f"merge rate: {rate['accepted']} of {rate['withPullRequest']} pull requests merged ({rate['rate']:.0%})"


# -- changing ----------------------------------------------------------------------------------------------


def _create(args, settings: Settings) -> None:
    services = context.build(settings).services
    project = services.projects.get(args.project)
    body = _fields(args)
    trigger = _trigger_fields(args)
    if args.template is not None:
        body["template"] = args.template
        if trigger:
            body["trigger"] = trigger
    elif args.trigger is None:
        raise InvalidRequest(
            "give --trigger (code_change, schedule or webhook) or start from a --template "
            "(`copydesk automation templates` lists them)",
            field="trigger",
        )
    else:
        body["trigger"] = trigger
    try:
        automation, secret = manage.create(services, project, body)
    except InvalidRequest as exc:
        raise _flagged(exc) from None
    _print(args, manage.automation_api(services, automation, secret), _made(automation, secret, "created"))


def _update(args, settings: Settings) -> None:
    services = context.build(settings).services
    project = services.projects.get(args.project)
    current = services.automations.get(project.id, args.id)
    body = _fields(args)
    trigger = _trigger_fields(args)
    if trigger:
        kept = (
            current.trigger.to_api()
            if trigger.get("type", current.trigger.type.value) == current.trigger.type.value
            else {}
        )
        merged = {**kept, **trigger}
        if merged.get("mode") == "per_change" and "cron" not in trigger:
            merged = {k: v for k, v in merged.items() if k not in ("cron", "timeZone")}  # back to a run per change
        body["trigger"] = merged
    if not body:
        raise InvalidRequest(
            "nothing to change: give a flag (--enable, --disable, --name, --prompt, a trigger or an option)"
        )
    try:
        automation, secret = manage.update(services, project, current.id, body)
    except InvalidRequest as exc:
        raise _flagged(exc) from None
    _print(args, manage.automation_api(services, automation, secret), _made(automation, secret, "updated"))


def _made(automation: Automation, secret: str | None, what: str) -> str:
    text = f"{what} {_line(automation)}"
    if automation.trigger.type is TriggerType.WEBHOOK and secret is not None:
        text += (
            f"\n\nwebhook secret: {secret}\nThis secret is shown once; send it as `Authorization: Bearer "
            "<secret>` to the webhook URL (`copydesk automation show` prints it)."
        )
    return text


def _delete(args, settings: Settings) -> None:
    services = context.build(settings).services
    project = services.projects.get(args.project)
    services.automations.delete(project.id, args.id)
    _print(args, {"deleted": args.id}, f"deleted {args.id} and its run history (the jobs it started stay)")


def _run_now(args, settings: Settings) -> None:
    services = context.build(settings).services
    project = services.projects.get(args.project)
    automation = services.automations.get(project.id, args.id)
    try:
        run = manage.run_now(services, automation, args.note)
    except InvalidRequest as exc:
        raise _flagged(exc) from None
    shown = manage.run_api(services, run)
    job = services.jobs.find(run.job_id) if run.job_id else None
    _print(args, {"run": shown, "job": None if job is None else job.to_api()}, _run_line(shown))


def _rotate(args, settings: Settings) -> None:
    services = context.build(settings).services
    project = services.projects.get(args.project)
    automation, secret = services.automations.rotate_secret(project.id, args.id)
    _print(
        args,
        manage.automation_api(services, automation, secret),
        f"{secret}\n\nThe new secret is shown once; the old one stopped working.",
    )


def _fields(args) -> dict:
    """The API body fields the flags give (name, prompt, enabled, options)."""
    body: dict = {}
    if args.name is not None:
        body["name"] = args.name
    prompt = _read_prompt(args.prompt_file) if args.prompt_file else args.prompt
    if prompt is not None:
        body["prompt"] = prompt
    if args.enabled is not None:
        body["enabled"] = args.enabled
    options = {api: getattr(args, flag) for flag, api in _OPTION_FLAGS if getattr(args, flag) is not None}
    if options:
        body["options"] = {k: (None if v == "none" else v) for k, v in options.items()}
    return body


def _read_prompt(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"cannot read the prompt from {path} ({exc})", field="prompt") from None


def _trigger_fields(args) -> dict:
    fields = {api: getattr(args, flag) for flag, api in _TRIGGER_FLAGS if getattr(args, flag) is not None}
    return {"type": args.trigger, **fields} if args.trigger is not None else fields


def _max_tokens(raw: str) -> int | str:
    if raw == "none":
        return raw
    if not raw.isdecimal() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of tokens or `none`, not {raw!r}")
    return int(raw)


def _whole(raw: str) -> int:
    if not raw.isdecimal():
        raise argparse.ArgumentTypeError(f"expected a whole number, not {raw!r}")
    return int(raw)


def _limit(raw: str) -> int:
    if not raw.isdecimal() or not 1 <= int(raw) <= RUNS_KEPT:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {RUNS_KEPT}, not {raw!r}")
    return int(raw)


def _spec_flags(command: argparse.ArgumentParser) -> None:
    """The flags of create and update: what to call it, what it does, its trigger and its options."""
    command.add_argument("--name")
    prompt = command.add_mutually_exclusive_group()
    prompt.add_argument("--prompt", help="what the agent does on each run")
    prompt.add_argument("--prompt-file", metavar="PATH", help="read the prompt from this file")
    switch = command.add_mutually_exclusive_group()
    switch.add_argument("--enable", dest="enabled", action="store_const", const=True)
    switch.add_argument("--disable", dest="enabled", action="store_const", const=False)
    command.add_argument("--trigger", choices=[t.value for t in TriggerType], help="what starts a run")
    command.add_argument(
        "--repository",
        help="code_change: the source repository (owner/name on GitHub, a bare "
        "repository's absolute path on the local host)",
    )
    command.add_argument(
        "--mode",
        choices=("per_change", "batched"),
        help="code_change: a run per change, or one over what was merged, on --cron",
    )
    command.add_argument("--cron", help='five cron fields, e.g. "0 9 * * 1"')
    command.add_argument("--time-zone", help="IANA time zone of --cron (default: UTC)")
    command.add_argument(
        "--grouping",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="while its last pull request is open, a run adds a round to it (default: on)",
    )
    command.add_argument("--max-open-pull-requests", type=_whole, metavar="N")
    command.add_argument("--max-runs-per-day", type=_whole, metavar="N")
    command.add_argument("--reviewer", action="append", metavar="LOGIN", help="request review from (repeatable)")
    command.add_argument("--request-source-reviews", action=argparse.BooleanOptionalAction, default=None)
    command.add_argument("--comment-on-source", action=argparse.BooleanOptionalAction, default=None)
    command.add_argument("--max-tokens", type=_max_tokens, metavar="TOKENS", help="each run's budget, or `none`")
    command.add_argument("--json", action="store_true")


def add_commands(sub) -> None:
    """Add `automation` to the `copydesk` parser."""
    automation = sub.add_parser("automation", help="a project's automations: triggers that start jobs").add_subparsers(
        dest="action", required=True
    )
    create = automation.add_parser(
        "create", help="add an automation from flags or a --template (a webhook trigger's secret is printed once)"
    )
    create.add_argument("project")
    create.add_argument(
        "--template",
        help="start from this template (`copydesk automation templates`); the other flags override its fields",
    )
    _spec_flags(create)
    create.set_defaults(handler=_create, writes=True)
    update = automation.add_parser("update", help="change an automation: the flags given replace its fields")
    update.add_argument("project")
    update.add_argument("id", help="automation id")
    _spec_flags(update)
    update.set_defaults(handler=_update, writes=True)

    templates = automation.add_parser("templates", help="the templates an automation can start from")
    templates.add_argument("--json", action="store_true")
    templates.set_defaults(handler=_templates)
    listing = automation.add_parser("list", help="a project's automations with their triggers and next slot")
    listing.add_argument("project")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_list)
    runs = automation.add_parser("runs", help="an automation's runs, newest first, with the merge rate")
    runs.add_argument("project")
    runs.add_argument("id", help="automation id")
    runs.add_argument("--limit", type=_limit, default=RUNS_SHOWN, help=f"runs to show (default: {RUNS_SHOWN})")
    runs.add_argument("--cursor", help="show the runs older than this run id")
    runs.add_argument("--json", action="store_true")
    runs.set_defaults(handler=_runs)
    run = automation.add_parser("run", help="run an automation now")
    run.add_argument("project")
    run.add_argument("id", help="automation id")
    run.add_argument("--note", help="context for the agent (data, not instructions)")
    run.add_argument("--json", action="store_true")
    run.set_defaults(handler=_run_now, writes=True)
    for action, handler, text, writes in (
        ("show", _show, "an automation's trigger, options and prompt", False),
        ("delete", _delete, "delete an automation and its run history (its jobs stay)", True),
        ("rotate-secret", _rotate, "give a webhook trigger a new secret (printed once)", True),
    ):
        command = automation.add_parser(action, help=text)
        command.add_argument("project")
        command.add_argument("id", help="automation id")
        command.add_argument("--json", action="store_true")
        command.set_defaults(handler=handler, writes=writes)
