"""Code-change triggers: the automations watching a source repository, and what a change there starts.

(A minimal version for the GitHub wiring; the autotick helper's version with a (host, repository) index replaces
it, keeping these two functions' signatures.)
"""

import logging

from service.automations.events import TriggerEvent
from service.automations.model import Automation, AutomationRun, ChangeMode, TriggerType
from service.automations.runs import change_ref, fire
from service.services import Services

log = logging.getLogger(__name__)


def watching(services: Services, host: str, repository: str) -> list[Automation]:
    """The code-change automations of `host`'s projects that watch `repository`; on GitHub only those of the
    repository's own account (the installation's), so no other account's prompt ever gets its changes."""
    wanted = repository.lower() if host == "github" else repository
    owner = repository.partition("/")[0].lower()
    found = []
    for project in services.projects.all():
        if project.host != host or (host == "github" and project.account.lower() != owner):
            continue
        for automation in services.automations.of_project(project.id):
            trigger = automation.trigger
            if trigger.type is not TriggerType.CODE_CHANGE or trigger.repository is None:
                continue
            if (trigger.repository.lower() if host == "github" else trigger.repository) == wanted:
                found.append(automation)
    return found


def on_source_change(services: Services, host: str, repository: str, event: TriggerEvent) -> list[AutomationRun]:
    """Hand a change in `repository` to the automations watching it: a per-change one runs now (`fire`), a
    batched one keeps the change for its next scheduled run. Returns the runs started or skipped."""
    runs = []
    for automation in watching(services, host, repository):
        if automation.trigger.mode is ChangeMode.BATCHED:
            waiting = services.automations.add_to_batch(
                automation.id, [{**change_ref(c), "merge_commit": c.merge_commit} for c in event.changes])
            log.info("automation %s: %s kept for its next batched run (%s waiting)", automation.id, event.key,
                     waiting)
            continue
        runs.append(fire(services, automation, event))
    return runs
