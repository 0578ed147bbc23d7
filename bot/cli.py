"""The `copydesk` command: projects, API keys, automations, the web server, the worker, the doctor and the demo."""

import argparse
import contextlib
import io
import json
import signal
import sys
from pathlib import Path

import redis

from bot import cli_automations, cli_events, context, logs
from bot.web import WORKER_CLASSES, default_workers
from service.codehost.base import CodeHostError
from service.errors import ServiceError
from service.projectstate import DisabledReason, reason_of
from service.settings import Settings, SettingsError, worker_name
from service.store.schema import SchemaMismatch


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `copydesk` console script."""
    args = _parser().parse_args(argv)
    try:
        settings = Settings.from_env()
        context.github_settings(settings)  # a malformed GitHub App setting stops every command here too
        logs.configure(settings.log_json)
        if not getattr(args, "writes", False):
            return args.handler(args, settings) or 0
        # A write command says it is done only once the replicas hold its writes (COPYDESK_REDIS_MIN_REPLICAS).
        with contextlib.redirect_stdout(io.StringIO()) as output:
            code = args.handler(args, settings) or 0
        context.build(settings).services.durability.confirm()
        sys.stdout.write(output.getvalue())
        return code
    except (ServiceError, CodeHostError, SettingsError) as exc:
        return _fail(str(exc) or exc.__class__.__name__)
    except redis.ConnectionError as exc:
        return _fail(f"cannot reach Redis ({exc}); set COPYDESK_REDIS_URL or start redis-server")
    except redis.ResponseError as exc:  # READONLY (a replica), NOREPLICAS (a primary short of replicas)
        return _fail(f"Redis refused the command: {exc}; `copydesk doctor` says why")


def _fail(text: str) -> int:
    print(f"copydesk: error: {text}", file=sys.stderr)
    return 2


def _print(args, data: dict, human: str) -> None:
    print(json.dumps(data) if getattr(args, "json", False) else human)


# -- projects --------------------------------------------------------------------------------


def _project_add(args, settings: Settings) -> None:
    ctx = context.build(settings)
    project = ctx.local.register(
        ctx.services.projects,
        path=Path(args.repository),
        ref=args.ref,
        account=args.account,
        docs_root=args.docs_root or "",
    )
    _print(args, _project_json(project), f"{project.id}  {project.repository} ({project.ref})")


def _project_list(args, settings: Settings) -> None:
    projects = context.build(settings).services.projects.all()
    lines = [
        f"{p.id}  {p.host:6}  {p.account:12}  {p.repository} ({p.ref})" + ("" if p.enabled else "  [disabled]")
        for p in projects
    ]
    _print(args, {"projects": [_project_json(p) for p in projects]}, "\n".join(lines) or "No projects yet.")


def _project_switch(args, settings: Settings) -> None:
    projects = context.build(settings).services.projects
    if args.action == "enable":
        project = projects.enable(args.id)
    else:
        project = projects.disable(args.id, DisabledReason.ADMIN)
    reason = reason_of(project.disabled_reason)
    _print(
        args,
        _project_json(project),
        f"{project.id} enabled"
        if project.enabled
        else f"{project.id} stays disabled by its code host ({reason.label}); it comes back when its installation "
        "is restored"
        if reason.by_host
        else f"{project.id} disabled",
    )


def _project_json(project) -> dict:
    return {
        "id": project.id,
        "account": project.account,
        "host": project.host,
        "repository": project.repository,
        "url": project.web_url,
        "ref": project.ref,
        "docsRoot": project.docs_root,
        "enabled": project.enabled,
        "disabledReason": project.disabled_reason,
        "createdAt": project.created_at,
    }


# -- jobs ------------------------------------------------------------------------------------


def _job_delete(args, settings: Settings) -> None:
    job = context.build(settings).services.jobs.delete(args.id)
    kept = {"branch": job.branch, "prLink": job.pr_link}
    _print(
        args,
        {"deleted": True, "id": job.id, "kept": kept},
        f"deleted {job.id}"
        + (
            f"; its branch {job.branch} and pull request {job.pr_link or '(none)'} stay on the code host"
            if job.branch
            else ""
        ),
    )


# -- API keys --------------------------------------------------------------------------------


def _key_create(args, settings: Settings) -> None:
    from service.apikeys import expiry_days
    from service.models import KeyAccess

    services = context.build(settings).services
    host = args.host or account_host(args.account, services.projects.all())
    for project_id in args.project:
        project = services.projects.find(project_id)
        if project is None or project.account != args.account or project.host != host:
            raise CodeHostError(f"account {args.account!r} has no project {project_id} on the {host} code host")
    key, plaintext = services.keys.create(
        account=args.account,
        name=args.name or "",
        projects=args.project,
        access=KeyAccess(args.access.replace("-", "_")),
        expires_in_days=expiry_days(args.expires),
        created_by="operator",
        host=host,
    )
    expiry = f"expires {key.expires_at}" if key.expires_at else "never expires"
    _print(
        args,
        {"id": key.id, "key": plaintext, **key.to_public()},
        f"{key.id}\n{plaintext}\n\n{args.access}, {expiry}. This key is shown once; store it now. "
        "Use it as `Authorization: Bearer <key>`.",
    )


def account_host(account: str, projects: list) -> str:
    """The code host family of `account` when --host is not given: local for the operator's local accounts (as on
    the dashboard), else GitHub; an account name on both needs --host."""
    from bot.dashboard.operator import LOCAL_ACCOUNT
    from bot.github.codehost import HOST as GITHUB_HOST
    from service.codehost.local import HOST as LOCAL_HOST

    hosts = {p.host for p in projects if p.account == account} | ({LOCAL_HOST} if account == LOCAL_ACCOUNT else set())
    if len(hosts) > 1:
        raise CodeHostError(
            f"account {account!r} has projects on more than one code host; choose one with "
            "--host local or --host github"
        )
    return hosts.pop() if hosts else GITHUB_HOST


def _key_revoke(args, settings: Settings) -> None:
    key = context.build(settings).services.keys.revoke(args.id, by="operator")
    _print(args, key.to_public(), f"revoked {key.id}")


def _key_list(args, settings: Settings) -> None:
    from service.clock import now_iso

    api_keys = context.build(settings).services.keys
    keys = api_keys.of_account(args.account) if args.account else api_keys.all()
    stamp = now_iso()

    def line(k) -> str:
        state = "revoked" if k.revoked_at else ("expired" if k.expired(stamp) else f"expires {k.expires_at or 'never'}")
        scope = ",".join(k.projects) or "all projects"
        return (
            f"{k.prefix}  {k.account:12}  {k.name or '-':16}  {k.access.value:10}  {scope}  by {k.created_by or '-'} "
            f"{k.created_at}  {state}  last used {k.last_used_at or 'never'}  uses {k.use_count}"
        )

    _print(args, {"keys": [k.to_public() for k in keys]}, "\n".join(map(line, keys)) or "No API keys yet.")


def _key_audit(args, settings: Settings) -> None:
    events = context.build(settings).services.keys.audit(args.account)
    lines = [f"{e.at}  {e.actor:16}  {e.action:8}  {e.key_id}  {e.key_name}" for e in events]
    _print(args, {"events": [e.to_public() for e in events]}, "\n".join(lines) or "No key events yet.")


# -- GitHub App ------------------------------------------------------------------------------


def _github_register_link(args, settings: Settings) -> None:
    from bot.github.registration import TOKEN_TTL_SECONDS, issue_registration_token, registration_link

    token = issue_registration_token(context.build(settings).services.redis)
    link = registration_link(settings.base_url, token)
    _print(
        args,
        {"url": link, "expiresIn": TOKEN_TTL_SECONDS},
        f"{link}\n\nOpen this link to register the GitHub App. It works once, within an hour.",
    )


# -- dashboard -------------------------------------------------------------------------------


def _dashboard_login_link(args, settings: Settings) -> None:
    from bot.dashboard.operator import LINK_TTL_SECONDS, issue_login_link

    link = issue_login_link(context.build(settings).services.redis, settings.base_url)
    _print(
        args,
        {"url": link, "expiresIn": LINK_TTL_SECONDS},
        f"{link}\n\nOpen this link to sign in to the dashboard as the operator (admin of the local accounts). "
        f"It works once, within {LINK_TTL_SECONDS // 60} minutes.",
    )


# -- local pull requests -------------------------------------------------------------------


def _pull_settle(args, settings: Settings) -> None:
    ctx = context.build(settings)
    project = ctx.services.projects.get(args.project)
    if args.action == "merge":
        pull = ctx.local.merge(
            project, args.number, committer_name=settings.git_author_name, committer_email=settings.git_author_email
        )
    else:
        pull = ctx.local.close(project, args.number)
    # A merged or closed pull request ends its job, as on any code host.
    job = ctx.services.jobs.archive(pull.job_id)
    _print(
        args,
        {"pull": pull.number, "state": pull.state, "job": job.to_api()},
        f"pull request #{pull.number} {pull.state}; job {job.id} archived",
    )


# -- processes -------------------------------------------------------------------------------


def _web(args, settings: Settings) -> int:
    from bot.doctor import startup_checks
    from bot.web import serve

    if not startup_checks(context.build(settings), "web"):
        return 2
    workers = args.workers or default_workers()
    serve(host=args.host, port=args.port, workers=workers, worker_class=args.worker_class)
    return 0


def _worker(args, settings: Settings) -> int:
    from bot.doctor import report, startup_checks
    from bot.worker import run_worker
    from service.preflight import RedisRefused
    from service.replication import NotWritable

    if args.name:
        settings = settings.with_overrides(worker_name=worker_name(args.name, "--name"))
    if args.processes > 1 and args.burst:
        return _fail("--burst runs one worker process; leave out --processes")
    ctx = context.build(settings)
    # A pool's children were checked by their supervisor; they still check Redis at their first contact.
    if not (args.supervised or startup_checks(ctx, "worker")) or not _enable_metrics(settings):
        return 2
    if not args.supervised:  # one per host: the supervisor's or the lone worker's
        from bot.metrics_server import serve_in_background

        try:
            serve_in_background(settings)
        except OSError as exc:
            return _fail(
                f"cannot serve metrics on port {settings.worker_metrics_port} ({exc.strerror}); "
                "choose another COPYDESK_WORKER_METRICS_PORT"
            )
    if args.processes > 1:
        from bot.workerpool import WorkerPool

        return WorkerPool(ctx, args.processes).run()
    if args.supervised:
        from bot.rqworker import signal_on_parent_death

        signal_on_parent_death(signal.SIGTERM)  # a child of a supervisor that died hands its run back
    try:
        run_worker(ctx, burst=args.burst, upkeep=not args.supervised)
    except RedisRefused as refused:  # Redis was down at start; its settings failed at the first contact
        report(refused.checks, "worker", json_lines=settings.log_json)
        return 2
    except SchemaMismatch as mismatch:  # the same, for the data's schema version
        print(f"copydesk worker: not starting: {mismatch}", file=sys.stderr)
        return 2
    except NotWritable as refusal:  # --burst only: a long-running worker waits for a writable primary
        print(f"copydesk worker: error: Redis takes no writes: {refusal}", file=sys.stderr)
        return 2
    return 0


def _migrate(args, settings: Settings) -> int:
    from service.store.migrations import MigrationBusy, migrate

    try:
        done = migrate(context.build(settings).services.redis, event_ttl_seconds=settings.event_ttl_days * 86400)
    except (MigrationBusy, SchemaMismatch) as exc:
        return _fail(str(exc))
    except redis.exceptions.LockError:
        # Stalled past its lock's lifetime: another migration may have started; each record is done once anyway.
        return _fail("the migration lost its lock (it stalled for over a minute); run `copydesk migrate` again")
    if done.found is None:
        human = f"Redis held no Copydesk data: initialised at schema version {done.version}"
    elif not done.steps:
        human = f"schema version {done.version}: nothing to migrate"
    else:
        human = "\n".join(
            [f"migrated schema version {done.found} to {done.version}:"]
            + [f"  {s.name}: {s.changed} changed ({s.summary})" for s in done.steps]
        )
    _print(args, done.to_json(), human)
    return 0


def _enable_metrics(settings: Settings) -> bool:
    """Record this process's metrics where `/metrics` reads them; False (with the reason) when the folder is not
    writable."""
    from service import metrics

    try:
        metrics.enable(settings.metrics_dir)
    except OSError as exc:
        _fail(f"cannot write metrics to {settings.metrics_dir} ({exc.strerror}); set COPYDESK_METRICS_DIR")
        return False
    return True


def _positive(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _doctor(args, settings: Settings) -> int:
    from bot.doctor import doctor, worker_alive

    if args.worker_alive is not None:
        return worker_alive(settings, args.worker_alive or None, args.max_age)
    return doctor(context.build(settings), as_json=args.json)


def _recover(args, settings: Settings) -> None:
    from bot.worker import sweep_once

    kicked = sweep_once(context.build(settings))
    _print(args, {"queued": kicked}, f"queued {len(kicked)} stranded job(s)" + "".join(f"\n  {j}" for j in kicked))


def _demo(args, settings: Settings) -> int:
    from bot.demo import run_demo

    return run_demo(settings, keep=args.keep, serve=args.serve)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="copydesk", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    project = sub.add_parser("project", help="register and list projects").add_subparsers(dest="action", required=True)
    add = project.add_parser("add", help="register a local bare repository as a project")
    add.add_argument("--repository", required=True, help="path of a bare git repository")
    add.add_argument("--ref", required=True, help="base branch, e.g. main")
    add.add_argument("--docs-root", help="folder of the docs inside the repository")
    add.add_argument("--account", default="local", help="account that owns the project (default: local)")
    add.add_argument("--json", action="store_true", help="print one JSON object")
    add.set_defaults(handler=_project_add, writes=True)
    listing = project.add_parser("list", help="list projects with their ids")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_project_list)
    for action, text in (
        ("disable", "stop taking jobs and messages for a project (its jobs stay readable)"),
        ("enable", "take jobs and messages for a project again"),
    ):
        switch = project.add_parser(action, help=text)
        switch.add_argument("id", help="project id")
        switch.add_argument("--json", action="store_true")
        switch.set_defaults(handler=_project_switch, writes=True)

    job = sub.add_parser("job", help="delete jobs").add_subparsers(dest="action", required=True)
    job_delete = job.add_parser(
        "delete",
        help="delete a job that is not active: its prompts, conversation and "
        "events (its branch and pull request stay on the code host)",
    )
    job_delete.add_argument("id", help="job id")
    job_delete.add_argument("--json", action="store_true")
    job_delete.set_defaults(handler=_job_delete)

    key = sub.add_parser("key", help="create, list and revoke API keys").add_subparsers(dest="action", required=True)
    create = key.add_parser("create", help="create an API key (printed once)")
    create.add_argument("--account", required=True)
    create.add_argument("--project", action="append", default=[], help="limit the key to this project (repeatable)")
    create.add_argument("--name", help="a label to recognise the key by")
    create.add_argument(
        "--access",
        choices=("read-write", "read-only"),
        default="read-write",
        help="read-only keys may only GET (default: read-write)",
    )
    create.add_argument(
        "--expires",
        default="90",
        metavar="{7,30,60,90,never}",
        help="days until the key stops working, or never (default: 90)",
    )
    create.add_argument(
        "--host",
        choices=("local", "github"),
        help="the code host of the account's projects; the key works on no other (default: local "
        "for `local` and accounts with local projects, else github)",
    )
    create.add_argument("--json", action="store_true")
    create.set_defaults(handler=_key_create, writes=True)
    revoke = key.add_parser("revoke", help="revoke an API key by id")
    revoke.add_argument("id")
    revoke.add_argument("--json", action="store_true")
    revoke.set_defaults(handler=_key_revoke, writes=True)
    keys = key.add_parser("list", help="list API keys (never their secrets)")
    keys.add_argument("--account", help="only this account's keys")
    keys.add_argument("--json", action="store_true")
    keys.set_defaults(handler=_key_list)
    audit = key.add_parser("audit", help="who created or revoked which key of an account, newest first")
    audit.add_argument("--account", required=True)
    audit.add_argument("--json", action="store_true")
    audit.set_defaults(handler=_key_audit)

    dashboard = sub.add_parser("dashboard", help="sign in to the dashboard without GitHub").add_subparsers(
        dest="action", required=True
    )
    login_link = dashboard.add_parser("login-link", help="print a one-time dashboard sign-in link for the operator")
    login_link.add_argument("--json", action="store_true")
    login_link.set_defaults(handler=_dashboard_login_link, writes=True)

    github = sub.add_parser("github", help="register the GitHub App").add_subparsers(dest="action", required=True)
    register_link = github.add_parser("register-link", help="print a one-time link to register the GitHub App")
    register_link.add_argument("--json", action="store_true")
    register_link.set_defaults(handler=_github_register_link, writes=True)

    pull = sub.add_parser("pull", help="merge or close a local pull request").add_subparsers(
        dest="action", required=True
    )
    for action, text in (
        ("merge", "merge into the base branch and archive the job"),
        ("close", "close without merging and archive the job"),
    ):
        settle = pull.add_parser(action, help=text)
        settle.add_argument("project", help="project id")
        settle.add_argument("number", type=int, help="pull request number")
        settle.add_argument("--json", action="store_true")
        settle.set_defaults(handler=_pull_settle, writes=True)

    web = sub.add_parser("web", help="serve the API (gunicorn, gevent workers)")
    web.add_argument("--host", default="127.0.0.1")
    web.add_argument("--port", type=int, default=8000)
    web.add_argument(
        "--workers",
        type=_positive,
        help="gunicorn worker processes (default: 2 per CPU this process may use, at most 8)",
    )
    web.add_argument(
        "--worker-class",
        choices=WORKER_CLASSES,
        default="gevent",
        help="gevent (default): a greenlet per connection; gthread: a thread each, 8 per worker",
    )
    web.set_defaults(handler=_web)

    worker = sub.add_parser(
        "worker",
        help="run a worker on Copydesk's GitHub events, webhook and runs queues "
        "(in that order), with RQ's scheduler for webhook retries",
    )
    worker.add_argument("--burst", action="store_true", help="exit when both queues are empty")
    worker.add_argument(
        "--name", help="the worker's name in heartbeats (default: COPYDESK_WORKER_NAME, else <hostname>.<pid>)"
    )
    worker.add_argument(
        "--processes",
        type=_positive,
        default=1,
        metavar="N",
        help="run N jobs at once: N worker processes (named NAME-1..NAME-N) under one supervisor "
        "that alone sweeps, fans webhooks out and maintains mirrors, and restarts a worker "
        "that dies (default: 1, this process)",
    )
    worker.add_argument("--supervised", action="store_true", help=argparse.SUPPRESS)  # a child of --processes
    worker.set_defaults(handler=_worker)

    doctor = sub.add_parser("doctor", help="check Redis, git, the data folder and the models; list the workers")
    doctor.add_argument("--json", action="store_true")
    doctor.add_argument(
        "--worker-alive",
        nargs="?",
        const="",
        metavar="NAME",
        help="liveness probe: exit 0 if worker NAME (without NAME: a worker of this host) published "
        "a heartbeat recently, else 1; reads the heartbeat files only, not Redis",
    )
    doctor.add_argument(
        "--max-age",
        type=float,
        metavar="SECONDS",
        help="with --worker-alive: the oldest heartbeat that counts (default: 3 heartbeat intervals)",
    )
    doctor.set_defaults(handler=_doctor)

    migrate = sub.add_parser(
        "migrate",
        help="upgrade the records in Redis to this version's schema (idempotent; "
        "stop older web and worker processes first)",
    )
    migrate.add_argument("--json", action="store_true")
    migrate.set_defaults(handler=_migrate)

    recover = sub.add_parser("recover", help="queue messages that were stored but never queued")
    recover.add_argument("--json", action="store_true")
    recover.set_defaults(handler=_recover, writes=True)

    cli_events.add_commands(sub)
    cli_automations.add_commands(sub)

    demo = sub.add_parser("demo", help="run a whole job end to end on this machine")
    demo.add_argument(
        "--keep",
        action="store_true",
        help="keep the demo's project, key, records and folder (removed at the end otherwise)",
    )
    demo.add_argument(
        "--serve", action="store_true", help="afterwards, print a dashboard sign-in link and keep serving until Ctrl-C"
    )
    demo.set_defaults(handler=_demo)
    return parser


if __name__ == "__main__":
    sys.exit(main())
