"""Pytest fixtures for the GitHub emulator: `github_app` (the test App's keys and secrets) and `github`."""


import pytest
from cryptography.hazmat.primitives import serialization

from tests.fsck_check import assert_copydesk_commits_pass_fsck
from tests.github_emulator import GitHubEmulator, TestApp


@pytest.fixture(scope="session")
def github_app() -> TestApp:
    """The test GitHub App; its RSA key is generated once per session (key generation is the slow part)."""
    return TestApp.generate()


@pytest.fixture
def github(tmp_path, github_app):
    """A running GitHub emulator with no repositories or installations yet; on teardown every commit Copydesk
    pushed to its repositories must pass `git fsck --strict`."""
    with GitHubEmulator(tmp_path / "github", github_app) as emulator:
        yield emulator
    for repo in sorted((tmp_path / "github").glob("**/*.git")):
        assert_copydesk_commits_pass_fsck(repo)


def pem_of(key) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()
