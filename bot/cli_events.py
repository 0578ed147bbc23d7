"""The `copydesk` commands of events and budgets: follow a job's events, cancel it, webhooks, token budgets."""

import argparse
import json
from collections.abc import Iterable

from bot import context
from service.api.streams import follow
from service.job_events import EventType, JobEvent
from service.outbound import endpoints
from service.settings import Settings
from service.store.job_events import check_event_id
from service.store.usage import month_of


def _print(args, data: dict, human: str) -> None:
    print(json.dumps(data) if getattr(args, "json", False) else human, flush=True)


def _events(args, settings: Settings) -> None:
    services = context.build(settings).services
    job = services.jobs.get(args.job)
    after = check_event_id(args.after, "--after")
    events: Iterable[JobEvent]
    if not args.follow:
        events = services.events.after(job.id, after, count=10_000)
    else:
        events = (
            e
            for e in follow(
                services.jobs,
                services.events,
                job.id,
                after=after,
                keep_open=False,
                wait_seconds=settings.sse_keepalive_seconds,
            )
            if e is not None
        )
    for event in events:
        _print(args, event.to_api(), _line(event))


def _line(event) -> str:
    data = event.data
    detail = {
        "run": lambda: " ".join(f"{k}={v}" for k, v in (data.get("run") or {}).items() if v is not None),
        "pr": lambda: (data.get("pullRequest") or {}).get("url", ""),
        "job": lambda: data["status"] + (f" ({data['error']['code']})" if data.get("error") else ""),
    }
    return f"{event.id}  {event.timestamp}  {event.type.value:18}  {detail[event.type.value.split('.')[0]]()}"


def _cancel(args, settings: Settings) -> None:
    job = context.build(settings).services.jobs.cancel(args.job)
    _print(args, job.to_api(), f"{job.id} {'stopping its run' if job.status.value == 'active' else job.status.value}")


def _webhook_add(args, settings: Settings) -> None:
    services = context.build(settings).services
    project = services.projects.get(args.project)
    endpoint, secret = endpoints.register(
        services, project.id, url=args.url, events=args.event or [], description=args.description or ""
    )
    _print(
        args,
        {**endpoint.to_api(), "secret": secret},
        f"{endpoint.id}\n{secret}\n\nThis secret is shown once; receivers verify signatures with it.",
    )


def _webhook_list(args, settings: Settings) -> None:
    hooks = context.build(settings).services.webhooks.of_project(args.project)
    lines = [
        f"{h.id}  {h.url}  {','.join(h.events) or 'all events'}"
        + ("" if h.enabled else f"  [disabled: {h.disabled_reason}]")
        for h in hooks
    ]
    _print(args, {"webhooks": [h.to_api() for h in hooks]}, "\n".join(lines) or "No webhook endpoints.")


def _webhook_delete(args, settings: Settings) -> None:
    context.build(settings).services.webhooks.delete(args.project, args.id)
    _print(args, {"deleted": args.id}, f"deleted {args.id}")


def _webhook_rotate(args, settings: Settings) -> None:
    endpoint, secret = endpoints.rotate(context.build(settings).services, args.project, args.id)
    _print(
        args,
        {**endpoint.to_api(), "secret": secret},
        f"{secret}\n\nThe new secret is shown once; the old one also signs for 24 hours.",
    )


def _webhook_deliveries(args, settings: Settings) -> None:
    services = context.build(settings).services
    log = services.webhooks.log(services.webhooks.get(args.project, args.id).id)
    lines = [
        f"{d.id}  {d.event_type:18}  {d.status.value:9}  attempts {d.attempts}  "
        f"{d.response_status or '-'}  {d.latency_ms if d.latency_ms is not None else '-'} ms  {d.error or ''}"
        for d in log
    ]
    _print(args, {"deliveries": [d.to_api() for d in log]}, "\n".join(lines) or "No deliveries yet.")


def _webhook_resend(args, settings: Settings) -> None:
    delivery = endpoints.resend(context.build(settings).services, args.project, args.id, args.delivery)
    _print(args, delivery.to_api(), f"queued another attempt of {delivery.id}")


def _budget(args, settings: Settings) -> None:
    project = context.build(settings).services.projects.set_max_tokens(args.project, args.max_tokens)
    _print(
        args,
        {"id": project.id, "maxTokens": project.max_tokens},
        f"{project.id}: new jobs get {project.max_tokens or 'no'} token budget",
    )


