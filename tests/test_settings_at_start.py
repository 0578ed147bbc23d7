"""A malformed setting stops every `copydesk` command at start with one line and exit 2, never a traceback."""

import argparse

import pytest

from bot.cli import _parser, main
from service.settings import Settings, SettingsError

BAD_REDIS_URLS = [
    "localhost:6379",
    "http://127.0.0.1:6379/0",
    "redis://127.0.0.1:port/0",
    "redis://127.0.0.1:6379/x",
    "redis://127.0.0.1:99999/0",
    "redis://",
]


def _leaf_commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[list[str]]:
    """Every command line the parser accepts down to a handler, its required arguments filled with plain values."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subparsers:
        return [argv for name, sub in subparsers[0].choices.items() for argv in _leaf_commands(sub, (*prefix, name))]
    argv = list(prefix)
    for action in parser._actions:
        if action.option_strings and action.required:
            argv += [action.option_strings[0], "1"]
        elif not action.option_strings and action.nargs != 0:
            argv.append("1")
    return [argv]


COMMANDS = _leaf_commands(_parser())


def test_the_commands_are_all_found():
    names = {" ".join(a for a in argv if a != "1" and not a.startswith("--")) for argv in COMMANDS}
    assert {"web", "worker", "doctor", "demo", "project add", "project list", "key create", "recover"} <= names


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_every_command_refuses_a_malformed_redis_url(argv, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COPYDESK_REDIS_URL", "redis://127.0.0.1:port/0")
    monkeypatch.setenv("COPYDESK_DATA_DIR", str(tmp_path))
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("copydesk: error: COPYDESK_REDIS_URL"), err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "variable, value",
    [
        ("COPYDESK_BASE_URL", "copydesk.example.com"),
        ("COPYDESK_LOG_FORMAT", "yaml"),
        ("COPYDESK_MAX_STEPS", "many"),
        ("COPYDESK_ALLOW_REDIS_EVICTION", "perhaps"),
        ("GITHUB_APP_ID", "my app"),
        ("GITHUB_API_URL", "api.github.com"),
    ],
)
@pytest.mark.parametrize("command", [["web"], ["worker"], ["doctor"], ["project", "list"]], ids=" ".join)
def test_other_malformed_settings_stop_at_start_too(command, variable, value, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv(variable, value)
    monkeypatch.setenv("COPYDESK_DATA_DIR", str(tmp_path))
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and variable in err and "Traceback" not in err, err


@pytest.mark.parametrize("url", BAD_REDIS_URLS)
def test_malformed_redis_urls_are_named(url):
    with pytest.raises(SettingsError, match="COPYDESK_REDIS_URL"):
        Settings.from_env({"COPYDESK_REDIS_URL": url})


def test_a_password_in_a_malformed_redis_url_is_not_shown():
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({"COPYDESK_REDIS_URL": "redis://:hunter2@127.0.0.1:6379/zero"})
    assert "hunter2" not in str(raised.value) and ":***@127.0.0.1" in str(raised.value)


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "rediss://:secret@redis.example.com:6380/3",
        "unix:///run/redis/redis.sock?db=2",
        "redis://redis",
    ],
)
def test_well_formed_redis_urls_are_kept(url):
    assert Settings.from_env({"COPYDESK_REDIS_URL": url}).redis_url == url
