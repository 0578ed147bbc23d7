"""The Redis store: the record of truth for projects, jobs, their conversations and API keys."""
