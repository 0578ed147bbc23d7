"""A GitHub emulator for tests: GitHub's REST operations Copydesk calls, git smart HTTP, signed webhooks."""

from tests.github_emulator.app import TestApp
from tests.github_emulator.emulator import GitHubEmulator, MergeConflict

__all__ = ["GitHubEmulator", "MergeConflict", "TestApp"]
