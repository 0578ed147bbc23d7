"""The Copydesk GitHub App: the composition root that embeds the agent-job service."""
