"""The order test files are handed to the test processes: files marked `long_running` first.

`make test` gives whole files to two processes (`--dist loadfile`) in collection order
(`--no-loadscope-reorder`). xdist's own order puts the files with the most tests first, which left the few long
fault-injection files (two tests of 35 s each) for the end, where one process ran them while the other sat idle.
Started first, they overlap with the many short files instead.
"""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "long_running: a file whose tests take tens of seconds in all; scheduled before the others"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A stable sort keeps each file's tests together and in their written order.
    items.sort(key=lambda item: item.get_closest_marker("long_running") is None)
