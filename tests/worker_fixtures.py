"""A pytest plugin: `workers`, real `copydesk worker` processes stopped at teardown."""

import pytest

from tests.worker_processes import WorkerProcess


@pytest.fixture
def workers(tmp_path):
    started: list[WorkerProcess] = []

    def start(stack, **env) -> WorkerProcess:
        worker = WorkerProcess({**stack.env(), **env}, tmp_path / f"worker{len(started)}.log")
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.alive():
            worker.kill()
