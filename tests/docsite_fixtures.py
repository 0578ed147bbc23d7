"""Fixtures for the docs-site tests: the small real sites of each framework, opened as workspaces."""

import pytest

from tests.docsite_layouts import Sites


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    return Sites(tmp_path_factory.mktemp("sites"))


@pytest.fixture
def open_site(sites):
    opened = []

    def open_(name: str):
        workspace = sites.repository(name).open()
        opened.append(workspace)
        return workspace

    yield open_
    for workspace in opened:
        workspace.close()
