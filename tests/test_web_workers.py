"""How many gunicorn workers `copydesk web` starts: two per CPU it may use, at most eight, unless told."""

import os

import pytest

from bot import cli, web
from service.settings import Settings


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