def _usage(args, settings: Settings) -> None:
    services = context.build(settings).services
    ledger = services.usage
    from bot.cli import account_host  # bot.cli imports this module

    host = args.host or account_host(args.account, services.projects.all())
    if args.cap is not False:
        ledger.set_cap(host, args.account, args.cap)
    month = args.month or month_of()
    account = ledger.account(host, args.account, month)
    keys = [(k, ledger.key(k.id, month)) for k in services.keys.of_account(args.account, host)]
    cap = ledger.cap(host, args.account)
    lines = [
        f"{args.account} ({host}) {month}: {account.input_tokens:,} input ({account.cache_read_tokens:,} from "
        f"cache) + {account.output_tokens:,} output tokens, {account.total:,} billable"
        f" (monthly cap: {f'{cap:,}' if cap else 'none'})"
    ]
    lines += [f"  {k.id} {k.name or '-':16} {u.input_tokens:,} + {u.output_tokens:,}" for k, u in keys if u.total]
    _print(
        args,
        {
            "account": args.account,
            "host": host,
            **account.to_api(),
            "monthlyCap": cap,
            "keys": [{"id": k.id, **u.to_api()} for k, u in keys],
        },
        "\n".join(lines),
    )


def _tokens(raw: str) -> int | None:
    if raw == "none":
        return None
    if not raw.isdecimal() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of tokens or `none`, not {raw!r}")
    return int(raw)


def add_commands(sub) -> None:
    """Add `events`, `cancel`, `webhook`, `budget` and `usage` to the `copydesk` parser."""
    events = sub.add_parser("events", help="print a job's events; --follow waits for more until it leaves active")
    events.add_argument("job", help="job id")
    events.add_argument("--follow", action="store_true", help="keep printing until the job is no longer active")
    events.add_argument("--after", default="0", help="start after this event id")
    events.add_argument("--json", action="store_true", help="one JSON object per line")
    events.set_defaults(handler=_events)

    cancel = sub.add_parser("cancel", help="cancel an active job (its run stops, waiting messages are cancelled)")
    cancel.add_argument("job", help="job id")
    cancel.add_argument("--json", action="store_true")
    cancel.set_defaults(handler=_cancel, writes=True)

    webhook = sub.add_parser("webhook", help="webhook endpoints of a project").add_subparsers(
        dest="action", required=True
    )
    add = webhook.add_parser("add", help="register an endpoint (its secret is printed once)")
    add.add_argument("project")
    add.add_argument("url")
    add.add_argument(
        "--event",
        action="append",
        choices=[t.value for t in EventType],
        help="send only this event type (repeatable; default: all)",
    )
    add.add_argument("--description")
    add.add_argument("--json", action="store_true")
    add.set_defaults(handler=_webhook_add, writes=True)
    for action, handler, text in (
        ("list", _webhook_list, "list a project's endpoints"),
        ("delete", _webhook_delete, "delete an endpoint"),
        ("rotate", _webhook_rotate, "give an endpoint a new secret (printed once)"),
        ("deliveries", _webhook_deliveries, "an endpoint's delivery log"),
        ("resend", _webhook_resend, "send a delivery again"),
    ):
        command = webhook.add_parser(action, help=text)
        command.add_argument("project")
        if action != "list":
            command.add_argument("id", help="webhook endpoint id")
        if action == "resend":
            command.add_argument("delivery", help="delivery id")
        command.add_argument("--json", action="store_true")
        command.set_defaults(handler=handler, writes=action in ("delete", "rotate", "resend"))

    budget = sub.add_parser("budget", help="set a project's default token budget for new jobs")
    budget.add_argument("project")
    budget.add_argument(
        "max_tokens",
        metavar="TOKENS",
        type=_tokens,
        help="billable tokens per job (cached input at its price), or `none`",
    )
    budget.add_argument("--json", action="store_true")
    budget.set_defaults(handler=_budget, writes=True)

    usage = sub.add_parser("usage", help="an account's model tokens this month, per key; --cap sets a monthly cap")
    usage.add_argument("account")
    usage.add_argument(
        "--host", choices=("local", "github"), help="the account's code host (default: the one its projects are on)"
    )
    usage.add_argument("--month", help="YYYY-MM (default: this month)")
    usage.add_argument(
        "--cap",
        metavar="TOKENS",
        type=_tokens,
        default=False,
        help="set the account's monthly cap, or `none` to remove it",
    )
    usage.add_argument("--json", action="store_true")
    usage.set_defaults(handler=_usage, writes=True)  # --cap writes
