"""The agent-job service: jobs, their API, the queue, the workspace and the agent; no GitHub."""
