"""The `copydesk` command run as a real process."""

import os
import subprocess

from tests.web_process import COPYDESK


def run(env, *args, check=True):
    proc = subprocess.run([COPYDESK, *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc
