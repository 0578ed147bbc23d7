"""The rows of a project's jobs list, read in a fixed number of Redis round trips whatever the page's length."""

from dataclasses import dataclass

from bot.github.pulls import pull_states as github_pull_states
from service.codehost.local import HOST as LOCAL_HOST
from service.codehost.local import LocalCodeHost
from service.models import Job, Project
from service.store.jobs import JobStore, add_usage

EXCERPT = 120  # characters of the first prompt a row shows


@dataclass
class JobRow:
    job: Job
    excerpt: str
    pr_state: str | None  # open, merged or closed; None without a pull request
    tokens: int


def job_rows(jobs: JobStore, redis_client, local: LocalCodeHost, project: Project, found: list[Job]) -> list[JobRow]:
    """A row per job of `found`: its first prompt cut to EXCERPT, its pull request's state and its tokens."""
    prompts = jobs.first_prompts([job.id for job in found])
    states = _pull_states(redis_client, local, project, found)
    return [
        JobRow(job, excerpt(prompts.get(job.id, "")), states.get(job.id), add_usage({}, job.usage)["billableTokens"])
        for job in found
    ]


def excerpt(prompt: str) -> str:
    return prompt if len(prompt) <= EXCERPT else prompt[: EXCERPT - 1] + "…"


def _pull_states(redis_client, local: LocalCodeHost, project: Project, found: list[Job]) -> dict[str, str]:
    if project.host != LOCAL_HOST:
        return github_pull_states(redis_client, found)
    numbered = {job.id: job.pr_number for job in found if job.pr_number is not None}
    by_number = local.pull_states(project.id, list(numbered.values()))
    return {job_id: by_number[number] for job_id, number in numbered.items() if number in by_number}
