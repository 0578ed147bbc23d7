"""The schema version of Copydesk's records in Redis: one key says which record shapes the data has.

One version for the whole database, not one per record: processes refuse to start on data of another version, and
`copydesk migrate` upgrades every record before it moves the version on, so no reader ever sees a mix of shapes.
"""

import enum
from dataclasses import dataclass

import redis

from service.store.replies import text

SCHEMA_KEY = "cd:schema"
CURRENT_VERSION = 2
# Data written before the version was recorded: the record shapes of Copydesk up to 2026-11-22 (commit cdbac0a).
UNVERSIONED = 1
# Every lasting record hangs off a project or an API key, so a Redis without either holds no Copydesk data.
ROOT_KEYS = ("cd:projects", "cd:apikeys")

# Atomically: the stored version; else, on a Redis without Copydesk data, record the current one; else nothing.
_STAMP = """
local found = redis.call('GET', KEYS[1])
if found then return found end
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return false end
end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
"""

MIGRATE_FIX = (
    "stop every web and worker process of the older Copydesk, back Redis up (see the README), then run "
    "`copydesk migrate`"
)
NEWER_FIX = "run the Copydesk release that wrote this data, or a newer one: data is never migrated downwards"


class SchemaState(enum.Enum):
    CURRENT = "current"
    EMPTY = "empty"  # no Copydesk data yet: the first start records the current version
    OUTDATED = "outdated"  # `copydesk migrate` is due
    NEWER = "newer"  # written by a newer Copydesk


@dataclass(frozen=True)
class SchemaStatus:
    version: int | None  # None: no Copydesk data yet

    @property
    def state(self) -> SchemaState:
        if self.version is None:
            return SchemaState.EMPTY
        if self.version < CURRENT_VERSION:
            return SchemaState.OUTDATED
        return SchemaState.NEWER if self.version > CURRENT_VERSION else SchemaState.CURRENT

    def describe(self) -> str:
        """One sentence on what was found, for the doctor and the refusal to start."""
        return {
            SchemaState.CURRENT: f"Redis holds Copydesk data of schema version {self.version}, this Copydesk's",
            SchemaState.EMPTY: f"Redis holds no Copydesk data yet; the first start records schema version "
            f"{CURRENT_VERSION}",
            SchemaState.OUTDATED: f"Redis holds Copydesk data of schema version {self.version}; this Copydesk "
            f"reads version {CURRENT_VERSION}: a migration is due",
            SchemaState.NEWER: f"Redis holds Copydesk data of schema version {self.version}, newer than this "
            f"Copydesk's {CURRENT_VERSION}",
        }[self.state]

    @property
    def fix(self) -> str:
        return {SchemaState.OUTDATED: MIGRATE_FIX, SchemaState.NEWER: NEWER_FIX}.get(self.state, "")


class SchemaMismatch(Exception):
    """The data in Redis has another schema version than this Copydesk reads; the message says the fix."""

    def __init__(self, status: SchemaStatus) -> None:
        super().__init__(f"{status.describe()}; fix: {status.fix}")
        self.status = status


def status(client: redis.Redis) -> SchemaStatus:
    """The schema version of the data in Redis, without writing anything."""
    found = client.get(SCHEMA_KEY)
    if found is not None:
        return SchemaStatus(int(text(found)))
    return SchemaStatus(UNVERSIONED if client.exists(*ROOT_KEYS) else None)


def stamp_new(client: redis.Redis) -> SchemaStatus:
    """The data's schema version, after recording the current one on a Redis that holds no Copydesk data yet.

    Called before a project or key is first written, and when a process starts, so that data written by this
    Copydesk always carries its version while data written before versions existed never gets one by accident.
    """
    found = client.eval(_STAMP, 1 + len(ROOT_KEYS), SCHEMA_KEY, *ROOT_KEYS, CURRENT_VERSION)
    return SchemaStatus(UNVERSIONED if found is None else int(text(found)))


def require_current(client: redis.Redis) -> None:
    """Return when the data has this Copydesk's schema version (stamping an empty Redis); else SchemaMismatch."""
    found = stamp_new(client)
    if found.state is not SchemaState.CURRENT:
        raise SchemaMismatch(found)
