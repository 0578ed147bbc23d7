"""The `copydesk` command, run as a real process (`run`) or through `bot.cli.main` in this one (`run_in_process`)."""

import contextlib
import io
import logging
import os
import subprocess
from collections.abc import Iterator

from tests.web_process import COPYDESK


def run(env, *args, check=True):
    proc = subprocess.run([COPYDESK, *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def run_in_process(env, *args, check=True) -> subprocess.CompletedProcess:
    """`copydesk *args` through `bot.cli.main` with `env` over this process's environment, its output captured;
    the same result as `run` without starting a process (the command reads its settings from the environment)."""
    from bot.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with _environment(env), _logging_restored(), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse refusing the arguments
            code = exc.code if isinstance(exc.code, int) else 1
    proc = subprocess.CompletedProcess([COPYDESK, *args], code, stdout.getvalue(), stderr.getvalue())
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@contextlib.contextmanager
def _environment(env) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _logging_restored() -> Iterator[None]:
    """`main` sends the root logger to its stderr of the moment; give pytest its handlers back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        logging.captureWarnings(False)
