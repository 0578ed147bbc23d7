"""RQ entry points: importable functions that take plain ids and build what they need."""

from bot import context
from service.settings import Settings


def process_job(job_id: str) -> None:
    """Run the next waiting message of job `job_id`."""
    # Settings are read here, in the worker's own process, not at import time.
    ctx = context.build(Settings.from_env())
    ctx.runner().process(job_id)
