"""How many gunicorn workers `copydesk web` starts (two per CPU it may use, at most eight, unless told), and how
connections reach them."""

import os
import socket
import subprocess
from contextlib import ExitStack

import pytest

from bot import cli, web
from service.settings import Settings
from tests.conftest import free_port
from tests.web_process import COPYDESK, WebServer


@pytest.mark.parametrize(("cpus", "workers"), [(1, 2), (2, 4), (3, 6), (4, 8), (64, 8)])
def test_two_workers_per_cpu_this_process_may_use_at_most_eight(monkeypatch, cpus, workers):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    assert web.default_workers() == workers


def test_an_explicit_count_is_served_and_a_count_below_one_refused(monkeypatch, capsys, redis_url, tmp_path):
    served = {}
    monkeypatch.setattr(web, "serve", lambda **chosen: served.update(chosen))
    monkeypatch.setattr("bot.doctor.startup_checks", lambda ctx, role: True)
    settings = Settings(redis_url=redis_url, data_dir=tmp_path / "data")
    parser = cli._parser()
    for argv, workers in ((["web", "--workers", "3"], 3), (["web"], web.default_workers())):
        args = parser.parse_args(argv)
        assert args.handler(args, settings) == 0 and served["workers"] == workers
    with pytest.raises(SystemExit):
        parser.parse_args(["web", "--workers", "0"])
    assert "--workers: must be at least 1, not 0" in capsys.readouterr().err


def test_keep_alive_connections_are_spread_over_the_workers(redis_url, tmp_path):
    # On one shared listening socket, the worker already running accepted a burst of connections before the others
    # woke (all 16 on one of 4 workers, or 15 and 1): bot.web gives each worker a socket of its own.
    port = free_port()
    settings = Settings(redis_url=redis_url, data_dir=tmp_path / "data", base_url=f"http://127.0.0.1:{port}")
    with WebServer(settings.to_env(), port, tmp_path / "web.log", workers=4) as server, ExitStack() as opened:
        clients = [opened.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10)) for _ in range(16)]
        for client in clients:
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert all(client.recv(4096).startswith(b"HTTP/1.1 200 ") for client in clients)  # kept open
        held = server.connections_per_worker()
    assert sum(held.values()) == 16 and len(held) == 4, held
    # Spread by a hash of each connection's addresses: 3 or 4 workers hold some but for 1 run in ~10,000.
    assert sum(1 for count in held.values() if count) >= 3, held


def test_a_port_something_listens_on_is_refused_before_the_workers_start(redis_url, tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        env = {**os.environ, **Settings(redis_url=redis_url, data_dir=tmp_path / "data").to_env()}
        done = subprocess.run(
            [COPYDESK, "web", "--port", str(port)], env=env, capture_output=True, text=True, timeout=60
        )
    assert done.returncode != 0
    assert f"copydesk web: error: cannot listen on http://127.0.0.1:{port}: Address already in use" in done.stderr
    assert "Booting worker" not in done.stderr + done.stdout
