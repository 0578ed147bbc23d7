"""The automations a project can start from: a name, a prompt, a trigger and options that work as they are.

A template is the body of a create call with blanks a person fills in (the source repository of a code-change
trigger); the API and the dashboard take `{"template": id}` plus any field to override.
"""

from dataclasses import dataclass, field
from enum import Enum


class TemplateId(str, Enum):
    UPDATE_FROM_CODE = "update-docs-from-code-changes"
    FIX_BROKEN_LINKS = "fix-broken-links"
    DRAFT_CHANGELOG = "draft-changelog-entry"


@dataclass(frozen=True)
class Template:
    id: TemplateId
    title: str
    description: str
    body: dict = field(default_factory=dict)  # an API create body; `needs` names the fields still to give
    needs: tuple[str, ...] = ()

    def to_api(self) -> dict:
        return {
            "id": self.id.value,
            "title": self.title,
            "description": self.description,
            "body": self.body,
            "needs": list(self.needs),
        }


UPDATE_FROM_CODE = Template(
    TemplateId.UPDATE_FROM_CODE,
    "Update docs from code changes",
    "Each merged pull request (or each new commit on the default branch of a local repository) in a source "
    "repository: the agent reads what changed and updates the pages it affects, or says no change is needed.",
    {
        "name": "Update docs from code changes",
        "prompt": "A change was merged in the source repository (below). Find what it changes for the people who read "
        "these docs: new or renamed options, changed defaults, new behaviour, removed features. Update the "
        "pages that describe it, in the style of the pages around them. If the docs already match, or the "
        "change does not affect users (tests, refactoring, CI), change nothing and finish saying no change "
        "is needed and why.",
        "trigger": {"type": "code_change", "mode": "per_change"},
    },
    needs=("trigger.repository",),
)

FIX_BROKEN_LINKS = Template(
    TemplateId.FIX_BROKEN_LINKS,
    "Fix broken links",
    "Every Monday at 09:00 UTC the docs check reads the whole site, without the model. Only when it finds broken "
    "links, missing pages or anchors does the agent run to fix them, so a clean site costs no tokens.",
    {
        "name": "Fix broken links",
        "prompt": "The docs check found the problems listed below in this documentation site. Fix each one: point the "
        "link at the page or heading that now holds what it meant (search the site for it), or remove the "
        "link and keep its text when nothing does; fix or remove a navigation entry that names no page. "
        "Where a problem looks misjudged (the link works once the site is built), leave it and say so in "
        "the summary. Change nothing else.",
        "trigger": {"type": "schedule", "cron": "0 9 * * 1", "timeZone": "UTC"},
        "options": {"docsCheckFirst": True},
    },
)

DRAFT_CHANGELOG = Template(
    TemplateId.DRAFT_CHANGELOG,
    "Draft a changelog entry",
    "On a schedule (Fridays at 16:00 UTC), everything merged in a source repository since the last run becomes "
    "one draft entry in the docs' changelog or release notes (or fragments, where the repository collects them).",
    {
        "name": "Draft a changelog entry",
        "prompt": "Draft the changelog entry for the changes merged in the source repository since the last run "
        "(listed below). First find where this repository keeps its changelog or release notes: search "
        'for a changelog, CHANGES, HISTORY, release notes or "what\'s new" page, and for a folder of '
        "changelog fragments (changelog.d, newsfragments, .changeset, changelog_unreleased). Read the "
        "newest entries and follow their format exactly: headings, grouping (added, changed, fixed...), "
        "tense, links to pull requests, credits. If the repository collects fragments, add one fragment "
        "per change as the existing ones and their template do, and leave the changelog itself alone. "
        "Otherwise add the entries under the unreleased section at the top; if there is none, start one "
        'headed "Unreleased" in the file\'s heading style. Never invent a version number or a release '
        "date. Describe each change for users, not developers, in one or two sentences; leave out tests, "
        "CI, refactoring and dependency updates unless the existing entries list such changes. If the "
        "changelog already has these changes, if none of them matters to users, or if the repository has "
        "no changelog, change nothing and finish saying no change is needed and why.",
        "trigger": {"type": "code_change", "mode": "batched", "cron": "0 16 * * 5", "timeZone": "UTC"},
    },
    needs=("trigger.repository",),
)

TEMPLATES: dict[str, Template] = {t.id.value: t for t in (UPDATE_FROM_CODE, FIX_BROKEN_LINKS, DRAFT_CHANGELOG)}
