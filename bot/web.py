"""Serves the Flask app with gunicorn's gevent workers: slow clients and event streams cost a greenlet each.

Run as `python -m bot.web`: gevent patches the standard library in each worker before the app (redis,
requests, ssl) is imported, which is why `copydesk web` starts this module in a fresh interpreter.
"""

import argparse
import gc
import logging
import os
import socket
import sys

from gunicorn.app.base import BaseApplication

from bot import logs  # the standard library's logging and threading only, which gevent patches in place
from service.settings import Settings

WORKER_CLASSES = ("gevent", "gthread")  # gthread: the thread-per-connection model, kept for the benchmark
WORKER_CONNECTIONS = 1000  # open connections one gevent worker holds (slow bodies, event streams, requests)
MAX_DEFAULT_WORKERS = 8  # a container held to a few CPUs by a quota still sees all of its host's


def default_workers() -> int:
    """Two web workers per CPU this process may run on, at most MAX_DEFAULT_WORKERS."""
    # A worker the kernel holds off the CPU stalls every request it has in flight: with more workers each holds
    # fewer. On 2 CPUs at 16 connections, 4 workers kept GET job's p99 at ~15 ms where 2 let it reach 24-33 ms,
    # for ~3 % fewer requests a second (medians of 4-5 interleaved 5 s runs).
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(2 * cpus, MAX_DEFAULT_WORKERS)


# gunicorn's default access line plus the duration and the request id (the X-Request-Id every response carries).
ACCESS_LOG_FORMAT = '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" %(M)sms %({x-request-id}o)s'


def options(*, host: str, port: int, workers: int, worker_class: str = "gevent", json_logs: bool = False) -> dict:
    """gunicorn's settings for `copydesk web`."""
    chosen = {
        "bind": f"{host}:{port}",
        "workers": workers,
        "worker_class": worker_class,
        "timeout": 30,
        "graceful_timeout": 10,
        "accesslog": "-",
        "errorlog": "-",
        "access_log_format": ACCESS_LOG_FORMAT,
        "logger_class": "bot.accesslog.JsonLogger" if json_logs else "bot.accesslog.RedactingLogger",
        # gunicorn >= 25.1 opens a control socket at one path per user: two servers would fight over it.
        "control_socket_disable": True,
        # Each worker listens on a socket of its own (SO_REUSEPORT) and the kernel spreads new connections over
        # them by their addresses. On one shared socket, the worker already running accepted a burst of
        # connections before the others woke: wrk's 16 keep-alive connections sat on 1 or 2 of 4 workers while
        # the rest idled. The price: connections still queued on a worker's socket when it dies are reset.
        "reuse_port": True,
    }
    if worker_class == "gevent":
        chosen["worker_connections"] = WORKER_CONNECTIONS
    else:
        chosen["threads"] = 8
    return chosen


class _Gunicorn(BaseApplication):
    def __init__(self, settings: Settings, chosen: dict) -> None:
        self._settings = settings
        self._options = chosen
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            if key in self.cfg.settings:  # settings newer than the installed gunicorn are skipped
                self.cfg.set(key, value)
        metrics_dir = self._settings.metrics_dir

        def child_exit(server, worker) -> None:
            from service import metrics

            metrics.process_ended(metrics.process_identity(worker.pid), metrics_dir)

        self.cfg.set("child_exit", child_exit)

    def load(self):
        # Imported here, in the worker, after gevent has patched sockets, ssl and threads.
        from bot.app import create_app
        from service import metrics

        logs.configure(self._settings.log_json)
        metrics.enable(self._settings.metrics_dir)
        app = create_app(self._settings)
        # What the app holds from now on (modules, routes, the OpenAPI document: ~90,000 objects) lives as long as
        # the worker: out of the collector's sight, a full collection costs what requests leave, not ~40 ms.
        gc.freeze()
        return app


def serve(*, host: str, port: int, workers: int, worker_class: str = "gevent") -> None:
    """Replace this process with the web server (a fresh interpreter, so nothing is imported unpatched)."""
    argv = [
        sys.executable,
        "-m",
        "bot.web",
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--worker-class",
        worker_class,
    ]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)


def ensure_free(host: str, port: int) -> None:
    """Exit with an error when something listens on `host`:`port` already. The workers bind it with SO_REUSEPORT,
    which another server of this user doing the same would share with them instead of refusing."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn's: a TIME_WAIT does not count
        try:
            probe.bind(address)
        except OSError as exc:
            raise SystemExit(f"copydesk web: error: cannot listen on {_url(host, port)}: {exc.strerror}") from None


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def main(argv: list[str] | None = None) -> None:
    """Run gunicorn with the app until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m bot.web")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--worker-class", choices=WORKER_CLASSES, default="gevent")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    ensure_free(args.host, args.port)
    logs.configure(settings.log_json)
    # gunicorn's own "Listening at" line names no address when each worker binds its own socket.
    logging.getLogger("copydesk.web").info("listening on %s (%d workers)", _url(args.host, args.port), args.workers)
    chosen = options(
        host=args.host,
        port=args.port,
        workers=args.workers,
        worker_class=args.worker_class,
        json_logs=settings.log_json,
    )
    _Gunicorn(settings, chosen).run()


if __name__ == "__main__":
    main()
