"""RQ entry points: importable functions that take plain ids and build what they need."""

from bot import context
from bot.github import events
from service.settings import Settings


def process_job(job_id: str) -> None:
    """Run the next waiting message of job `job_id`."""
    # Settings are read here, in the worker's own process, not at import time.
    ctx = context.build(Settings.from_env())
    ctx.runner().process(job_id)


def handle_github_event(event_name: str, delivery_id: str, payload: dict) -> None:
    """Run the handlers of one GitHub webhook delivery."""
    events.handle(context.build(Settings.from_env()).github_bot(), event_name, delivery_id, payload)
