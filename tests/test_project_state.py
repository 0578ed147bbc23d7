"""The project state table: an admin and the code host switching a project off and on, in every order."""

import json
from itertools import permutations

import pytest

from service.errors import HostDisabledProject
from service.ids import UlidGenerator
from service.projectstate import DisabledReason
from service.store.projects import ProjectStore

ADMIN, REMOVED, SUSPENDED = (
    DisabledReason.ADMIN,
    DisabledReason.INSTALLATION_REMOVED,
    DisabledReason.INSTALLATION_SUSPENDED,
)
REPO = dict(
    account="acme",
    host="github",
    repository="acme/docs",
    web_url="https://github.com/acme/docs",
    ref="main",
    host_data={"installation_id": 7},
)

# state name -> what the project record says: (enabled, disabled_reason, admin_disabled)
STATES = {
    "on": (True, None, False),
    "admin": (False, "project_disabled", True),
    "suspended": (False, "installation_suspended", False),
    "suspended+admin": (False, "installation_suspended", True),
    "removed": (False, "installation_removed", False),
    "removed+admin": (False, "installation_removed", True),
}
# How each state is reached from a new project.
REACH = {
    "on": [],
    "admin": ["admin off"],
    "suspended": ["suspend"],
    "suspended+admin": ["admin off", "suspend"],
    "removed": ["remove"],
    "removed+admin": ["admin off", "remove"],
}
REFUSED = "refused"
# event -> {state before: state after}; the whole rule, written out.
TABLE = {
    "admin off": {
        "on": "admin",
        "admin": "admin",
        "suspended": "suspended",
        "suspended+admin": "suspended+admin",
        "removed": "removed",
        "removed+admin": "removed+admin",
    },
    "admin on": {
        "on": "on",
        "admin": "on",
        "suspended": REFUSED,
        "suspended+admin": REFUSED,
        "removed": REFUSED,
        "removed+admin": REFUSED,
    },
    "suspend": {
        "on": "suspended",
        "admin": "suspended+admin",
        "suspended": "suspended",
        "suspended+admin": "suspended+admin",
        "removed": "removed",
        "removed+admin": "removed+admin",
    },
    "unsuspend": {
        "on": "on",
        "admin": "admin",
        "suspended": "on",
        "suspended+admin": "admin",
        "removed": "removed",
        "removed+admin": "removed+admin",
    },
    "remove": {
        "on": "removed",
        "admin": "removed+admin",
        "suspended": "removed",
        "suspended+admin": "removed+admin",
        "removed": "removed",
        "removed+admin": "removed+admin",
    },
    "ensure": {
        "on": "on",
        "admin": "admin",
        "suspended": "on",
        "suspended+admin": "admin",
        "removed": "on",
        "removed+admin": "admin",
    },
}


def apply(projects: ProjectStore, project_id: str, event: str) -> None:
    {
        "admin off": lambda: projects.disable(project_id, ADMIN),
        "admin on": lambda: projects.enable(project_id),
        "suspend": lambda: projects.disable(project_id, SUSPENDED),
        "unsuspend": lambda: projects.enable(project_id, by_host=True),
        "remove": lambda: projects.disable(project_id, REMOVED),
        "ensure": lambda: projects.ensure(**REPO),
    }[event]()


def stored(projects: ProjectStore, project_id: str) -> tuple:
    project = projects.get(project_id)
    return project.enabled, project.disabled_reason, project.admin_disabled


@pytest.fixture
def projects(redis_client):
    return ProjectStore(redis_client, UlidGenerator())


@pytest.mark.parametrize("event", TABLE)
@pytest.mark.parametrize("before", STATES)
def test_each_event_from_each_state(projects, before, event):
    project, _ = projects.ensure(**REPO)
    for step in REACH[before]:
        apply(projects, project.id, step)
    assert stored(projects, project.id) == STATES[before]
    after = TABLE[event][before]
    if after == REFUSED:
        with pytest.raises(HostDisabledProject, match="disabled by its code host"):
            apply(projects, project.id, event)
        after = before  # nothing changed
    else:
        apply(projects, project.id, event)
    assert stored(projects, project.id) == STATES[after]


def test_every_order_of_admin_and_host_switches_follows_the_table(redis_client):
    # Each permutation on its own project (its own repository, so `ensure` finds that one).
    events = ["admin off", "admin on", "suspend", "unsuspend", "remove", "ensure"]
    for number, order in enumerate(permutations(events)):
        repo = {**REPO, "repository": f"acme/docs{number}"}
        projects = ProjectStore(redis_client, UlidGenerator())
        project, _ = projects.ensure(**repo)
        state = "on"
        for event in order:
            expected = TABLE[event][state]
            try:
                if event == "ensure":
                    projects.ensure(**repo)
                else:
                    apply(projects, project.id, event)
            except HostDisabledProject:
                assert expected == REFUSED, (order, event)
            else:
                state = expected
            assert stored(projects, project.id) == STATES[state], (order, event)


def test_records_from_before_the_admin_switch_was_kept_read_as_admin_disabled(projects, redis_client):
    project, _ = projects.ensure(**REPO)
    for old_reason in (None, "project_disabled"):
        record = projects.get(project.id).to_dict()
        record.update(enabled=False, disabled_reason=old_reason)
        del record["admin_disabled"]  # written before the field existed
        redis_client.set(f"cd:project:{project.id}", json.dumps(record))
        projects.ensure(**REPO)  # an installation event does not re-enable it
        assert stored(projects, project.id) == STATES["admin"]
        projects.enable(project.id)
        assert stored(projects, project.id) == STATES["on"]


def test_an_admin_disable_racing_an_installation_event_is_never_lost(redis_url):
    import threading

    import redis

    def store() -> ProjectStore:
        return ProjectStore(redis.Redis.from_url(redis_url), UlidGenerator())

    def installation_events(barrier: threading.Barrier, repo: dict) -> None:
        mine = store()
        barrier.wait()
        for _ in range(5):
            mine.ensure(**repo)

    def admin(barrier: threading.Barrier, project_id: str) -> None:
        barrier.wait()
        store().disable(project_id, ADMIN)

    for number in range(40):
        repo = {**REPO, "repository": f"acme/race{number}"}
        project, _ = store().ensure(**repo)
        barrier = threading.Barrier(3)
        threads = [
            threading.Thread(target=installation_events, args=(barrier, repo)),
            threading.Thread(target=installation_events, args=(barrier, repo)),
            threading.Thread(target=admin, args=(barrier, project.id)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
        assert not any(thread.is_alive() for thread in threads)
        assert stored(store(), project.id) == STATES["admin"], number
