"""Whether a project takes work: who switched it off (its code host, an admin) and the rules between them.

Two facts make the state: the code host's reason (the App lost access or is suspended), which only the code
host lifts, and an admin's switch. The project takes work when neither holds.

| event (who)                | host reason before | result                                                       |
|----------------------------|--------------------|--------------------------------------------------------------|
| disable (admin)            | none               | admin switch on                                              |
| disable (admin)            | removed, suspended | unchanged: the host's reason stays, and unsuspending revives |
| enable (admin)             | none               | admin switch off                                             |
| enable (admin)             | removed, suspended | refused (HostDisabledProject)                                |
| suspend (host)             | none, suspended    | suspended; an admin switch stays                             |
| suspend (host)             | removed            | unchanged: unsuspending must not revive a removed repository |
| unsuspend (host)           | suspended          | host reason cleared; an admin switch stays                   |
| unsuspend (host)           | none, removed      | unchanged                                                    |
| remove (host)              | any                | removed; an admin switch stays                               |
| ensure (host gives access) | any                | host reason cleared; an admin switch stays                   |

tests/test_project_state.py holds the same table, state by state.
"""

from dataclasses import dataclass, replace
from enum import StrEnum

from service.errors import HostDisabledProject, ProjectDisabled


class DisabledReason(StrEnum):
    """Why a project takes no work; the value is the `error.code` its runs fail with."""

    INSTALLATION_REMOVED = "installation_removed"
    INSTALLATION_SUSPENDED = "installation_suspended"
    ADMIN = ProjectDisabled.code

    @property
    def by_host(self) -> bool:
        """Whether only the code host can lift it."""
        return self is not DisabledReason.ADMIN

    @property
    def label(self) -> str:
        """Short words for a page: who switched the project off."""
        return _LABELS[self]

    @property
    def detail(self) -> str:
        """Words for a failed run's error."""
        return _DETAILS[self]


_LABELS = {
    DisabledReason.INSTALLATION_REMOVED: "the GitHub App was uninstalled or lost this repository",
    DisabledReason.INSTALLATION_SUSPENDED: "the GitHub App installation is suspended",
    DisabledReason.ADMIN: "an admin switched it off",
}
_DETAILS = {
    DisabledReason.INSTALLATION_REMOVED: "the code host no longer gives Copydesk access to this repository (the app "
    "was uninstalled or the repository was removed from its installation)",
    DisabledReason.INSTALLATION_SUSPENDED: "the app's installation on this repository is suspended; an owner can "
    "unsuspend it",
    DisabledReason.ADMIN: "the project was disabled by the operator; its repository is no longer reachable",
}


def reason_of(code: str | None) -> DisabledReason:
    """The reason for a stored `disabled_reason`; none (records from before reasons were kept) means an admin."""
    try:
        return DisabledReason(code) if code else DisabledReason.ADMIN
    except ValueError:
        return DisabledReason.ADMIN


@dataclass(frozen=True)
class ProjectState:
    host: DisabledReason | None = None  # the code host's reason, which only the code host lifts
    admin: bool = False  # an admin (or the operator) switched the project off

    @property
    def enabled(self) -> bool:
        return self.host is None and not self.admin

    @property
    def reason(self) -> DisabledReason | None:
        """The reason a run of the project fails with: the code host's first."""
        return self.host or (DisabledReason.ADMIN if self.admin else None)

    def disabled(self, reason: DisabledReason) -> "ProjectState":
        """After `reason` switched the project off."""
        if reason is DisabledReason.ADMIN:
            return self if self.host else replace(self, admin=True)
        if reason is DisabledReason.INSTALLATION_SUSPENDED and self.host is DisabledReason.INSTALLATION_REMOVED:
            return self
        return replace(self, host=reason)

    def enabled_by_admin(self, project_id: str) -> "ProjectState":
        """After an admin switched the project on; HostDisabledProject while the code host has it off."""
        if self.host is not None:
            raise HostDisabledProject(
                f"Project {project_id} was disabled by its code host ({self.host.label}), not "
                "by an admin; it comes back when its installation is restored"
            )
        return replace(self, admin=False)

    def unsuspended(self) -> "ProjectState":
        """After the code host lifted a suspension."""
        return replace(self, host=None) if self.host is DisabledReason.INSTALLATION_SUSPENDED else self

    def host_gives_access(self) -> "ProjectState":
        """After the code host showed it reaches the repository (an installation event listed it)."""
        return replace(self, host=None)
