"""Pytest fixtures for the GitHub emulator: `github_app` (the test App's keys and secrets) and `github`."""

import pytest

from tests.github_emulator import GitHubEmulator, TestApp


@pytest.fixture(scope="session")
def github_app() -> TestApp:
    """The test GitHub App; its RSA key is generated once per session (key generation is the slow part)."""
    return TestApp.generate()


@pytest.fixture
def github(tmp_path, github_app):
    """A running GitHub emulator with no repositories or installations yet."""
    with GitHubEmulator(tmp_path / "github", github_app) as emulator:
        yield emulator
