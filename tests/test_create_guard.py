"""A create checks its key in the create script against the key and project records this process read before
(service.apikeys.ApiKeys.guarded): whatever changes in between is answered as if nothing had been read, and the
key's use is counted once per create on every path."""

import pytest

from service import intake
from service.apikeys import key_id_of
from service.models import KeyAccess
from service.projectstate import DisabledReason


def _jobs(stack) -> int:
    return sum(stack.ctx.services.jobs.counts(stack.project_id).values())


def _uses(stack) -> int:
    return stack.ctx.services.keys.find(key_id_of(stack.key)).use_count


@pytest.fixture
def seen(stack):
    """The stack after one create, so the process has read its key and project."""
    assert stack.create("first").status_code == 201
    return stack


def test_a_key_revoked_after_it_was_read_is_refused_at_once_and_nothing_is_made(seen):
    before = _jobs(seen)
    key = seen.ctx.services.keys.authenticate(f"Bearer {seen.key}")
    seen.ctx.services.keys.revoke(key.id)
    response = seen.create("after the revocation")
    assert response.status_code == 401 and "revoked" in response.json()["detail"]
    assert _jobs(seen) == before


def test_a_wrong_secret_with_a_key_id_read_before_is_refused(seen):
    before = _jobs(seen)
    wrong = seen.key[:-4] + ("AAAA" if not seen.key.endswith("AAAA") else "BBBB")
    url = f"/v2/agent/{seen.project_id}/job"
    response = seen.api.post(url, json={"prompt": "x"}, headers={"Authorization": f"Bearer {wrong}"})
    assert response.status_code == 401 and _jobs(seen) == before


def test_a_project_disabled_and_enabled_again_after_it_was_read_is_answered_as_it_is_now(seen):
    projects = seen.ctx.services.projects
    projects.disable(seen.project_id, DisabledReason.ADMIN)
    before = _jobs(seen)
    for _ in range(2):  # the second time from the records as read the first time
        refused = seen.create("while disabled")
        assert refused.status_code == 409 and _jobs(seen) == before
    projects.enable(seen.project_id)
    assert seen.create("enabled again").status_code == 201
    assert _jobs(seen) == before + 1


def test_a_key_narrowed_to_another_project_after_it_was_read_no_longer_sees_this_one(seen):
    store = seen.ctx.services.redis
    key = seen.ctx.services.keys.authenticate(f"Bearer {seen.key}")
    store.set(
        f"cd:apikey:{key.id}", store.get(f"cd:apikey:{key.id}").replace(b'"projects":[]', b'"projects":["prj_other"]')
    )
    before = _jobs(seen)
    for _ in range(2):
        refused = seen.create("narrowed")
        assert refused.status_code == 400 and refused.json()["field"] == "projectId" and _jobs(seen) == before


def test_a_read_only_key_never_creates(seen):
    _, read_only = seen.ctx.services.keys.create(account="local", name="reader", access=KeyAccess.READ_ONLY)
    url, before = f"/v2/agent/{seen.project_id}/job", _jobs(seen)
    for _ in range(2):
        refused = seen.api.post(url, json={"prompt": "x"}, headers={"Authorization": f"Bearer {read_only}"})
        assert refused.status_code == 403 and _jobs(seen) == before


def test_a_revoked_key_with_a_bad_body_gets_the_key_refusal_first(seen):
    key = seen.ctx.services.keys.authenticate(f"Bearer {seen.key}")
    url = f"/v2/agent/{seen.project_id}/job"
    assert seen.api.post(url, data=b"{not json", headers={"Content-Type": "application/json"}).status_code == 400
    seen.ctx.services.keys.revoke(key.id)
    response = seen.api.post(url, data=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 401 and "revoked" in response.json()["detail"]


def test_each_create_counts_one_use_of_its_key_on_every_path(seen):
    url = f"/v2/agent/{seen.project_id}/job"
    uses = _uses(seen)
    for send in (
        lambda: seen.create("read before: the create script checks the key"),
        lambda: seen.api.post(url, data=b"[]", headers={"Content-Type": "application/json"}),  # a bad body
        lambda: seen.create("", model="no-such-model"),  # refused after the body was read
    ):
        send()
        assert _uses(seen) == uses + 1
        uses += 1
    seen.ctx.services.projects.disable(seen.project_id, DisabledReason.ADMIN)
    seen.ctx.services.projects.enable(seen.project_id)  # the project's record changed: read again
    assert seen.create("after a change").status_code == 201
    assert _uses(seen) == uses + 1


def test_a_revocation_landing_between_the_checks_and_the_write_stops_the_create(seen, monkeypatch):
    # The key is checked in the script that writes the job: a create whose checks passed before the revocation
    # cannot write after it, as one whose key was checked a round trip earlier could.
    admit = intake.create

    def revoked_meanwhile(services, project, new):
        seen.ctx.services.keys.revoke(key_id_of(seen.key))
        return admit(services, project, new)

    monkeypatch.setattr(intake, "create", revoked_meanwhile)
    before = _jobs(seen)
    response = seen.create("raced")
    assert response.status_code == 401 and "revoked" in response.json()["detail"] and _jobs(seen) == before
