"""The names the web processes, the workers and RQ share: queues, task functions, and the keys that give one worker
at a time its turn at a chore. Each queue is named after the settings' `queue_name` (COPYDESK_QUEUE)."""

# By dotted path, so that the service and the web process enqueue them without importing the worker's code.
RUN_TASK = "bot.tasks.process_job"
GITHUB_EVENT_TASK = "bot.tasks.handle_github_event"

# One worker's turn at a time (SET NX with an expiry): the recovery sweep, and the upkeep of the local repositories.
SWEEP_TURN = "cd:sweep:turn"
LOCAL_UPKEEP_TURN = "cd:local-upkeep:turn"


def runs_queue(queue_name: str) -> str:
    """The RQ queue of agent runs (RUN_TASK)."""
    return queue_name


def github_events_queue(queue_name: str) -> str:
    """The RQ queue of GitHub's webhook deliveries (GITHUB_EVENT_TASK). Runs take many minutes each; on their own
    queue, which the worker serves first, events do not wait."""
    return f"{queue_name}-events"


def legacy_webhooks_queue(queue_name: str) -> str:
    """The RQ queue where versions before the delivery lanes queued outbound webhook attempts; workers still empty it
    onto the lanes."""
    return f"{queue_name}-webhooks"


def worker_queues(queue_name: str) -> list[str]:
    """The queues a worker serves, first first: GitHub events (short), runs (long), and last the attempts older
    versions queued on RQ (each only moved onto the delivery lanes, which make webhook attempts beside the runs)."""
    return [github_events_queue(queue_name), runs_queue(queue_name), legacy_webhooks_queue(queue_name)]
